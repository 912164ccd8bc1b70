public import GRDB

/// The SQL of the oracle's feed queries, kept in one place so the plan tests can run
/// `EXPLAIN QUERY PLAN` on exactly what the oracle executes. Every value is a `?` placeholder
/// bound at execution.
public enum OracleQueries {
    /// Followees of `?1`, ascending. Primary key range of `follows`.
    public static let followeeIDs = "SELECT followee_id FROM follows WHERE follower_id = ?1 ORDER BY followee_id"

    /// Newest `?2` video keys of author `?1`. Backward range scan of the covering index
    /// `videos_by_author_time`.
    public static let followedPageFirst = """
        SELECT created_at, id FROM videos
        WHERE author_id = ?1
        ORDER BY created_at DESC, id DESC
        LIMIT ?2
        """

    /// Newest `?4` video keys of author `?1` strictly older than (`?2`, `?3`). Same index, the
    /// row-value bound seeks directly to the position.
    public static let followedPageAfter = """
        SELECT created_at, id FROM videos
        WHERE author_id = ?1 AND (created_at, id) < (?2, ?3)
        ORDER BY created_at DESC, id DESC
        LIMIT ?4
        """

    /// Every video, most liked first. Backward scan of `videos_by_popularity`; the caller stops
    /// stepping once it has enough rows, so the cost is the number of rows read.
    public static let popular = "SELECT * FROM videos ORDER BY like_count DESC, id DESC"

    /// Same as ``popular`` with a limit, used when nothing is excluded.
    public static let popularLimited = "SELECT * FROM videos ORDER BY like_count DESC, id DESC LIMIT ?1"

    /// Users followed by the followees of `?1` that `?1` does not follow (and not `?1`), with how
    /// many of `?1`'s followees follow each, best first, at most `?2`. Reads only the 2-hop
    /// neighbourhood of `?1` through the primary key of `follows`.
    public static let suggestionsByMutuals = """
        SELECT users.*, mutuals.mutual_count
        FROM (
            SELECT second.followee_id AS candidate_id, COUNT(*) AS mutual_count
            FROM follows AS first
            JOIN follows AS second ON second.follower_id = first.followee_id
            WHERE first.follower_id = ?1 AND second.followee_id <> ?1
            GROUP BY second.followee_id
        ) AS mutuals
        JOIN users ON users.id = mutuals.candidate_id
        WHERE NOT EXISTS (
            SELECT 1 FROM follows AS own
            WHERE own.follower_id = ?1 AND own.followee_id = mutuals.candidate_id
        )
        ORDER BY mutuals.mutual_count DESC, users.follower_count DESC, users.id
        LIMIT ?2
        """

    /// Every user, most followed first, ties by id ascending. Scan of `users_by_popularity`;
    /// the caller stops stepping once it has enough rows.
    public static let usersByPopularity = "SELECT * FROM users ORDER BY follower_count DESC, id"

    /// The queries whose plans must use an index, with sample arguments, for the plan tests.
    public static let indexed: [(name: String, sql: String, arguments: StatementArguments)] = [
        ("followeeIDs", followeeIDs, [1]),
        ("followedPageFirst", followedPageFirst, [1, 10]),
        ("followedPageAfter", followedPageAfter, [1, 0, 0, 10]),
        ("popularLimited", popularLimited, [10]),
        ("popular", popular, []),
        ("suggestionsByMutuals", suggestionsByMutuals, [1, 10]),
        ("usersByPopularity", usersByPopularity, []),
    ]
}
