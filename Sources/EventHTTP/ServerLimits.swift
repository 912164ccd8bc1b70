import Synchronization

/// The limits one ``HTTPServer`` shares across its workers: how many connections it holds and
/// how many bytes of request bodies it buffers at once. Each is a counter that is reserved
/// before use and released after, from any worker thread.
package final class ServerLimits: Sendable {
    /// The most connections open at once.
    package let maxConnections: Int
    /// The most bytes of request bodies buffered at once (declared lengths; a chunked body counts
    /// as the largest body allowed).
    package let maxBufferedBodyBytes: Int
    private let connections = Atomic<Int>(0)
    private let bodyBytes = Atomic<Int>(0)

    package init(maxConnections: Int, maxBufferedBodyBytes: Int) {
        self.maxConnections = maxConnections
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
    }

    /// Counts one more connection unless `maxConnections` are open; returns whether it did.
    package func admitConnection() -> Bool {
        reserve(1, in: connections, limit: maxConnections)
    }

    /// A connection counted by ``admitConnection()`` closed.
    package func releaseConnection() {
        connections.subtract(1, ordering: .relaxed)
    }

    /// Reserves `bytes` for a body unless that would pass `maxBufferedBodyBytes`; returns
    /// whether it did. A body larger than the whole limit is never reserved.
    package func reserveBody(_ bytes: Int) -> Bool {
        reserve(bytes, in: bodyBytes, limit: maxBufferedBodyBytes)
    }

    /// Returns bytes reserved by ``reserveBody(_:)``.
    package func releaseBody(_ bytes: Int) {
        guard bytes > 0 else { return }
        bodyBytes.subtract(bytes, ordering: .relaxed)
    }

    /// Connections open now.
    package var openConnections: Int { connections.load(ordering: .relaxed) }
    /// Body bytes reserved now.
    package var bufferedBodyBytes: Int { bodyBytes.load(ordering: .relaxed) }

    private func reserve(_ amount: Int, in counter: borrowing Atomic<Int>, limit: Int) -> Bool {
        var current = counter.load(ordering: .relaxed)
        while true {
            guard amount <= limit, current <= limit - amount else { return false }
            let (exchanged, original) = counter.compareExchange(
                expected: current, desired: current + amount, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }
}
