#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A reader/writer lock: many readers at once, or one writer.
///
/// The `pthread_rwlock_t` lives in memory this object allocates and never moves: POSIX forbids
/// copying or moving an initialised lock, and Swift promises no stable address for a stored
/// property passed with `&` (the address may be of a temporary copy).
final class ReadWriteLock: @unchecked Sendable {
    // @unchecked: the pointer is written once, in init; the lock itself is what makes access safe.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        let result = pthread_rwlock_init(lock, nil)
        precondition(result == 0, "pthread_rwlock_init failed: \(result)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` holding the lock shared with other readers.
    func withReadLock<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` holding the lock alone.
    func withWriteLock<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
