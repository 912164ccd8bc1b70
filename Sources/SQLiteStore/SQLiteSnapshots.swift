public import FeedStore
public import Foundation
import GRDB

extension SQLiteFeedStore {
    /// Saves the structure a viewer was just given, then prunes that viewer's history.
    ///
    /// Saving an id the viewer already has is idempotent: the row keeps its key, takes the new
    /// bytes (equal in practice, since the id is their hash) and its `createdAt` is refreshed, so
    /// a snapshot served again is kept as recent.
    ///
    /// Pruning, in the same transaction, for this viewer only: snapshots older than
    /// ``SnapshotRetention/maxAgeMilliseconds`` are deleted, then all but the newest
    /// ``SnapshotRetention/maxPerViewer`` (the one just saved always stays). Does not change the
    /// change version.
    ///
    /// - Parameters:
    ///   - id: the snapshot id, 1…128 printable ASCII characters (a hex hash).
    ///   - viewer: the viewer; any number (not checked against `users`).
    ///   - structure: opaque bytes encoded by the service.
    /// - Returns: the stored snapshot.
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` on `id`;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + p + r) for p pruned rows and r ≤ `maxPerViewer` retained rows
    ///   of this viewer: every save removes what the previous one left over, so it stays cheap.
    @discardableResult
    public func saveSnapshot(id: String, viewer: Int64, structure: Data) throws(FeedStoreError) -> StoredSnapshot {
        let id = try Validate.snapshotID(id)
        let createdAt = now
        let retention = options.snapshotRetention
        let (cutoff, cutoffOverflow) = createdAt.subtractingReportingOverflow(retention.maxAgeMilliseconds)
        try writeWithoutVersion { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO snapshots (viewer_id, id, created_at, structure) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT (viewer_id, id) DO UPDATE
                    SET created_at = excluded.created_at, structure = excluded.structure
                    """
            ).execute(arguments: [viewer, id, createdAt, structure])
            if !cutoffOverflow {
                try db.cachedStatement(
                    sql: """
                        DELETE FROM snapshots WHERE viewer_id = ?1 AND created_at < ?2 AND id <> ?3
                        """
                ).execute(arguments: [viewer, cutoff, id])
            }
            try db.cachedStatement(sql: FeedQueries.pruneSnapshotsByCount)
                .execute(arguments: [viewer, id, retention.maxPerViewer - 1])
        }
        return StoredSnapshot(id: id, viewerID: viewer, createdAt: createdAt, structure: structure)
    }

    /// Writes a batch of snapshots in one transaction: `bases` are kept (inserted unless there;
    /// their viewers keep their newest `keepPerViewer` bases),
    /// `upserts` are stored (or their row replaced, `createdAt` being when the snapshot was last
    /// served), `deletions` removed; then every viewer in `prune` keeps at most `keepPerViewer`
    /// rows, newest first. Does not change the change version. For a writer that keeps snapshots in memory and persists them
    /// in batches, off the request path.
    ///
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` on a malformed id;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure (nothing is written then).
    /// - Complexity: O((u + d + p) log n) plus the pruned rows.
    public func persistSnapshots(
        upserts: [StoredSnapshot], deletions: [(viewer: Int64, id: String)], prune: Set<Int64>, keepPerViewer: Int, bases: [StoredSnapshot]
    ) throws(FeedStoreError) {
        for snapshot in upserts + bases { _ = try Validate.snapshotID(snapshot.id) }
        try writeWithoutVersion { db in
            let keepBase = try db.cachedStatement(
                sql: "INSERT INTO snapshot_bases (viewer_id, id, created_at, structure) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING")
            for base in bases {
                try keepBase.execute(arguments: [base.viewerID, base.id, base.createdAt, base.structure])
            }
            // Each viewer keeps its newest bases only, as many as snapshots: a snapshot kept names
            // one of them (every base after the one it names came with a snapshot after it).
            let pruneBases = try db.cachedStatement(sql: FeedQueries.pruneSnapshotBases)
            for viewer in Set(bases.map(\.viewerID)) {
                try pruneBases.execute(arguments: [viewer, max(1, keepPerViewer)])
            }
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO snapshots (viewer_id, id, created_at, structure) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT (viewer_id, id) DO UPDATE
                    SET created_at = excluded.created_at, structure = excluded.structure
                    """)
            for snapshot in upserts {
                try upsert.execute(arguments: [snapshot.viewerID, snapshot.id, snapshot.createdAt, snapshot.structure])
            }
            let delete = try db.cachedStatement(sql: "DELETE FROM snapshots WHERE viewer_id = ?1 AND id = ?2")
            for deletion in deletions {
                try delete.execute(arguments: [deletion.viewer, deletion.id])
            }
            let pruneViewer = try db.cachedStatement(sql: FeedQueries.pruneSnapshotsByCount)
            for viewer in prune {
                try pruneViewer.execute(arguments: [viewer, "", max(1, keepPerViewer)])
            }
        }
    }

    /// Deletes every snapshot (all viewers) older than the retention's maximum age, and every
    /// snapshot base older than ``SnapshotRetention/baseMaxAgeMilliseconds``. Saving already
    /// prunes the saving viewer; call this periodically to drop the history of viewers who
    /// stopped coming. Does not change the change version.
    ///
    /// - Returns: the number of snapshots deleted.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + p) for p deleted rows (range of `snapshots_by_time`).
    @discardableResult
    public func pruneExpiredSnapshots() throws(FeedStoreError) -> Int {
        let (cutoff, overflow) = now.subtractingReportingOverflow(options.snapshotRetention.maxAgeMilliseconds)
        guard !overflow else { return 0 }
        let (baseCutoff, baseOverflow) = now.subtractingReportingOverflow(options.snapshotRetention.baseMaxAgeMilliseconds)
        return try writeWithoutVersion { db in
            try db.cachedStatement(sql: "DELETE FROM snapshots WHERE created_at < ?1").execute(arguments: [cutoff])
            let deleted = db.changesCount
            if !baseOverflow {
                try db.cachedStatement(sql: "DELETE FROM snapshot_bases WHERE created_at < ?1").execute(arguments: [baseCutoff])
            }
            return deleted
        }
    }
}

extension FeedQueries {
    /// Deletes viewer `?1`'s snapshot bases beyond the newest `?2` (ties: the later saved).
    package static let pruneSnapshotBases = """
        DELETE FROM snapshot_bases WHERE rowid IN (
            SELECT rowid FROM snapshot_bases WHERE viewer_id = ?1
            ORDER BY created_at DESC, rowid DESC
            LIMIT -1 OFFSET ?2
        )
        """

    /// Deletes viewer `?1`'s snapshots beyond the newest `?3` other than `?2`. Backward walk of
    /// `snapshots_by_viewer_time` (rowid breaks ties: the index holds it), no sort.
    package static let pruneSnapshotsByCount = """
        DELETE FROM snapshots WHERE rowid IN (
            SELECT rowid FROM snapshots
            WHERE viewer_id = ?1 AND id <> ?2
            ORDER BY created_at DESC, rowid DESC
            LIMIT -1 OFFSET ?3
        )
        """
}
