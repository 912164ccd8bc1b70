import Synchronization

/// An `Int64` that only ever increases, behind a `Mutex`.
package final class LockedVersion: Sendable {
    private let current: Mutex<Int64>

    package init(_ value: Int64) {
        current = Mutex(value)
    }

    package var value: Int64 {
        current.withLock { $0 }
    }

    /// Raises the value to `candidate` if higher; returns the value after the call.
    @discardableResult
    package func raise(to candidate: Int64) -> Int64 {
        current.withLock { value in
            value = max(value, candidate)
            return value
        }
    }
}
