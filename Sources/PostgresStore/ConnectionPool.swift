import FeedStore
import Foundation

/// A few libpq connections shared by the server's threads: a thread checks one out, uses it
/// alone, and checks it back in. Connections are opened on demand up to `capacity` (a thread
/// that finds none free waits, at most `wait`), and one that failed is closed, not reused: the
/// next checkout opens a fresh one, which is how the store reconnects after PostgreSQL restarts.
final class ConnectionPool: @unchecked Sendable {
    // @unchecked: `idle` and `open` are guarded by `condition`; a checked-out connection is used
    // by one thread only.
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var open = 0
    private let capacity: Int
    private let wait: Duration
    private let connect: () throws -> PostgresConnection

    /// A pool of at most `capacity` connections made by `connect`.
    init(capacity: Int, wait: Duration, connect: @escaping () throws -> PostgresConnection) {
        self.capacity = max(1, capacity)
        self.wait = wait
        self.connect = connect
    }

    /// Runs `body` with a connection of its own. A connection whose link failed (or that
    /// `body` left inside a transaction) is closed instead of going back to the pool.
    ///
    /// - Throws: ``FeedStoreError/unavailable(reason:)`` when no connection can be opened;
    ///   a ``PostgresError`` of `body` mapped by ``PostgresFeedStore/mapped(_:)``; other errors
    ///   of `body` as they are.
    /// An idle connection the server dropped meanwhile (PostgreSQL restarted) fails on its
    /// transaction's `BEGIN`, before anything was sent: then `body` runs again once on a fresh one.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var retried = false
        while true {
            let (connection, reused) = try checkOut()
            do {
                let value = try body(connection)
                checkIn(connection)
                return value
            } catch let error as PostgresError where error.isConnectionFailure && error.operation == "begin" && reused && !retried {
                checkIn(connection)
                retried = true
            } catch let error as PostgresError {
                checkIn(connection)
                throw PostgresFeedStore.mapped(error)
            } catch {
                checkIn(connection)
                throw error
            }
        }
    }

    /// A connection, and whether it was used before (an idle one).
    private func checkOut() throws(FeedStoreError) -> (PostgresConnection, reused: Bool) {
        let deadline = Date(timeIntervalSinceNow: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
        condition.lock()
        while idle.isEmpty && open >= capacity {
            guard condition.wait(until: deadline) else {
                condition.unlock()
                throw .unavailable(reason: "no free PostgreSQL connection within \(wait)")
            }
        }
        if let connection = idle.popLast() {
            condition.unlock()
            return (connection, true)
        }
        open += 1
        condition.unlock()
        do {
            return (try connect(), false)
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            throw PostgresFeedStore.mapped(error)
        }
    }

    private func checkIn(_ connection: PostgresConnection) {
        let reusable = connection.isOpen && connection.isIdle
        condition.lock()
        if reusable {
            idle.append(connection)
        } else {
            open -= 1
        }
        condition.signal()
        condition.unlock()
    }

    /// Closes the idle connections (the others close when checked in after a failure).
    func closeIdle() {
        condition.lock()
        open -= idle.count
        idle.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
