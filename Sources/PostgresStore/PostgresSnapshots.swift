public import FeedStore
public import Foundation

// Snapshots in PostgreSQL, so any replica answers any snapshot: the same retention rules as the
// SQLite store; a batch is a few statements whatever its size (multi-row INSERT, arrays).
// `snapshots` is unlogged (migration v6 says why, and why `snapshot_bases` is not); both are
// vacuumed by the store itself after many deletions (`SnapshotVacuumPolicy`).
//
// Index ↔ query map of `snapshots`:
// - primary key `(viewer_id, id)`: a lookup, the upsert's conflict, a deletion, and per-viewer
//   pruning by count and age (the range `viewer_id = $1`, a few dozen rows, ranked in SQL);
// - `snapshots_by_time (created_at)`: the global expiry.

extension PostgresFeedStore {
    /// Viewer `$1`'s snapshots beyond the newest `$3` other than `$2`; ties in time go by save
    /// order (`saved`), newest kept.
    static let pruneViewer = """
        DELETE FROM snapshots WHERE viewer_id = $1 AND id IN (
            SELECT id FROM snapshots WHERE viewer_id = $1 AND id <> $2 ORDER BY created_at DESC, saved DESC OFFSET $3
        )
        """

    /// Upserts `$1…$4` (viewer, id, time, bytes), keeping the row's save order.
    static func upsert(rows: Int) -> String {
        let values = (0..<rows).map { row in "($\(4 * row + 1)::bigint, $\(4 * row + 2), $\(4 * row + 3)::bigint, $\(4 * row + 4)::bytea)" }
        return """
            INSERT INTO snapshots (viewer_id, id, created_at, structure) VALUES \(values.joined(separator: ", "))
            ON CONFLICT (viewer_id, id) DO UPDATE SET created_at = excluded.created_at, structure = excluded.structure
            """
    }

    /// What a batch's transaction sets first (sent in the same round trip as its statements):
    /// - `synchronous_commit = off`: a snapshot row is visible to every replica once committed;
    ///   waiting for the WAL to reach the disk as well would add a sync to every answer that
    ///   hands one out. `snapshots` is unlogged (v6); the bases of the last few hundred
    ///   milliseconds may be lost in a crash of PostgreSQL itself.
    /// - `enable_seqscan = off`: every statement of a batch finds its rows by key or by viewer,
    ///   and the plans a connection keeps for its prepared statements are made once. The bases'
    ///   pruning, planned while `snapshot_bases` was small, kept a sequential scan of it: at
    ///   500 writes/s, with a thousand new bases a second, 1.5 ms a call on average in every
    ///   answer's pass that took a new base, 5.3 s of PostgreSQL's time in 15 s
    ///   (`pg_stat_statements`, BENCHMARKS session 27).
    ///
    /// One statement, as the first setting alone was: each statement of the batch is one more
    /// message for the hand-off thread to build and one more answer to read.
    package static let snapshotTransactionSettings =
        "SELECT set_config('synchronous_commit', 'off', true), set_config('enable_seqscan', 'off', true)"

    static func parameters(_ snapshot: StoredSnapshot) -> [String?] {
        [String(snapshot.viewerID), snapshot.id, String(snapshot.createdAt), ColumnValue.blob(snapshot.structure).parameter]
    }

    @discardableResult
    public func saveSnapshot(id: String, viewer: Int64, structure: Data) throws(FeedStoreError) -> StoredSnapshot {
        let snapshot = StoredSnapshot(id: try Validate.snapshotID(id), viewerID: viewer, createdAt: now, structure: structure)
        let retention = options.snapshotRetention
        let (cutoff, cutoffOverflow) = snapshot.createdAt.subtractingReportingOverflow(retention.maxAgeMilliseconds)
        let deleted = try writeWithoutVersion { connection in
            try connection.execute(Self.upsert(rows: 1), Self.parameters(snapshot))
            var deleted = 0
            if !cutoffOverflow {
                deleted += try connection.execute(
                    "DELETE FROM snapshots WHERE viewer_id = $1 AND created_at < $2 AND id <> $3", [String(viewer), String(cutoff), snapshot.id]
                ).affected
            }
            return deleted + (try connection.execute(Self.pruneViewer, [String(viewer), snapshot.id, String(retention.maxPerViewer - 1)]).affected)
        }
        snapshotRowsDeleted(deleted)
        return snapshot
    }

