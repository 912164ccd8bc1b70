#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call's failure: its `errno`, read right after the call (before anything else can
/// change it).
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `errno` the call failed with.
    public let code: Int32

    /// Wraps an `errno` value.
    public init(code: Int32) {
        self.code = code
    }

    /// The C library's message for ``code``.
    public var description: String { String(cString: strerror(code)) }
}

/// Calls `body`, a system call that returns a negative value on failure (-1 and `errno`), again
/// for as long as it fails with `EINTR`: a signal that arrived during the call, not a failure.
///
/// - Returns: the call's non-negative result, or its `errno` when it failed for another reason.
public func retryingInterrupts<Value: SignedInteger>(_ body: () -> Value) -> Result<Value, SystemCallError> {
    while true {
        let value = body()
        if value >= 0 { return .success(value) }
        let code = errno
        if code != EINTR { return .failure(SystemCallError(code: code)) }
    }
}
