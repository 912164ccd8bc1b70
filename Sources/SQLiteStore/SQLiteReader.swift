public import FeedStore
package import GRDB

/// The SQLite store's read queries, kept in one place so tests can run `EXPLAIN QUERY PLAN` on
/// exactly what the store executes. Every value is a `?` placeholder bound at execution.
extension FeedQueries {
    /// The rows of `table` whose ids are in the JSON array `?1`. One primary key lookup per id;
    /// one cached statement whatever the number of ids (the list is a single bound value).
    package static func byIDs(_ table: String) -> String { "SELECT * FROM \(table) WHERE id IN (SELECT value FROM json_each(?1))" }

    /// Active ads by id. Range of `ads_active`.
    package static let activeAds = "SELECT * FROM ads WHERE active = 1 ORDER BY id"

    /// The change version and the ad epoch (one row).
    package static let meta = "SELECT change_version, ad_epoch FROM store_meta WHERE id = 1"

}

/// Read access to one consistent state of the store, handed to the closure of
/// ``SQLiteFeedStore/read(_:)``.
///
/// Everything read through one `SQLiteReader` comes from the same database snapshot (SQLite WAL
/// read transaction), including ``changeVersion()``: what is loaded inside one `read` (the feed
/// index) is the state at that version, without racing concurrent writes.
///
/// A `SQLiteReader` is valid only inside the closure it was given to: do not store it or pass it
/// to another thread.
public struct SQLiteReader: FeedStoreReader {
    /// The connection of the read, for queries beside the store's own (the tests' SQL oracle).
    package let db: Database
    /// The store's snapshot directory: snapshots are rows of the snapshot log, found through it.
    let log: SnapshotLog

    init(_ db: Database, log: SnapshotLog) {
        self.db = db
        self.log = log
    }

    // MARK: Versions

    /// The change version of this snapshot of the store (see ``SQLiteFeedStore/changeVersion``).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(1).
    public func changeVersion() throws(FeedStoreError) -> Int64 {
        try meta().changeVersion
    }

    func meta() throws(FeedStoreError) -> (changeVersion: Int64, adEpoch: Int64) {
        try mappingErrors {
            guard let row = try Row.fetchOne(db.cachedStatement(sql: FeedQueries.meta)) else {
                throw FeedStoreError.storage(code: .corrupt, message: "store_meta row is missing")
            }
            return (row[0], row[1])
        }
    }

    // MARK: Records

    public func record<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws(FeedStoreError) -> Record? {
        try mappingErrors { try Record.fetchFirst(db.cachedStatement(sql: RecordSQL(Record.self, marker: "?").selectByID), arguments: [id]) }
    }

    /// One primary key lookup per id, in one statement (the ids are one bound JSON array).
    public func records<Record: StoredRecord & Identifiable<Int64>>(
        _ type: Record.Type, ids: some Sequence<Int64>
    ) throws(FeedStoreError) -> [Int64: Record] {
        try mappingErrors {
            var result: [Int64: Record] = [:]
            try Record.forEachRow(db.cachedStatement(sql: FeedQueries.byIDs(Record.table)), arguments: [Self.jsonArray(ids)]) { record in
                result[record.id] = record
            }
            return result
        }
    }

    // MARK: Follows

    /// Whether `follower` follows `followee`.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n), primary key lookup.
    public func isFollowing(follower: Int64, followee: Int64) throws(FeedStoreError) -> Bool {
        try mappingErrors {
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = ?1 AND followee_id = ?2)
                        """),
                arguments: [follower, followee]) ?? false
        }
    }

    // MARK: Ads

    /// The active ads, ordered by id, with the epoch of the inventory they belong to.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + a) for a active ads.
    public func activeAds() throws(FeedStoreError) -> AdInventory {
        let epoch = try meta().adEpoch
        let ads = try mappingErrors {
            var ads: [Ad] = []
            try Ad.forEachRow(db.cachedStatement(sql: FeedQueries.activeAds)) { ads.append($0) }
            return ads
        }
        return AdInventory(epoch: epoch, ads: ads)
    }

    // MARK: Snapshots

    /// The snapshot `id` saved for `viewer`, or `nil` (never saved, or pruned).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure or a row that
    ///   cannot be read.
    /// - Complexity: a lookup in the snapshot directory, one row read by its key and its body
    ///   inflated (the batch it was stored with).
    public func snapshot(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        try log.read(.snapshot, viewer: viewer, id: id, db: db)
    }

    /// The snapshot base `id` kept for `viewer`, or `nil` (never kept, or expired).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure or a row that
    ///   cannot be read.
    /// - Complexity: as ``snapshot(id:viewer:)``.
    public func snapshotBase(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        try log.read(.base, viewer: viewer, id: id, db: db)
    }

    // MARK: Whole store

    /// The number of rows of every content table, and of snapshots (from the snapshot log's
    /// directory in memory).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(n): SQLite counts by walking the smallest index of each table (about
    ///   10 ms for 500,000 videos). Meant for start-up and operators, not for requests.
    public func counts() throws(FeedStoreError) -> StoreCounts {
        let snapshots = log.snapshotCount
        return try mappingErrors {
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT COUNT(*) FROM users), (SELECT COUNT(*) FROM videos),
                               (SELECT COUNT(*) FROM ads), (SELECT COUNT(*) FROM follows)
                        """)
            else { return StoreCounts(users: 0, videos: 0, ads: 0, follows: 0, snapshots: snapshots) }
            return StoreCounts(users: row[0], videos: row[1], ads: row[2], follows: row[3], snapshots: snapshots)
        }
    }

    /// Whether the store holds no content (no user, video or ad). Snapshots do not count.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(1).
    public func isEmpty() throws(FeedStoreError) -> Bool {
        try mappingErrors {
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT NOT (EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM videos)
                                OR EXISTS (SELECT 1 FROM ads))
                    """) ?? true
        }
    }

    // MARK: Internals

    /// The ids as a JSON array (`[1,2,3]`), bound as one value for `json_each`.
    package static func jsonArray(_ ids: some Sequence<Int64>) -> String {
        var text = "["
        var first = true
        for id in ids {
            if !first { text.append(",") }
            first = false
            text.append(String(id))
        }
        text.append("]")
        return text
    }
}

@available(*, unavailable, message: "a SQLiteReader is only valid inside its read closure")
extension SQLiteReader: Sendable {}
