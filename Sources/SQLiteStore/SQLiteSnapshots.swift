public import FeedStore
public import Foundation
import GRDB

extension SQLiteFeedStore {
    /// Saves the structure a viewer was just given, then prunes that viewer's history.
    ///
    /// Saving an id the viewer already has is idempotent: the snapshot takes the new bytes
    /// (equal in practice, since the id is their hash) and its `createdAt` is refreshed, so a
    /// snapshot served again is kept as recent.
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
    /// - Complexity: one appended row of the snapshot log (``SnapshotLog``), plus the rows it
    ///   empties; O(r) in memory for this viewer's r retained snapshots.
    @discardableResult
    public func saveSnapshot(id: String, viewer: Int64, structure: Data) throws(FeedStoreError) -> StoredSnapshot {
        let id = try Validate.snapshotID(id)
        let createdAt = now
        let retention = options.snapshotRetention
        let (cutoff, cutoffOverflow) = createdAt.subtractingReportingOverflow(retention.maxAgeMilliseconds)
        try writeLog(now: createdAt) { state, batch in
            state.put(.snapshot, viewer: viewer, id: id, createdAt: createdAt, bytes: Array(structure), in: &batch)
            if !cutoffOverflow {
                state.remove(.snapshot, viewer: viewer, in: &batch) { $0.createdAt < cutoff && $0.id != id }
            }
            state.keepNewest(retention.maxPerViewer - 1, .snapshot, viewer: viewer, sparing: id, in: &batch)
        }
        return StoredSnapshot(id: id, viewerID: viewer, createdAt: createdAt, structure: structure)
    }

