import GRDB

/// The SQL of the hot read queries, kept in one place so tests can run `EXPLAIN QUERY PLAN` on
/// exactly what the store executes. Every value is a `?` placeholder bound at execution.
package enum FeedQueries {
    /// Every follow edge, by follower then followee (the index load); the same text in both
    /// dialects, having no parameters.
    package static let followEdges = "SELECT follower_id, followee_id FROM follows ORDER BY follower_id, followee_id"

    /// Followees of `?1`, ascending. Primary key range of `follows`.
    static let followeeIDs = "SELECT followee_id FROM follows WHERE follower_id = ?1 ORDER BY followee_id"

    /// Newest `?2` video keys of author `?1`. Backward range scan of the covering index
    /// `videos_by_author_time`.
    static let followedPageFirst = """
        SELECT created_at, id FROM videos
        WHERE author_id = ?1
        ORDER BY created_at DESC, id DESC
        LIMIT ?2
        """

    /// Newest `?4` video keys of author `?1` strictly older than (`?2`, `?3`). Same index, the
    /// row-value bound seeks directly to the position.
    static let followedPageAfter = """
        SELECT created_at, id FROM videos
        WHERE author_id = ?1 AND (created_at, id) < (?2, ?3)
        ORDER BY created_at DESC, id DESC
        LIMIT ?4
        """

    /// Every video, most liked first. Backward scan of `videos_by_popularity`; the caller stops
    /// stepping once it has enough rows, so the cost is the number of rows read.
    static let popular = "SELECT * FROM videos ORDER BY like_count DESC, id DESC"

    /// Same as ``popular`` with a limit, used when nothing is excluded.
    static let popularLimited = "SELECT * FROM videos ORDER BY like_count DESC, id DESC LIMIT ?1"

    /// Users followed by the followees of `?1` that `?1` does not follow (and not `?1`), with how
    /// many of `?1`'s followees follow each, best first, at most `?2`. Reads only the 2-hop
    /// neighbourhood of `?1` through the primary key of `follows`.
    static let suggestionsByMutuals = """
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
    static let usersByPopularity = "SELECT * FROM users ORDER BY follower_count DESC, id"

    /// The rows of `table` whose ids are in the JSON array `?1`. One primary key lookup per id;
    /// one cached statement whatever the number of ids (the list is a single bound value).
    static func byIDs(_ table: String) -> String { "SELECT * FROM \(table) WHERE id IN (SELECT value FROM json_each(?1))" }

    /// Active ads by id. Range of `ads_active`.
    static let activeAds = "SELECT * FROM ads WHERE active = 1 ORDER BY id"

    /// The change version and the ad epoch (one row).
    static let meta = "SELECT change_version, ad_epoch FROM store_meta WHERE id = 1"

    /// One snapshot by its key.
    static let snapshot = "SELECT * FROM snapshots WHERE viewer_id = ?1 AND id = ?2"

    /// The queries whose plans must use an index, with sample arguments, for the plan tests.
    static let indexedQueries: [(name: String, sql: String, arguments: StatementArguments)] = [
        ("followeeIDs", followeeIDs, [1]),
        ("followedPageFirst", followedPageFirst, [1, 10]),
        ("followedPageAfter", followedPageAfter, [1, 0, 0, 10]),
        ("popularLimited", popularLimited, [10]),
        ("popular", popular, []),
        ("suggestionsByMutuals", suggestionsByMutuals, [1, 10]),
        ("usersByPopularity", usersByPopularity, []),
        ("activeAds", activeAds, []),
        ("usersByIDs", byIDs(User.table), ["[1,2]"]),
        ("videosByIDs", byIDs(Video.table), ["[1,2]"]),
        ("snapshot", snapshot, [1, "x"]),
    ]
}

/// Read access to one consistent state of the store, handed to the closure of
/// ``FeedStore/read(_:)``.
///
/// Everything read through one `FeedReader` comes from the same database snapshot (SQLite WAL
/// read transaction), including ``changeVersion()``: a feed composed inside one `read` can be
/// cached under that version without racing concurrent writes.
///
/// A `FeedReader` is valid only inside the closure it was given to: do not store it or pass it
/// to another thread.
public struct FeedReader: FeedStoreReader {
    let db: Database

    init(_ db: Database) {
        self.db = db
    }

    // MARK: Versions

    /// The change version of this snapshot of the store (see ``FeedStore/changeVersion``).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(1).
    public func changeVersion() throws(FeedStoreError) -> Int64 {
        try meta().changeVersion
    }

    /// The ad epoch of this snapshot of the store (see ``AdInventory/epoch``).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(1).
    public func adEpoch() throws(FeedStoreError) -> Int64 {
        try meta().adEpoch
    }

    func meta() throws(FeedStoreError) -> (changeVersion: Int64, adEpoch: Int64) {
        try mappingErrors {
            guard let row = try Row.fetchOne(db.cachedStatement(sql: FeedQueries.meta)) else {
                throw FeedStoreError.storage(code: -1, message: "store_meta row is missing")
            }
            return (row[0], row[1])
        }
    }

    // MARK: Users

    /// The user with this handle, or `nil`.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n), unique index lookup.
    public func user(handle: String) throws(FeedStoreError) -> User? {
        try mappingErrors {
            try User.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM users WHERE handle = ?1"), arguments: [handle])
        }
    }

    // MARK: Records

    public func record<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws(FeedStoreError) -> Record? {
        try mappingErrors { try Record.fetchOne(db, key: id) }
    }

    /// One primary key lookup per id, in one statement (the ids are one bound JSON array).
    public func records<Record: StoredRecord & Identifiable<Int64>>(
        _ type: Record.Type, ids: some Sequence<Int64>
    ) throws(FeedStoreError) -> [Int64: Record] {
        try mappingErrors {
            var result: [Int64: Record] = [:]
            let rows = try Record.fetchCursor(db.cachedStatement(sql: FeedQueries.byIDs(Record.table)), arguments: [Self.jsonArray(ids)])
            while let record = try rows.next() {
                result[record.id] = record
            }
            return result
        }
    }

    // MARK: Follows

    /// The ids of the users `userID` follows, ascending.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + k) for k followees, primary key range.
    public func followees(of userID: Int64) throws(FeedStoreError) -> [Int64] {
        try mappingErrors {
            try Int64.fetchAll(db.cachedStatement(sql: FeedQueries.followeeIDs), arguments: [userID])
        }
    }

    /// The ids of the users who follow `userID`, ascending, at most `limit` (clamped to
    /// ``FeedStore/maximumLimit``).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + limit), range of `follows_by_followee`.
    public func followers(of userID: Int64, limit: Int) throws(FeedStoreError) -> [Int64] {
        guard limit > 0 else { return [] }
        let limit = min(limit, FeedStore.maximumLimit)
        return try mappingErrors {
            try Int64.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT follower_id FROM follows WHERE followee_id = ?1 ORDER BY follower_id LIMIT ?2
                        """),
                arguments: [userID, limit])
        }
    }

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

    // MARK: Videos

    /// Videos by the authors `viewer` follows, newest first (`created_at` descending, then `id`
    /// descending), at most `limit`.
    ///
    /// The query never scans the store: it is a k-way merge over the index
    /// `videos_by_author_time`, one backward range per followed author, reading keys only (the
    /// index covers them) in pages that grow as an author keeps winning, then fetching the
    /// `limit` winning rows by primary key.
    ///
    /// - Parameters:
    ///   - viewer: the user whose followees' videos are wanted.
    ///   - limit: the maximum number of videos; 0 or less returns `[]`, more than
    ///     ``FeedStore/maximumLimit`` is clamped to it.
    ///   - before: when set, only videos strictly after this position in the order (the
    ///     ``Video/feedCursor`` of the last video of the previous page).
    ///   - includeOwn: also merge the viewer's own videos.
    /// - Returns: at most `limit` videos in feed order.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O((k + limit) · log n) index work for k followed authors, independent of the
    ///   number of videos in the store and of how prolific the authors are.
    public func followedVideos(
        viewer: Int64, limit: Int, before: VideoCursor? = nil, includeOwn: Bool = false
    ) throws(FeedStoreError) -> [Video] {
        guard limit > 0 else { return [] }
        let limit = min(limit, FeedStore.maximumLimit)
        return try mappingErrors {
            var authors = try Int64.fetchAll(db.cachedStatement(sql: FeedQueries.followeeIDs), arguments: [viewer])
            if includeOwn, !authors.contains(viewer) {
                authors.append(viewer)
            }
            let ids = try mergeNewest(authors: authors, limit: limit, before: before)
            return try videosInOrder(ids)
        }
    }

    /// The videos of one author, newest first (`created_at` descending, then `id` descending), at
    /// most `limit` (clamped to ``FeedStore/maximumLimit``), strictly after `before` when given.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + limit), one range of `videos_by_author_time`.
    public func videos(authorID: Int64, limit: Int, before: VideoCursor? = nil) throws(FeedStoreError) -> [Video] {
        guard limit > 0 else { return [] }
        let limit = min(limit, FeedStore.maximumLimit)
        return try mappingErrors {
            try videosInOrder(mergeNewest(authors: [authorID], limit: limit, before: before))
        }
    }

    /// The most popular videos first (`like_count` descending, then `id` descending), skipping
    /// videos whose author is in `excludingAuthors`, at most `limit`.
    ///
    /// - Parameters:
    ///   - limit: the maximum number of videos; 0 or less returns `[]`, more than
    ///     ``FeedStore/maximumLimit`` is clamped to it.
    ///   - excludingAuthors: authors whose videos to skip (e.g. the viewer and the authors the
    ///     followed section already shows). Skipped rows are still read.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + limit + s) where s is the number of skipped videos met before the
    ///   limit is reached; a backward walk of `videos_by_popularity`, no sort.
    public func popularVideos(limit: Int, excludingAuthors: Set<Int64> = []) throws(FeedStoreError) -> [Video] {
        guard limit > 0 else { return [] }
        let limit = min(limit, FeedStore.maximumLimit)
        return try mappingErrors {
            if excludingAuthors.isEmpty {
                return try Video.fetchAll(db.cachedStatement(sql: FeedQueries.popularLimited), arguments: [limit])
            }
            var result: [Video] = []
            result.reserveCapacity(limit)
            let cursor = try Video.fetchCursor(db.cachedStatement(sql: FeedQueries.popular))
            while result.count < limit, let video = try cursor.next() {
                if !excludingAuthors.contains(video.authorID) {
                    result.append(video)
                }
            }
            return result
        }
    }

    // MARK: Ads

    /// The active ads, ordered by id, with the epoch of the inventory they belong to.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + a) for a active ads.
    public func activeAds() throws(FeedStoreError) -> AdInventory {
        let epoch = try adEpoch()
        let ads = try mappingErrors { try Ad.fetchAll(db.cachedStatement(sql: FeedQueries.activeAds)) }
        return AdInventory(epoch: epoch, ads: ads)
    }

    /// Every ad, active or not, ordered by id (for administration; the ads table is small).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(a) for a ads.
    public func allAds() throws(FeedStoreError) -> [Ad] {
        try mappingErrors { try Ad.fetchAll(db.cachedStatement(sql: "SELECT * FROM ads ORDER BY id")) }
    }

    // MARK: Suggestions

    /// Up to `limit` users `viewer` may want to follow: not `viewer`, not already followed.
    ///
    /// Ranking: the number of `viewer`'s followees who follow the candidate (descending), then
    /// the candidate's follower count (descending), then id (ascending). When fewer than `limit`
    /// candidates have a mutual followee, the rest is filled with the most followed users
    /// (mutual count 0), in the same follower count / id order.
    ///
    /// - Parameters:
    ///   - viewer: the user to suggest for (need not exist: an unknown viewer gets the most
    ///     followed users).
    ///   - limit: the maximum number of suggestions, 10 by default; 0 or less returns `[]`,
    ///     more than ``FeedStore/maximumLimit`` is clamped to it.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(h log h) for the h follow edges leaving `viewer`'s followees (the 2-hop
    ///   neighbourhood), plus O(k + limit) index steps for the fill-in; independent of the
    ///   number of users and of how many followers anyone has.
    public func followSuggestions(for viewer: Int64, limit: Int = 10) throws(FeedStoreError) -> [FollowSuggestion] {
        guard limit > 0 else { return [] }
        let limit = min(limit, FeedStore.maximumLimit)
        return try mappingErrors {
            var suggestions: [FollowSuggestion] = []
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: FeedQueries.suggestionsByMutuals), arguments: [viewer, limit])
            while let row = try rows.next() {
                suggestions.append(FollowSuggestion(user: try User(row: row), mutualCount: row["mutual_count"]))
            }
            guard suggestions.count < limit else { return suggestions }

            var skip = Set(try Int64.fetchAll(db.cachedStatement(sql: FeedQueries.followeeIDs), arguments: [viewer]))
            skip.insert(viewer)
            for suggestion in suggestions {
                skip.insert(suggestion.user.id)
            }
            let users = try User.fetchCursor(db.cachedStatement(sql: FeedQueries.usersByPopularity))
            while suggestions.count < limit, let user = try users.next() {
                if !skip.contains(user.id) {
                    suggestions.append(FollowSuggestion(user: user, mutualCount: 0))
                }
            }
            return suggestions
        }
    }

    // MARK: Snapshots

    /// The snapshot `id` saved for `viewer`, or `nil` (never saved, or pruned).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n), primary key lookup.
    public func snapshot(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        try mappingErrors {
            try StoredSnapshot.fetchOne(db.cachedStatement(sql: FeedQueries.snapshot), arguments: [viewer, id])
        }
    }

    // MARK: Whole store

    /// The number of rows of every table.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(n): SQLite counts by walking the smallest index of each table (about
    ///   10 ms for 500,000 videos). Meant for start-up and operators, not for requests.
    public func counts() throws(FeedStoreError) -> StoreCounts {
        try mappingErrors {
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT COUNT(*) FROM users), (SELECT COUNT(*) FROM videos),
                               (SELECT COUNT(*) FROM ads), (SELECT COUNT(*) FROM follows),
                               (SELECT COUNT(*) FROM snapshots)
                        """)
            else { return StoreCounts(users: 0, videos: 0, ads: 0, follows: 0, snapshots: 0) }
            return StoreCounts(users: row[0], videos: row[1], ads: row[2], follows: row[3], snapshots: row[4])
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
    static func jsonArray(_ ids: some Sequence<Int64>) -> String {
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

    /// Fetches the videos with these ids and returns them in the order of `ids` (missing ids are
    /// skipped).
    func videosInOrder(_ ids: [Int64]) throws -> [Video] {
        guard !ids.isEmpty else { return [] }
        let byID = try records(Video.self, ids: ids)
        return ids.compactMap { byID[$0] }
    }

    /// The ids of the `limit` newest videos (strictly after `before`) among `authors`, newest
    /// first: a k-way merge of per-author index ranges.
    func mergeNewest(authors: [Int64], limit: Int, before: VideoCursor?) throws -> [Int64] {
        guard !authors.isEmpty, limit > 0 else { return [] }
        let first = try db.cachedStatement(sql: FeedQueries.followedPageFirst)
        let after = try db.cachedStatement(sql: FeedQueries.followedPageAfter)

        func page(author: Int64, after cursor: VideoKey?, count: Int) throws -> [VideoKey] {
            let statement: Statement
            if let cursor {
                statement = after
                statement.setUncheckedArguments([author, cursor.createdAt, cursor.id, count])
            } else {
                statement = first
                statement.setUncheckedArguments([author, count])
            }
            var keys: [VideoKey] = []
            keys.reserveCapacity(count)
            let rows = try Row.fetchCursor(statement)
            while let row = try rows.next() {
                keys.append(VideoKey(createdAt: row[0], id: row[1]))
            }
            return keys
        }

        // A first page of about twice the fair share of each author: most authors never need a
        // second page, and a prolific one gets pages that double in size.
        let firstPageSize = min(limit, max(4, 2 * (limit / authors.count) + 1))
        let start = before.map { VideoKey(createdAt: $0.createdAt, id: $0.id) }
        var streams: [AuthorStream] = []
        streams.reserveCapacity(authors.count)
        var heap = MaxHeap()
        for author in authors {
            let keys = try page(author: author, after: start, count: firstPageSize)
            guard let head = keys.first else { continue }
            heap.push(HeapEntry(key: head, stream: streams.count))
            streams.append(
                AuthorStream(
                    author: author, keys: keys, position: 0,
                    exhausted: keys.count < firstPageSize, nextPageSize: firstPageSize * 2))
        }

        var ids: [Int64] = []
        ids.reserveCapacity(limit)
        while ids.count < limit, let top = heap.pop() {
            ids.append(top.key.id)
            guard ids.count < limit else { break }
            var stream = streams[top.stream]
            stream.position += 1
            if stream.position == stream.keys.count, !stream.exhausted {
                let wanted = min(stream.nextPageSize, limit - ids.count)
                stream.keys = try page(author: stream.author, after: top.key, count: wanted)
                stream.position = 0
                stream.exhausted = stream.keys.count < wanted
                stream.nextPageSize = min(stream.nextPageSize * 2, limit)
            }
            if stream.position < stream.keys.count {
                heap.push(HeapEntry(key: stream.keys[stream.position], stream: top.stream))
            }
            streams[top.stream] = stream
        }
        return ids
    }
}

@available(*, unavailable, message: "a FeedReader is only valid inside its read closure")
extension FeedReader: Sendable {}

/// A video's position in feed order.
struct VideoKey: Comparable {
    var createdAt: Int64
    var id: Int64

    static func < (lhs: VideoKey, rhs: VideoKey) -> Bool {
        (lhs.createdAt, lhs.id) < (rhs.createdAt, rhs.id)
    }
}

/// One author's page of keys during the merge.
struct AuthorStream {
    var author: Int64
    var keys: [VideoKey]
    var position: Int
    var exhausted: Bool
    var nextPageSize: Int
}

struct HeapEntry {
    var key: VideoKey
    var stream: Int
}

/// A binary max-heap on `HeapEntry.key`.
struct MaxHeap {
    private var storage: [HeapEntry] = []

    var isEmpty: Bool { storage.isEmpty }

    mutating func push(_ entry: HeapEntry) {
        storage.append(entry)
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard storage[parent].key < storage[child].key else { break }
            storage.swapAt(parent, child)
            child = parent
        }
    }

    mutating func pop() -> HeapEntry? {
        guard !storage.isEmpty else { return nil }
        let top = storage[0]
        let last = storage.removeLast()
        if !storage.isEmpty {
            storage[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var largest = parent
                if left < storage.count, storage[largest].key < storage[left].key { largest = left }
                if right < storage.count, storage[largest].key < storage[right].key { largest = right }
                if largest == parent { break }
                storage.swapAt(parent, largest)
                parent = largest
            }
        }
        return top
    }
}
