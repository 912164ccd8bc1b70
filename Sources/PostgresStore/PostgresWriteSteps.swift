public import FeedStore

// Each staged write's step (``FeedStore/WriteStep``) as one PostgreSQL statement that makes its
// checks and writes only when they all pass: a like's row is inserted only when the video and
// the user exist and the count can move, and its count moves only when the row went in. So a
// refused step changes nothing, and a group can send the steps of all its writes in one
// pipeline (`PostgresFeedStore.performTogether(_:)`). Data-modifying CTEs of one statement see
// the same snapshot, which is why each later part reads what an earlier one returned rather
// than the table. The store_meta lock every content write holds first keeps other writers off
// the rows in between.

extension WriteStep {
    /// The statement that carries out this step, and its parameters.
    func statement() -> (sql: String, parameters: [String?]) {
        switch self {
        case .changeLike(let video, let user, let liking, let time):
            (liking ? StepStatements.like : StepStatements.unlike, [String(video), String(user), String(time)])
        case .insertVideo(let video):
            (StepStatements.insertVideo, video.insertedColumnValues.map(\.parameter))
        case .insertFollow(let follow):
            (StepStatements.insertFollow, [String(follow.followerID), String(follow.followeeID), String(follow.createdAt)])
        case .deleteFollow(let follower, let followee):
            (StepStatements.deleteFollow, [String(follower), String(followee)])
        case .updateVideo(let id, let changes, let time):
            (
                StepStatements.updateVideo,
                [
                    String(id), changes.title, changes.thumbnailURL, changes.durationSeconds.map { String($0) }, changes.likeCount.map { String($0) },
                    changes.viewCount.map { String($0) }, String(time),
                ]
            )
        }
    }

    /// The statement of this step in a group (``GroupStatements``): the same checks and change,
    /// and the change-log entry of the write, numbered from the group's counter, appended when
    /// the step changed the store (which is when its write stays); `committedAt` is the entry's
    /// time. Its answer reads as ``statement()``'s.
    func loggedStatement(committedAt: String) -> (sql: String, parameters: [String?]) {
        let (_, parameters) = statement()
        let sql =
            switch self {
            case .changeLike(_, _, let liking, _): liking ? StepStatements.loggedLike : StepStatements.loggedUnlike
            case .insertVideo: StepStatements.loggedInsertVideo
            case .insertFollow: StepStatements.loggedInsertFollow
            case .deleteFollow: StepStatements.loggedDeleteFollow
            case .updateVideo: StepStatements.loggedUpdateVideo
            }
        return (sql, parameters + [committedAt])
    }

    /// What the step found, from its statement's rows.
    ///
    /// - Throws: ``FeedStore/FeedStoreError/storage(code:message:)`` when the rows do not decode.
    func answer(from result: PostgresRows, on connection: PostgresConnection) throws(FeedStoreError) -> StepAnswer {
        switch self {
        case .changeLike:
            // video exists, user exists, the count is at its maximum, then the video's columns
            // (NULL when the like was not recorded).
            guard let row = result.rows.first, row.count == 3 + Video.columnNames.count else { throw StepStatements.undecodable }
            if row[0] != "t" { return .like(.videoMissing) }
            if row[1] != "t" { return .like(.userMissing) }
            if row[2] == "t" { return .like(.overflow) }
            guard row[3] != nil else { return .like(.refused) }
            return .like(.changed(try PostgresReader(connection: connection).decode(Video.self, Array(row[3...]))))
        case .insertVideo:
            return .videoInserted(result.firstValue.flatMap { Int64($0) })
        case .insertFollow:
            guard let row = result.rows.first, row.count == 3 else { throw StepStatements.undecodable }
            if row[0] != "t" { return .follow(.followerMissing) }
            if row[1] != "t" { return .follow(.followeeMissing) }
            return .follow(row[2] == "t" ? .inserted : .exists)
        case .deleteFollow:
            return .followDeleted(result.affected > 0)
        case .updateVideo:
            return .videoUpdated(try result.rows.first.map { row throws(FeedStoreError) in try PostgresReader(connection: connection).decode(Video.self, row) })
        }
    }
}

/// The statements of ``FeedStore/WriteStep``, built once.
enum StepStatements {
    static let undecodable = FeedStoreError.storage(code: .corrupt, message: "a write step's answer does not decode")

    private static let videoColumns = Video.columnNames.joined(separator: ", ")

    /// Video $1, user $2, at $3: the like row and the count's move, made only when both exist
    /// and the count is below its maximum, and the row was not there.
    static let like = likeChange(liking: true)

    /// Video $1, user $2, at $3: the like row deleted (it exists only when both do) and the
    /// count moved down, never below zero, when it was there.
    static let unlike = likeChange(liking: false)

    /// ``like`` and ``unlike`` logging their entry at $4 (see ``FeedStore/WriteStep/loggedStatement(committedAt:)``).
    static let loggedLike = likeChange(liking: true, logged: true)
    static let loggedUnlike = likeChange(liking: false, logged: true)

