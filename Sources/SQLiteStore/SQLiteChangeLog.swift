public import FeedStore
import GRDB

extension SQLiteReader {
    /// The change-log entries with a sequence number greater than `sequence`, oldest first, at
    /// most `limit`.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + k) for k entries, a range of the primary key.
    public func changes(after sequence: Int64, limit: Int) throws(FeedStoreError) -> [ChangeEntry] {
        try mappingErrors {
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: FeedQueries.changesAfter), arguments: [sequence, max(1, limit)])
            var entries: [ChangeEntry] = []
            while let row = try rows.next() {
                let kindText: String = row[1]
                guard let kind = ChangeKind(rawValue: kindText) else {
                    throw FeedStoreError.storage(code: .corrupt, message: "unknown change kind \(kindText) at \(row[0] as Int64)")
                }
                entries.append(ChangeEntry(sequence: row[0], kind: kind, key: row[2], otherKey: row[3], committedAt: row[4]))
            }
            return entries
        }
    }
}

extension SQLiteFeedStore {
    /// Deletes change-log entries older than the newest `keep`, so the log does not grow
    /// without bound. Readers that fall further behind reload everything (a gap in
    /// ``SQLiteReader/changes(after:limit:)`` tells them).
    ///
    /// - Returns: the number of entries deleted.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    @discardableResult
    public func pruneChangeLog(keeping keep: Int64) throws(FeedStoreError) -> Int {
        try writeWithoutVersion { db in
            try db.cachedStatement(
                sql: """
                    DELETE FROM change_log WHERE seq <= (SELECT change_version FROM store_meta WHERE id = 1) - ?1
                    """
            ).execute(arguments: [max(0, keep)])
            return db.changesCount
        }
    }
}

extension FeedQueries {
    /// Log entries after `?1`, oldest first, at most `?2`. Range of the primary key.
    package static let changesAfter = """
        SELECT seq, kind, key, other_key, committed_at FROM change_log WHERE seq > ?1 ORDER BY seq LIMIT ?2
        """

    /// Appends one entry.
    package static let appendChange = """
        INSERT INTO change_log (seq, kind, key, other_key, committed_at) VALUES (?1, ?2, ?3, ?4, ?5)
        """
}
