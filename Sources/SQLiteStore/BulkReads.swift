public import FeedStore
import GRDB

// Whole-table reads, for loading an in-memory index at start. Each walks one table in primary
// key order with a cursor (no array of every row in between), inside the caller's read
// transaction, so everything loaded in one `read` is one consistent state of the store.

extension SQLiteReader {
    /// Calls `body` with every row of `Record`'s table, in primary key order.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure, or what `body` throws.
    /// - Complexity: O(n), one table scan.
    public func forEach<Record: StoredRecord>(_ type: Record.Type, _ body: (Record) throws -> Void) throws(FeedStoreError) {
        try mappingErrors {
            try Record.forEachRow(db.cachedStatement(sql: RecordSQL(Record.self, marker: "?").all), body)
        }
    }

    /// Every follow edge, by follower then followee, as two integers (see ``FeedStoreReader``).
    public func forEachFollow(_ body: (_ follower: Int64, _ followee: Int64) throws -> Void) throws(FeedStoreError) {
        try mappingErrors {
            let rows = try Row.fetchCursor(db.cachedStatement(sql: FeedQueries.followEdges))
            while let row = try rows.next() { try body(row[0], row[1]) }
        }
    }
}
