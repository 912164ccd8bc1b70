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

    public func fetch<First: StoredRecord & Identifiable<Int64>, Second: StoredRecord & Identifiable<Int64>>(
        _ first: First.Type, id firstID: Int64, _ second: Second.Type, id secondID: Int64
    ) throws -> (First?, Second?) {
        try PostgresReader(connection: connection).records(First.self, id: firstID, Second.self, id: secondID)
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

    /// The user's check and the insert sent at once, in one round trip; when the user is
    /// missing the insert's answer (a foreign key's refusal) is not read.
    public func insert<Record: StoredRecord>(_ record: Record, ifUserExists user: Int64) throws -> Int64? {
        let outcomes = try connection.executeEach([
            (Self.userExists, [String(user)]),
            (connection.statements(for: Record.self).insert, record.insertedColumnValues.map(\.parameter)),
        ])
        guard try Self.answer(outcomes, 0).get().rows == [["t"]] else { return nil }
        return try Self.answer(outcomes, 1).get().firstValue.flatMap { Int64($0) } ?? 0
    }

    /// Both users' checks and the insert sent at once, in one round trip.
    public func insertFollowIfUsersExist(_ follow: Follow) throws -> FollowInsert {
        let outcomes = try connection.executeEach([
            (Self.userExists, [String(follow.followerID)]),
            (Self.userExists, [String(follow.followeeID)]),
            (Self.followInsert, [String(follow.followerID), String(follow.followeeID), String(follow.createdAt)]),
        ])
        guard try Self.answer(outcomes, 0).get().rows == [["t"]] else { return .followerMissing }
        guard try Self.answer(outcomes, 1).get().rows == [["t"]] else { return .followeeMissing }
        return try Self.answer(outcomes, 2).get().affected > 0 ? .inserted : .exists
    }

    /// Whether the user $1 exists.
    private static let userExists = "SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)"
    private static let likeInsert = "INSERT INTO likes (video_id, user_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"
    private static let likeDelete = "DELETE FROM likes WHERE video_id = $1 AND user_id = $2"
    private static let followInsert = "INSERT INTO follows (follower_id, followee_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"

    /// The answer of statement `index` of a pipeline: there unless one before it failed,
    /// whose failure was read first.
    private static func answer(_ outcomes: [Result<PostgresRows, PostgresError>?], _ index: Int) throws -> Result<PostgresRows, PostgresError> {
        guard let outcome = outcomes[index] else { throw PostgresError(sqlState: nil, constraint: nil, operation: "execute") }
        return outcome
    }

    /// The like's checks and changes sent at once, in one round trip: the user's check, the
    /// count's update (which returns the video, or nothing when there is none; it fails with
    /// 22003 when the count would overflow), and the like row's insert or delete (refused by a
    /// foreign key when the user or the video is missing: the answers before it say which). The
    /// generic order of the checks holds: video, user, overflow, the like row.
    public func changeLike(video id: Int64, user: Int64, liking: Bool, at time: Int64) throws -> LikeChange {
        let outcomes = try connection.executeEach([
            (Self.userExists, [String(user)]),
            (Self.likeCountUpdate, [String(id), liking ? "1" : "-1", String(time)]),
            liking
                ? (Self.likeInsert, [String(id), String(user), String(time)])
                : (Self.likeDelete, [String(id), String(user)]),
        ])
        let userExists = try Self.answer(outcomes, 0).get().rows == [["t"]]
        switch try Self.answer(outcomes, 1) {
        case .success(let updated):
            guard let row = updated.rows.first else { return .videoMissing }
            guard userExists else { return .userMissing }
            let video = try PostgresReader(connection: connection).decode(Video.self, row)
            return try Self.answer(outcomes, 2).get().affected > 0 ? .changed(video) : .refused
        case .failure(let error) where error.sqlState == "22003":  // numeric value out of range
            return userExists ? .overflow : .userMissing
        case .failure(let error):
            throw error
        }
    }

    /// Moves a video's like count by $2, never below zero, and its update time to $3, never
    /// before its creation; returns the row.
    private static let likeCountUpdate =
        "UPDATE \(Video.table) SET like_count = GREATEST(0, like_count + $2), updated_at = GREATEST($3, created_at) WHERE id = $1 RETURNING "
        + Video.columnNames.joined(separator: ", ")

    public func deleteFollow(follower: Int64, followee: Int64) throws -> Bool {
        try connection.execute("DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2", [String(follower), String(followee)]).affected > 0
    }
}