    /// One transaction: upserts in multi-row INSERTs of up to 500 rows, deletions and the
    /// per-viewer pruning in one statement each.
    public func persistSnapshots(
        upserts: [StoredSnapshot], deletions: [(viewer: Int64, id: String)], prune: Set<Int64>, keepPerViewer: Int, bases: [StoredSnapshot]
    ) throws(FeedStoreError) {
        for snapshot in upserts + bases { _ = try Validate.snapshotID(snapshot.id) }
        // One row per key: a statement may not upsert the same row twice.
        var latest: [String: StoredSnapshot] = [:]
        for snapshot in upserts { latest["\(snapshot.viewerID) \(snapshot.id)"] = snapshot }
        // In key order, as the bases below: replicas writing rows of the same viewers at once
        // take their locks in one order, so they wait for each other instead of deadlocking.
        let rows = latest.values.sorted { ($0.viewerID, $0.id) < ($1.viewerID, $1.id) }
        let bases = bases.sorted { ($0.viewerID, $0.id) < ($1.viewerID, $1.id) }
        // Every statement and the COMMIT in one round trip: answers that hand out a snapshot
        // wait for this transaction (the hand-off thread's pass), and it was three round trips
        // and more (one per new base) apart.
        var statements: [(sql: String, parameters: [String?])] = []
        statements.append((Self.snapshotTransactionSettings, []))
        for base in bases {
            statements.append(
                (
                    "INSERT INTO snapshot_bases (viewer_id, id, created_at, structure) VALUES ($1::bigint, $2, $3::bigint, $4::bytea) ON CONFLICT DO NOTHING",
                    Self.parameters(base)
                ))
        }
        // The statements whose affected rows are deletions (for the vacuum's count).
        var deleting: [Int] = []
        // Each viewer keeps its newest bases only, as many as snapshots (see the SQLite store).
        if !bases.isEmpty {
            deleting.append(statements.count)
            statements.append(
                (
                    Self.keepNewest(in: "snapshot_bases", tiesBy: "ctid"),
                    [arrayLiteral(Set(bases.map(\.viewerID)).map { $0 }), String(max(1, keepPerViewer))]
                ))
        }
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(start + 500, rows.count)]
            statements.append((Self.upsert(rows: chunk.count), chunk.flatMap(Self.parameters)))
            start += chunk.count
        }
        if !deletions.isEmpty {
            deleting.append(statements.count)
            statements.append(
                (
                    "DELETE FROM snapshots WHERE (viewer_id, id) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))",
                    [arrayLiteral(deletions.map { $0.viewer }), arrayLiteral(deletions.map(\.id))]
                ))
        }
        if !prune.isEmpty {
            deleting.append(statements.count)
            statements.append((Self.pruneViewers, [arrayLiteral(prune.map { $0 }), String(max(1, keepPerViewer))]))
        }
        statements.append(("COMMIT", []))
        let answers = try writeWithoutVersion(commitsItself: true) { connection in try connection.execute(statements) }
        let deleted = deleting.reduce(0) { $0 + answers[$1].affected }
        snapshotRowsDeleted(deleted)
    }

    /// The snapshots of the viewers `$1` (an array) beyond each one's newest `$2`; ties in time
    /// go by save order (`saved`), newest kept.
    package static let pruneViewers = keepNewest(in: "snapshots", tiesBy: "saved")

    /// Deletes the rows of `table` of the viewers `$1` (an array) beyond each one's newest `$2`
    /// by `created_at`, ties broken by `tiesBy` (the later kept).
    ///
    /// Each viewer's rows are read through the primary key's range (`viewer_id = viewer.id`, one
    /// viewer at a time, a few dozen rows), and the rows to delete are then taken by their tuple
    /// id. Ranked over `viewer_id = ANY($1)` and joined back on the key, the statement let the
    /// planner read the whole table twice (two sequential scans and a hash join) once a second in
    /// the polling mix at 50 writes/s, to find nothing to delete; now it reads the viewers' rows
    /// alone (BENCHMARKS, session 27).
    ///
    /// A row stored again while the statement runs (a snapshot served again: its upsert makes a
    /// new version of the row) is kept: when a row it would delete was changed by a transaction
    /// that committed meanwhile, PostgreSQL checks the condition again against the row as it is
    /// now, and its tuple id is no longer one of those chosen. The maintenance pass prunes
    /// outside the lock that orders this replica's store passes, and other replicas never shared
    /// it.
    package static func keepNewest(in table: String, tiesBy tieBreak: String) -> String {
        """
        DELETE FROM \(table) WHERE ctid = ANY(ARRAY(
            SELECT older.row FROM unnest($1::bigint[]) AS viewer(id)
            CROSS JOIN LATERAL (
                SELECT ctid AS row FROM \(table) WHERE viewer_id = viewer.id ORDER BY created_at DESC, \(tieBreak) DESC OFFSET $2
            ) AS older
        ))
        """
    }

    @discardableResult
    public func pruneExpiredSnapshots() throws(FeedStoreError) -> Int {
        let (cutoff, overflow) = now.subtractingReportingOverflow(options.snapshotRetention.maxAgeMilliseconds)
        guard !overflow else { return 0 }
        let (baseCutoff, baseOverflow) = now.subtractingReportingOverflow(options.snapshotRetention.baseMaxAgeMilliseconds)
        let (deleted, bases) = try writeWithoutVersion { connection in
            let deleted = try connection.execute("DELETE FROM snapshots WHERE created_at < $1", [String(cutoff)]).affected
            guard !baseOverflow else { return (deleted, 0) }
            return (deleted, try connection.execute("DELETE FROM snapshot_bases WHERE created_at < $1", [String(baseCutoff)]).affected)
        }
        snapshotRowsDeleted(deleted + bases)
        return deleted
    }
}

/// A PostgreSQL array literal of `values`, each quoted (`"` and `\` escaped), so any printable
/// text is one element. Built byte by byte: the maintenance pass sends thousands of snapshot ids
/// in one literal, and Foundation's `replacingOccurrences`, twice per id, was a third of that
/// thread's time on a replica (`perf record` of `PHASES=cluster scripts/bench-live`).
package func arrayLiteral(_ values: [String]) -> String {
    var bytes: [UInt8] = [UInt8(ascii: "{")]
    bytes.reserveCapacity(2 + values.reduce(0) { $0 + $1.utf8.count + 3 })
    for (index, value) in values.enumerated() {
        if index > 0 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\""))
    }
    bytes.append(UInt8(ascii: "}"))
    return String(decoding: bytes, as: UTF8.self)
}

/// A PostgreSQL array literal of integers, nil as NULL (no quoting needed).
package func arrayLiteral(_ values: some Sequence<Int64?>) -> String {
    var text = "{"
    for (index, value) in values.enumerated() {
        if index > 0 { text += "," }
        if let value { text += String(value) } else { text += "NULL" }
    }
    return text + "}"
}
