import FeedStore
import Foundation
import Synchronization
import SystemCalls

/// When the store vacuums its snapshot tables itself: a pure state machine (time is passed in),
/// tested without a server.
///
/// Why. Every snapshot row is deleted again by retention seconds to minutes after it was
/// stored, and only a vacuum lets PostgreSQL reuse its space. Autovacuum visits a database at
/// most once a minute (`autovacuum_naptime`, a server-wide setting), and in the polling mix a
/// minute of churn is a few hundred thousand dead rows: the table grew past the shared buffers
/// and PostgreSQL wrote its pages out to make room, about 0.9 KB of disk writes per snapshot on
/// an unlogged table. Vacuumed after every ``rows`` deletions (at most every ``interval``), it
/// stays near what retention keeps (BENCHMARKS, "PostgreSQL snapshot storage").
package struct SnapshotVacuumPolicy: Sendable {
    /// Rows deleted (by this process) since the last vacuum that start the next one.
    package var rows: Int
    /// The least time between the starts of two vacuums, in milliseconds.
    package var interval: Int64
    /// Rows deleted since the last vacuum started.
    package private(set) var deleted = 0
    /// When the last vacuum started.
    package private(set) var lastStart: Int64?
    /// Whether a vacuum is running (at most one per process).
    package private(set) var running = false

    /// The policy of the store: 20,000 rows, every 5 s at most (about 4 s of churn in the
    /// polling mix at 50 writes/s; a vacuum of the snapshot tables took 60–220 ms there).
    package static let standard = SnapshotVacuumPolicy(rows: 20_000, interval: 5_000)

    package init(rows: Int, interval: Int64) {
        self.rows = rows
        self.interval = interval
    }

    /// `count` rows were deleted at `now`; returns whether a vacuum should start now (it is
    /// then counted as running until ``finished()``).
    package mutating func deleted(_ count: Int, now: Int64) -> Bool {
        deleted += max(0, count)
        guard !running, deleted >= rows else { return false }
        if let lastStart, now - lastStart < interval { return false }
        running = true
        lastStart = now
        deleted = 0
        return true
    }

    /// The vacuum started by ``deleted(_:now:)`` ended (or failed: the next deletions try again).
    package mutating func finished() {
        running = false
    }
}

extension PostgresFeedStore {
    /// The statement: `SKIP_LOCKED`, so a replica whose neighbour (or autovacuum) is vacuuming
    /// the same table skips it rather than waits. Simple protocol: VACUUM runs outside a
    /// transaction and is never prepared.
    static let vacuumSnapshots = "VACUUM (SKIP_LOCKED) snapshots, snapshot_bases"

    /// Counts `count` deleted snapshot rows and, when ``SnapshotVacuumPolicy`` says so, vacuums
    /// the snapshot tables on a thread of its own (`df-pg-vacuum`) with a pooled connection:
    /// the caller (a snapshot pass that answers wait for, or the maintenance thread) never waits
    /// for it. A failed vacuum is dropped; autovacuum and the next one catch up.
    func snapshotRowsDeleted(_ count: Int) {
        guard count > 0, snapshotVacuum.withLock({ $0.deleted(count, now: now) }) else { return }
        let thread = Thread { [self] in
            nameCurrentThread("df-pg-vacuum")
            defer { snapshotVacuum.withLock { $0.finished() } }
            if (try? pool.withConnection({ connection in try connection.executeScript(Self.vacuumSnapshots) })) != nil {
                vacuumsRun.add(1, ordering: .relaxed)
            }
        }
        thread.start()
    }
}

extension PostgresFeedStore {
    /// The value of the server setting `name` in this store's sessions.
    package func setting(_ name: String) throws -> String? {
        try pool.withConnection { connection in try connection.execute("SELECT current_setting($1)", [name]).rows.first?.first ?? nil }
    }

    /// The plan PostgreSQL chooses for `sql` with `parameters`, one line per node, in a
    /// transaction that first runs `settings` (by default, sequential scans ruled out: a test's
    /// tables are too small for an index to win on cost, so the plan says which index a
    /// statement can use; with none, the plan the statement gets on its own).
    package func explain(_ sql: String, _ parameters: [String?], settings: [String] = ["SET LOCAL enable_seqscan = off"]) throws -> String {
        try pool.withConnection { connection in
            try connection.inTransaction("BEGIN") {
                for setting in settings { try connection.execute(setting) }
                return try connection.execute("EXPLAIN " + sql, parameters).rows.compactMap { $0.first ?? nil }.joined(separator: "\n")
            }
        }
    }
}
