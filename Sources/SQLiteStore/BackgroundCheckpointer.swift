import Foundation
import GRDB
import SystemCalls

/// Copies the write-ahead log back into the database file on a thread and a connection of its
/// own, every `interval` (``FeedStore/StorageOptions/backgroundCheckpointInterval``).
///
/// SQLite's default runs a checkpoint inside the commit that grows the log past 1,000 pages:
/// that commit copies about 4 MB of pages and syncs the file before it returns, and the writes
/// queued behind it wait. A passive checkpoint from another connection takes no write lock, so
/// commits go on while it copies. The log is reused from its start once everything in it is
/// copied and no reader needs it.
final class BackgroundCheckpointer: @unchecked Sendable {
    // @unchecked: `stopping` and `stopped` are guarded by `condition`.
    private let condition = NSCondition()
    private var stopping = false
    private var stopped = false

    init(path: String, interval: Duration, busyTimeout: TimeInterval) throws {
        var configuration = Configuration()
        configuration.label = "SQLiteFeedStore.checkpoint"
        configuration.busyMode = .timeout(busyTimeout)
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        let (seconds, attoseconds) = interval.components
        let period = max(0.001, Double(seconds) + Double(attoseconds) / 1e18)
        let thread = Thread { [self] in
            nameCurrentThread("df-checkpoint")
            run(connection, every: period)
        }
        thread.start()
    }

    private func run(_ connection: DatabaseQueue, every period: TimeInterval) {
        condition.lock()
        while !stopping {
            _ = condition.wait(until: Date(timeIntervalSinceNow: period))
            if stopping { break }
            condition.unlock()
            // A failure (the file is busy being reset, the disk is full) is retried next time;
            // the log only grows meanwhile.
            _ = try? connection.inDatabase { db in try db.checkpoint(.passive) }
            condition.lock()
        }
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the thread and waits for it (a checkpoint in progress finishes first).
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !stopped { condition.wait() }
        condition.unlock()
    }
}
