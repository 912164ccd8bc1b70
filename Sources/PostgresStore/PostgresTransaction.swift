public import FeedStore

/// The PostgreSQL side of the content writes (``FeedStore/FeedStorage`` writes them once over
/// these), inside the transaction of ``PostgresFeedStore/write(touchesAds:change:_:)``.
public struct PostgresTransaction: StorageTransaction {
    let connection: PostgresConnection

    public func insert<Record: StoredRecord>(_ record: Record) throws -> Int64 {
        let rows = try connection.execute(connection.statements(for: Record.self).insert, record.insertedColumnValues.map(\.parameter))
        return rows.firstValue.flatMap { Int64($0) } ?? 0
    }

    public func fetch<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws -> Record? {
        try PostgresReader(connection: connection).record(Record.self, id: id)
    }

    /// Queued, not run: the update goes out with the write's next statement, or before the
    /// write ends (``PostgresConnection/settle()``, the `COMMIT` of a write alone).
    public func update<Record: StoredRecord & Identifiable<Int64>>(_ record: Record) throws {
        connection.queue(
            connection.statements(for: Record.self).updateByID, [String(record.id)] + record.insertedColumnValues.map(\.parameter), operation: "execute",
            mayWait: false)
    }

    public func delete<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws -> Bool {
        try connection.execute(connection.statements(for: Record.self).deleteByID, [String(id)]).affected > 0
    }

    public func handleTaken(_ handle: String) throws -> Bool {
        try connection.execute("SELECT EXISTS (SELECT 1 FROM users WHERE handle = $1)", [handle]).rows == [["t"]]
    }

    public func insertFollow(_ follow: Follow) throws -> Bool {
        try connection.execute(Self.followInsert, [String(follow.followerID), String(follow.followeeID), String(follow.createdAt)]).affected > 0
    }

    public func insertLike(video: Int64, user: Int64, createdAt: Int64) throws -> Bool {
        try connection.execute(
            Self.likeInsert,
            [String(video), String(user), String(createdAt)]
        ).affected > 0
    }

    public func deleteLike(video: Int64, user: Int64) throws -> Bool {
        try connection.execute(Self.likeDelete, [String(video), String(user)]).affected > 0
    }

    private static let likeInsert = "INSERT INTO likes (video_id, user_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"
    private static let likeDelete = "DELETE FROM likes WHERE video_id = $1 AND user_id = $2"
    private static let followInsert = "INSERT INTO follows (follower_id, followee_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"

    public func deleteFollow(follower: Int64, followee: Int64) throws -> Bool {
        try connection.execute(StepStatements.deleteFollow, [String(follower), String(followee)]).affected > 0
    }
}
