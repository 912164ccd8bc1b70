public import FeedStore

// The index's catch-up read in one statement: one statement sees one snapshot, so the entries,
// the rows they name and the change version need no transaction around them, and cost one round
// trip where BEGIN with the log, the rows, and COMMIT cost three. Every replica reads every
// group back this way, so this is most of the statements a write costs the cluster.

extension PostgresFeedStore {
    public func changesWithRows(after sequence: Int64, limit: Int) throws(FeedStoreError) -> ChangesWithRows {
        do {
            let result: PostgresRows
            if let group = currentGroup {  // inside a group: its connection sees its writes
                result = try connection(settling: group).execute(CatchUpStatement.sql, [String(sequence), String(max(1, limit))])
            } else {
                result = try pool.withConnection { connection in try connection.execute(CatchUpStatement.sql, [String(sequence), String(max(1, limit))]) }
            }
            return try CatchUpStatement.decode(result)
        } catch {
            throw Self.mapped(error)
        }
    }
}

/// The catch-up statement: rows tagged `m` (the change version), `e` (an entry), `u` (a user),
/// `v` (a video) and `f` (an edge that exists), every value as text, padded with NULLs to one
/// width.
enum CatchUpStatement {
    private static let width = max(User.columnNames.count, Video.columnNames.count, 5)

    /// `columns` as text, padded to ``width``.
    private static func padded(_ columns: [String]) -> String {
        (columns.map { "\($0)::text" } + Array(repeating: "NULL", count: width - columns.count)).joined(separator: ", ")
    }

    private static func kinds(_ kinds: [ChangeKind]) -> String { kinds.map { "'\($0.rawValue)'" }.joined(separator: ", ") }

    /// Entries after $1, at most $2, and what ``FeedStore/ChangeEntry/namedRows(_:)`` names.
    static let sql = """
        WITH entries AS (
            SELECT seq, kind, key, other_key, committed_at FROM change_log WHERE seq > $1::bigint ORDER BY seq LIMIT $2::bigint
        )
        SELECT 'm', \(padded(["change_version"])) FROM store_meta WHERE id = 1
        UNION ALL
        SELECT 'e', \(padded(["seq", "kind", "key", "other_key", "committed_at"])) FROM entries
        UNION ALL
        SELECT 'u', \(padded(User.columnNames)) FROM users WHERE id IN (
            SELECT key FROM entries WHERE kind IN (\(kinds([.userCreated, .userUpdated, .userDeleted, .followed, .unfollowed])))
            UNION SELECT other_key FROM entries WHERE kind IN (\(kinds([.followed, .unfollowed])))
        )
        UNION ALL
        SELECT 'v', \(padded(Video.columnNames)) FROM videos WHERE id IN (
            SELECT key FROM entries WHERE kind IN (\(kinds([.videoCreated, .videoUpdated, .videoDeleted])))
        )
        UNION ALL
        SELECT 'f', \(padded(["follower_id", "followee_id"])) FROM follows WHERE (follower_id, followee_id) IN (
            SELECT key, other_key FROM entries WHERE kind IN (\(kinds([.followed, .unfollowed])))
        )
        """

    private static let undecodable = FeedStoreError.storage(code: .corrupt, message: "a catch-up row does not decode")

    /// What the statement's rows say.
    static func decode(_ result: PostgresRows) throws(FeedStoreError) -> ChangesWithRows {
        var read = ChangesWithRows(entries: [], rows: ChangedRows(), changeVersion: 0)
        let userColumns = User.columnNames
        let videoColumns = Video.columnNames
        func integer(_ value: String?) throws(FeedStoreError) -> Int64 {
            guard let value, let integer = Int64(value) else { throw undecodable }
            return integer
        }
        for row in result.rows {
            guard row.count == width + 1 else { throw undecodable }
            let values = row.dropFirst()
            switch row[0] {
            case "m":
                read.changeVersion = try integer(values.first ?? nil)
            case "e":
                guard let kind = values[values.startIndex + 1].flatMap(ChangeKind.init(rawValue:)) else { throw undecodable }
                read.entries.append(
                    ChangeEntry(
                        sequence: try integer(values[values.startIndex]), kind: kind, key: try integer(values[values.startIndex + 2]),
                        otherKey: try values[values.startIndex + 3].map { value throws(FeedStoreError) in try integer(value) },
                        committedAt: try integer(values[values.startIndex + 4])))
            case "u":
                let user = try User(values: values.prefix(userColumns.count).map { $0.map(ColumnValue.text) ?? .null }, names: userColumns)
                read.rows.users[user.id] = user
            case "v":
                let video = try Video(values: values.prefix(videoColumns.count).map { $0.map(ColumnValue.text) ?? .null }, names: videoColumns)
                read.rows.videos[video.id] = video
            case "f":
                read.rows.follows.insert(FollowEdge(follower: try integer(values[values.startIndex]), followee: try integer(values[values.startIndex + 1])))
            default:
                throw undecodable
            }
        }
        // UNION ALL keeps each part's order in practice, but promises none.
        read.entries.sort { $0.sequence < $1.sequence }
        return read
    }
}