    /// Writes a batch of snapshots in one transaction: `bases` are kept (added unless there;
    /// their viewers keep their newest `keepPerViewer` bases),
    /// `upserts` are stored (or replace the stored one, `createdAt` being when the snapshot was
    /// last served), `deletions` removed; then every viewer in `prune` keeps at most
    /// `keepPerViewer` snapshots, newest first. Does not change the change version. For a writer
    /// that keeps snapshots in memory and persists them in batches, off the request path.
    ///
    /// The batch is one row appended to the snapshot log (``SnapshotLog``): its structures
    /// gzipped together, whatever viewers they belong to, and the rows that no longer hold
    /// anything retained are deleted in the same transaction.
    ///
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` on a malformed id;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure (nothing is written then).
    /// - Complexity: O(u + d + p·r) in memory for r retained snapshots per viewer, one row
    ///   written, plus the rows deleted.
    public func persistSnapshots(
        upserts: [StoredSnapshot], deletions: [(viewer: Int64, id: String)], prune: Set<Int64>, keepPerViewer: Int, bases: [StoredSnapshot]
    ) throws(FeedStoreError) {
        for snapshot in upserts + bases { _ = try Validate.snapshotID(snapshot.id) }
        try writeLog(now: now) { state, batch in
            // A base is never replaced: it is the bytes snapshots were encoded against.
            for base in bases where state.entry(.base, viewer: base.viewerID, id: base.id) == nil {
                state.put(.base, viewer: base.viewerID, id: base.id, createdAt: base.createdAt, bytes: byteArray(base.structure), in: &batch)
            }
            // Each viewer keeps its newest bases only, as many as snapshots: a snapshot kept names
            // one of them (every base after the one it names came with a snapshot after it).
            for viewer in Set(bases.map(\.viewerID)) {
                state.keepNewest(max(1, keepPerViewer), .base, viewer: viewer, in: &batch)
            }
            for snapshot in upserts {
                state.put(
                    .snapshot, viewer: snapshot.viewerID, id: snapshot.id, createdAt: snapshot.createdAt, bytes: byteArray(snapshot.structure), in: &batch)
            }
            for deletion in deletions {
                state.remove(.snapshot, viewer: deletion.viewer, in: &batch, where: SnapshotLog.Entry.of(deletion.id))
            }
            for viewer in prune {
                state.keepNewest(max(1, keepPerViewer), .snapshot, viewer: viewer, in: &batch)
            }
        }
    }

    /// Deletes every snapshot (all viewers) older than the retention's maximum age, and every
    /// snapshot base older than ``SnapshotRetention/baseMaxAgeMilliseconds``. Saving already
    /// prunes the saving viewer; call this periodically to drop the history of viewers who
    /// stopped coming. Then compacts the snapshot log (``compactSnapshotLog(minimumAge:limit:)``).
    /// Does not change the change version.
    ///
    /// - Returns: the number of snapshots deleted.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(n) in memory for the n snapshots and bases kept, plus the rows deleted.
    @discardableResult
    public func pruneExpiredSnapshots() throws(FeedStoreError) -> Int {
        let (cutoff, overflow) = now.subtractingReportingOverflow(options.snapshotRetention.maxAgeMilliseconds)
        guard !overflow else { return 0 }
        let (baseCutoff, baseOverflow) = now.subtractingReportingOverflow(options.snapshotRetention.baseMaxAgeMilliseconds)
        let deleted = try writeLog(now: now) { state, batch in
            let deleted = state.removeAll(.snapshot, createdBefore: cutoff, in: &batch)
            if !baseOverflow { _ = state.removeAll(.base, createdBefore: baseCutoff, in: &batch) }
            return deleted
        }
        try compactSnapshotLog()
        return deleted
    }

    /// Rewrites the snapshot-log rows older than `minimumAge` ms of which at most a quarter is
    /// still retained: what they hold goes into new rows and they are deleted, at most `limit`
    /// snapshots, bases and tombstones at a time. Rows die by themselves once everything in
    /// them is pruned; this is for the few snapshots kept long (a viewer who stopped polling
    /// keeps its last ones for the maximum age) that would keep whole rows of others' dead
    /// ones. ``pruneExpiredSnapshots()`` calls it.
    ///
    /// - Returns: how many entries and tombstones were copied.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure or a row that cannot
    ///   be read (nothing is changed then).
    @discardableResult
    package func compactSnapshotLog(minimumAge: Int64 = 60_000, limit: Int = 4_096) throws(FeedStoreError) -> Int {
        let now = self.now
        return try log.withLock { (state) throws(FeedStoreError) -> Int in
            let candidates = state.sparseRows(createdBefore: now - minimumAge, limit: limit)
            guard !candidates.isEmpty else { return 0 }
            var batch = state.begin(now: now)
            do throws(FeedStoreError) {
                return try writeWithoutVersion { db in
                    var carried = 0
                    for seq in candidates {
                        guard let row = try Row.fetchOne(db, sql: "SELECT directory, body FROM snapshot_log WHERE seq = ?1", arguments: [seq]) else { continue }
                        let directory: Data = row[0]
                        let body: Data = row[1]
                        do throws(RowDirectory.Malformed) {
                            carried += try state.carry(seq, directory: RowDirectory(decoding: Array(directory)), body: Array(body), in: &batch)
                        } catch {
                            throw FeedStoreError.storage(code: .corrupt, message: "snapshot_log row \(seq): \(error.description)")
                        }
                    }
                    let (rows, deleted) = state.finish(&batch)
                    try Self.write(rows, deleting: deleted, in: db)
                    return carried
                }
            } catch {
                state.rollback(batch)
                throw error
            }
        }
    }

    /// Runs `body` on the snapshot directory as one batch, then writes the batch's row and
    /// deletes the rows it emptied in one transaction (unsynced: ``writeWithoutVersion(_:)``).
    /// If the transaction fails, the directory is put back as it was.
    private func writeLog<T>(now: Int64, _ body: (inout SnapshotLog.State, inout SnapshotLog.Batch) -> T) throws(FeedStoreError) -> T {
        try log.withLock { (state) throws(FeedStoreError) -> T in
            var batch = state.begin(now: now)
            let result = body(&state, &batch)
            let (rows, deleted) = state.finish(&batch)
            guard !rows.isEmpty || !deleted.isEmpty else { return result }
            do throws(FeedStoreError) {
                try writeWithoutVersion { db in try Self.write(rows, deleting: deleted, in: db) }
            } catch {
                state.rollback(batch)
                throw error
            }
            return result
        }
    }
}

extension SQLiteFeedStore {
    /// Inserts a batch's rows and deletes the rows it emptied.
    fileprivate static func write(_ rows: [SnapshotLog.EncodedRow], deleting deleted: [Int64], in db: Database) throws {
        let insert = try db.cachedStatement(sql: "INSERT INTO snapshot_log (seq, created_at, directory, body) VALUES (?1, ?2, ?3, ?4)")
        for row in rows {
            try insert.execute(arguments: [row.seq, row.createdAt, Data(row.directory), Data(row.body)])
        }
        let delete = try db.cachedStatement(sql: "DELETE FROM snapshot_log WHERE seq = ?1")
        for seq in deleted { try delete.execute(arguments: [seq]) }
    }
}

extension SnapshotLog {
    /// Rebuilds the directory from the rows' directories, in order (the bodies are not read).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` (`corrupt`) for a row that cannot be
    ///   read.
    static func load(from db: Database) throws -> SnapshotLog {
        var state = State()
        let rows = try Row.fetchCursor(db, sql: "SELECT seq, created_at, directory FROM snapshot_log ORDER BY seq")
        while let row = try rows.next() {
            let seq: Int64 = row[0]
            let bytes: Data = row[2]
            do throws(RowDirectory.Malformed) {
                state.replay(seq: seq, createdAt: row[1], directory: try RowDirectory(decoding: Array(bytes)))
            } catch {
                throw FeedStoreError.storage(code: .corrupt, message: "snapshot_log row \(seq): \(error.description)")
            }
        }
        state.finishLoading()
        return SnapshotLog(state)
    }

