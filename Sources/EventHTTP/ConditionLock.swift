#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable, for threads that sleep until there is work.
///
/// Both live in memory this object allocates and never moves: POSIX forbids moving an initialised
/// mutex or condition, and Swift promises no stable address for a stored property passed with
/// `&` (it may be a temporary copy's).
final class ConditionLock: @unchecked Sendable {
    // @unchecked: the pointers are written once, in init; the mutex is what makes access safe.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_mutex_init(mutex, nil) == 0 && pthread_cond_init(condition, nil) == 0, "pthread init failed")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deinitialize(count: 1)
        condition.deallocate()
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the mutex.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Releases the mutex until signalled, then holds it again (the caller holds it).
    func wait() { pthread_cond_wait(condition, mutex) }
    /// Wakes one waiting thread.
    func signal() { pthread_cond_signal(condition) }
    /// Wakes every waiting thread.
    func broadcast() { pthread_cond_broadcast(condition) }
}