    /// The like or unlike statement, with the change-log entry's CTE when `logged`.
    private static func likeChange(liking: Bool, logged: Bool = false) -> String {
        let recording =
            liking
            ? """
            INSERT INTO likes (video_id, user_id, created_at)
                SELECT $1, $2, $3 FROM target, liker WHERE liker.present AND target.like_count < \(Int64.max)
                ON CONFLICT DO NOTHING RETURNING 1
            """ : "DELETE FROM likes WHERE video_id = $1 AND user_id = $2 RETURNING 1"
        let count = liking ? "like_count + 1" : "GREATEST(0, like_count - 1)"
        let overflows = liking ? "COALESCE((SELECT like_count FROM target) = \(Int64.max), false)" : "false"
        return """
            WITH target AS (SELECT like_count FROM videos WHERE id = $1::bigint),
            liker AS (SELECT EXISTS (SELECT 1 FROM users WHERE id = $2::bigint) AS present),
            recorded AS (\(recording)),
            counted AS (
                UPDATE videos SET like_count = \(count), updated_at = GREATEST($3::bigint, created_at)
                WHERE id = $1 AND EXISTS (SELECT 1 FROM recorded) RETURNING \(videoColumns)
            )\(logged ? ",\n" + loggedEntry(.videoUpdated, key: "$1::bigint", at: 4, from: "counted") : "")
                SELECT EXISTS (SELECT 1 FROM target), (SELECT present FROM liker), \(overflows), counted.*
            FROM (VALUES (1)) AS one LEFT JOIN counted ON true
            """
    }

    /// The CTE that appends a `kind` entry for `key` (and `otherKey`), at parameter `at`, numbered
    /// from the group's counter, once per row of `from` (one at most).
    private static func loggedEntry(_ kind: ChangeKind, key: String, otherKey: String = "NULL", at: Int, from: String) -> String {
        """
        logged AS (
            INSERT INTO change_log (seq, kind, key, other_key, committed_at)
            SELECT \(GroupStatements.nextSequence), '\(kind.rawValue)', \(key), \(otherKey), $\(at)::bigint FROM \(from)
        )
        """
    }

    /// ``insertVideo`` logging its entry after the video's columns.
    static let loggedInsertVideo = """
        WITH inserted AS (\(insertVideo)),
        \(loggedEntry(.videoCreated, key: "id", at: Video.insertedColumnNames.count + 1, from: "inserted"))
        SELECT id FROM inserted
        """

    /// ``insertFollow`` logging its entry at $4.
    static let loggedInsertFollow = followInsert(logged: true)

    /// ``deleteFollow`` logging its entry at $3; answers a row when the edge was there.
    static let loggedDeleteFollow = """
        WITH deleted AS (\(deleteFollow) RETURNING 1),
        \(loggedEntry(.unfollowed, key: "$1::bigint", otherKey: "$2::bigint", at: 3, from: "deleted"))
        SELECT 1 FROM deleted
        """

    /// ``updateVideo`` logging its entry at $8.
    static let loggedUpdateVideo = """
        WITH updated AS (\(updateVideo)),
        \(loggedEntry(.videoUpdated, key: "$1::bigint", at: 8, from: "updated"))
        SELECT * FROM updated
        """

    /// The new video's columns in parameters 1…n, inserted when its author exists; returns its
    /// id, or no row.
    static let insertVideo: String = {
        let columns = Video.insertedColumnNames
        let author = columns.firstIndex(of: Video.CodingKeys.authorID.rawValue)! + 1
        return """
            INSERT INTO videos (\(columns.joined(separator: ", ")))
            SELECT \(columns.indices.map { "$\($0 + 1)" }.joined(separator: ", "))
            WHERE EXISTS (SELECT 1 FROM users WHERE id = $\(author)) RETURNING id
            """
    }()

    /// Follower $1, followee $2, at $3: whether each exists, and whether the edge went in (only
    /// when both do and it was not there).
    static let insertFollow = followInsert()

    /// ``insertFollow``, with the change-log entry's CTE at $4 when `logged`.
    private static func followInsert(logged: Bool = false) -> String {
        """
        WITH follower AS (SELECT EXISTS (SELECT 1 FROM users WHERE id = $1::bigint) AS present),
        followee AS (SELECT EXISTS (SELECT 1 FROM users WHERE id = $2::bigint) AS present),
        inserted AS (
            INSERT INTO follows (follower_id, followee_id, created_at)
            SELECT $1, $2, $3::bigint FROM follower, followee WHERE follower.present AND followee.present
            ON CONFLICT DO NOTHING RETURNING 1
        )\(logged ? ",\n" + loggedEntry(.followed, key: "$1::bigint", otherKey: "$2::bigint", at: 4, from: "inserted") : "")
        SELECT follower.present, followee.present, EXISTS (SELECT 1 FROM inserted) FROM follower, followee
        """
    }

    static let deleteFollow = "DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2"

    /// Video $1: each of the fields $2… set unless NULL, `updated_at` to $7 (never before the
    /// creation); returns the row, or none.
    static let updateVideo: String = {
        typealias Column = Video.CodingKeys
        let fields: [(Column, String)] = [
            (.title, "text"), (.thumbnailURL, "text"), (.durationSeconds, "integer"), (.likeCount, "bigint"), (.viewCount, "bigint"),
        ]
        let assignments = fields.enumerated().map { index, field in "\(field.0.rawValue) = COALESCE($\(index + 2)::\(field.1), \(field.0.rawValue))" }
        return """
            UPDATE videos SET \(assignments.joined(separator: ", ")), \(Column.updatedAt.rawValue) = GREATEST($7::bigint, \(Column.createdAt.rawValue))
            WHERE id = $1::bigint RETURNING \(videoColumns)
            """
    }()
}

extension PostgresTransaction {
    /// The step's one statement (see ``FeedStore/WriteStep``): one round trip, with whatever
    /// the connection has queued.
    public func perform(_ step: WriteStep) throws -> StepAnswer {
        let (sql, parameters) = step.statement()
        return try step.answer(from: connection.execute(sql, parameters), on: connection)
    }
}
