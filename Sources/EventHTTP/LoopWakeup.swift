import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Wakes a worker's loop from another thread: a non-blocking pipe whose read end the loop
/// watches with a persistent event.
///
/// It replaces `event_active` from other threads, which needs libevent's pthread locking: with
/// that on, every event_add, event_del and bufferevent call on the loop takes and releases the
/// base's mutex, about ten times a request, for a handful of cross-thread wake-ups (a deferred
/// answer, a streamed part, a stop). Without it no libevent call is made off the loop's thread.
///
/// ``wake()`` may be called from any thread until ``closeEnds()``; callers make sure of that by
/// waking only under a lock that is also held when they let go of the wake-up.
final class LoopWakeup: Sendable {
    /// The end the loop watches.
    let readEnd: Int32
    private let writeEnd: Int32

    init() throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        try systemCall("pipe") { ends.withUnsafeMutableBufferPointer { pipe($0.baseAddress!) } }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, fcntl(end, F_GETFD) | FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Makes the read end readable (any thread). A full pipe already wakes the loop.
    func wake() {
        var byte: UInt8 = 1
        _ = retryingInterrupts { write(writeEnd, &byte, 1) }
    }

    /// Empties the pipe (the loop's thread, before it looks at what woke it).
    func drain() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while case .success(let count) = retryingInterrupts({ read(readEnd, &bytes, MemoryLayout.size(ofValue: bytes)) }), count > 0 {}
    }

    /// Closes both ends (once nothing can call ``wake()`` any more).
    func closeEnds() {
        close(readEnd)
        close(writeEnd)
    }
}