    /// The stored snapshot or base `id` of `viewer`, read through `db` while the directory is
    /// locked (so its row cannot be deleted or be not yet committed meanwhile), or nil.
    func read(_ kind: Kind, viewer: Int64, id: String, db: Database) throws(FeedStoreError) -> StoredSnapshot? {
        try withLock { (state) throws(FeedStoreError) -> StoredSnapshot? in
            guard let entry = state.entry(kind, viewer: viewer, id: id) else { return nil }
            let row = try mappingErrors {
                try Row.fetchOne(db.cachedStatement(sql: "SELECT directory, body FROM snapshot_log WHERE seq = ?1"), arguments: [entry.seq])
            }
            // Only a read transaction that began before the row was committed misses it: the
            // snapshot is not in the state this read sees.
            guard let row else { return nil }
            let directoryBytes: Data = row[0]
            let body: Data = row[1]
            do throws(RowDirectory.Malformed) {
                let directory = try RowDirectory(decoding: Array(directoryBytes))
                guard
                    let index = directory.stored.lastIndex(where: { $0.kind == kind && $0.viewer == viewer && $0.id == id && $0.order == entry.order })
                else { throw RowDirectory.Malformed(description: "the entry is not in its row") }
                let bytes = try directory.bytes(at: index, body: Array(body))
                return StoredSnapshot(id: id, viewerID: viewer, createdAt: entry.createdAt, structure: Data(bytes))
            } catch {
                throw FeedStoreError.storage(code: .corrupt, message: "snapshot_log row \(entry.seq): \(error.description)")
            }
        }
    }
}

extension SnapshotLog {
    /// Copies the rows of the `snapshots` and `snapshot_bases` tables of a store from before the
    /// snapshot log into it, 64 to a row, oldest first (the migration to version 5).
    static func convertTables(_ db: Database) throws {
        var seq: Int64 = 0
        var order: UInt64 = 0
        for (kind, table) in [(Kind.base, "snapshot_bases"), (.snapshot, "snapshots")] {
            var stored: [StoredEntry] = []
            var body: [UInt8] = []
            func flush() throws {
                guard !stored.isEmpty else { return }
                seq += 1
                let directory = RowDirectory(tombstones: [], stored: stored)
                try db.execute(
                    sql: "INSERT INTO snapshot_log (seq, created_at, directory, body) VALUES (?1, ?2, ?3, ?4)",
                    arguments: [seq, stored.map(\.createdAt).max() ?? 0, Data(directory.encoded()), Data(RowDirectory.compress(body))])
                stored = []
                body = []
            }
            let rows = try Row.fetchCursor(db, sql: "SELECT viewer_id, id, created_at, structure FROM \(table) ORDER BY created_at, rowid")
            while let row = try rows.next() {
                let bytes: Data = row[3]
                order += 1
                stored.append(StoredEntry(kind: kind, viewer: row[0], id: row[1], createdAt: row[2], order: order, length: bytes.count))
                body.append(contentsOf: bytes)
                if stored.count == 64 { try flush() }
            }
            try flush()
        }
    }
}

/// `data`'s bytes as an array, copied in one go: `Array(data)` went through `Data`'s generic
/// sequence copy, about 1,000 instructions for a like's 60-byte snapshot (callgrind), and the
/// maintenance thread copies every snapshot it stores.
private func byteArray(_ data: Data) -> [UInt8] {
    data.withUnsafeBytes { Array($0.bindMemory(to: UInt8.self)) }
}
