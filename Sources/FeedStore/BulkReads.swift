import GRDB

// Whole-table reads, for loading an in-memory index at start. Each walks one table in primary
// key order with a cursor (no array of every row in between), inside the caller's read
// transaction, so everything loaded in one `read` is one consistent state of the store.

extension FeedReader {
    /// Calls `body` with every user, by id.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(n), one table scan.
    public func forEachUser(_ body: (User) throws -> Void) throws(FeedStoreError) {
        try mappingErrors {
            let users = try User.fetchCursor(db.cachedStatement(sql: "SELECT * FROM users ORDER BY id"))
            while let user = try users.next() { try body(user) }
        }
    }

    /// Calls `body` with every video, by id.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(n), one table scan.
    public func forEachVideo(_ body: (Video) throws -> Void) throws(FeedStoreError) {
        try mappingErrors {
            let videos = try Video.fetchCursor(db.cachedStatement(sql: "SELECT * FROM videos ORDER BY id"))
            while let video = try videos.next() { try body(video) }
        }
    }

    /// Calls `body` with every follow edge, by follower then followee.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(n), one scan of the primary key.
    public func forEachFollow(_ body: (_ follower: Int64, _ followee: Int64) throws -> Void) throws(FeedStoreError) {
        try mappingErrors {
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT follower_id, followee_id FROM follows ORDER BY follower_id, followee_id"))
            while let row = try rows.next() { try body(row[0], row[1]) }
        }
    }
}
