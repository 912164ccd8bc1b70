public import FeedStore
import GRDB
public import SQLiteStore

// The feed queries of the SQLite store from before the in-memory index: what the followed,
// popular and suggestion sections were composed from, straight from SQL, one query per part.
// Production composes every feed from FeedIndex now; these stay as the independent
// implementation the index-based feeds are compared with (FeedServiceTests' SQLOracle), and as
// the store's query benchmarks. FeedStoreTests' FeedQueryTests prove them against brute force.

/// A position in the "newest first" video order (`created_at` descending, `id` descending).
///
/// `SQLiteReader.followedVideos(viewer:limit:before:includeOwn:)` returns the videos strictly after
/// this position, so passing the `feedCursor` of the last video of a page gives the next page.
public struct VideoCursor: Sendable, Hashable {
    /// The `created_at` of the last video already seen, Unix milliseconds.
    public var createdAt: Int64
    /// The `id` of the last video already seen.
    public var id: Int64
}

extension Video {
    /// The position of this video in the "newest first" order, usable as a page cursor for
    /// `SQLiteReader.followedVideos(viewer:limit:before:includeOwn:)`.
    public var feedCursor: VideoCursor { VideoCursor(createdAt: createdAt, id: id) }
}

/// A user the viewer may want to follow, returned by `SQLiteReader.followSuggestions(for:limit:)`.
public struct FollowSuggestion: Sendable, Hashable {
    /// The suggested user.
    public var user: User
    /// How many of the viewer's followees follow ``user`` (0 for users suggested by popularity
    /// only).
    public var mutualCount: Int64
}

extension SQLiteReader {
    /// The largest `limit` the list queries honour; larger limits are clamped to it. A feed page
    /// never needed more, and the bound kept one request's work bounded.
    public static let maximumLimit = 1000

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
    ///     ``maximumLimit`` is clamped to it.
    ///   - before: when set, only videos strictly after this position in the order (the
    ///     `feedCursor` of the last video of the previous page).
    ///   - includeOwn: also merge the viewer's own videos.
    /// - Returns: at most `limit` videos in feed order.
    /// - Complexity: O((k + limit) · log n) index work for k followed authors, independent of the
    ///   number of videos in the store and of how prolific the authors are.
    public func followedVideos(
        viewer: Int64, limit: Int, before: VideoCursor? = nil, includeOwn: Bool = false
    ) throws(FeedStoreError) -> [Video] {
        guard limit > 0 else { return [] }
        let limit = min(limit, Self.maximumLimit)
        return try mappingErrors {
            var authors = try Int64.fetchAll(db.cachedStatement(sql: OracleQueries.followeeIDs), arguments: [viewer])
            if includeOwn, !authors.contains(viewer) {
                authors.append(viewer)
            }
            let ids = try mergeNewest(authors: authors, limit: limit, before: before)
            return try videosInOrder(ids)
        }
    }

    /// The videos of one author, newest first (`created_at` descending, then `id` descending), at
    /// most `limit` (clamped to ``maximumLimit``), strictly after `before` when given.
    ///
    /// - Complexity: O(log n + limit), one range of `videos_by_author_time`.
    public func videos(authorID: Int64, limit: Int, before: VideoCursor? = nil) throws(FeedStoreError) -> [Video] {
        guard limit > 0 else { return [] }
        let limit = min(limit, Self.maximumLimit)
        return try mappingErrors {
            try videosInOrder(mergeNewest(authors: [authorID], limit: limit, before: before))
        }
    }

    /// The most popular videos first (`like_count` descending, then `id` descending), skipping
    /// videos whose author is in `excludingAuthors`, at most `limit`.
    ///
    /// - Parameters:
    ///   - limit: the maximum number of videos; 0 or less returns `[]`, more than
    ///     ``maximumLimit`` is clamped to it.
    ///   - excludingAuthors: authors whose videos to skip (e.g. the viewer and the authors the
    ///     followed section already shows). Skipped rows are still read.
    /// - Complexity: O(log n + limit + s) where s is the number of skipped videos met before the
    ///   limit is reached; a backward walk of `videos_by_popularity`, no sort.
    public func popularVideos(limit: Int, excludingAuthors: Set<Int64> = []) throws(FeedStoreError) -> [Video] {
        guard limit > 0 else { return [] }
        let limit = min(limit, Self.maximumLimit)
        return try mappingErrors {
            if excludingAuthors.isEmpty {
                return try Video.fetchAll(db.cachedStatement(sql: OracleQueries.popularLimited), arguments: [limit])
            }
            var result: [Video] = []
            result.reserveCapacity(limit)
            let cursor = try Video.fetchCursor(db.cachedStatement(sql: OracleQueries.popular))
            while result.count < limit, let video = try cursor.next() {
                if !excludingAuthors.contains(video.authorID) {
                    result.append(video)
                }
            }
            return result
        }
    }

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
    ///     more than ``maximumLimit`` is clamped to it.
    /// - Complexity: O(h log h) for the h follow edges leaving `viewer`'s followees (the 2-hop
    ///   neighbourhood), plus O(k + limit) index steps for the fill-in; independent of the
    ///   number of users and of how many followers anyone has.
    public func followSuggestions(for viewer: Int64, limit: Int = 10) throws(FeedStoreError) -> [FollowSuggestion] {
        guard limit > 0 else { return [] }
        let limit = min(limit, Self.maximumLimit)
        return try mappingErrors {
            var suggestions: [FollowSuggestion] = []
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: OracleQueries.suggestionsByMutuals), arguments: [viewer, limit])
            while let row = try rows.next() {
                suggestions.append(FollowSuggestion(user: try User(row: row), mutualCount: row["mutual_count"]))
            }
            guard suggestions.count < limit else { return suggestions }

            var skip = Set(try Int64.fetchAll(db.cachedStatement(sql: OracleQueries.followeeIDs), arguments: [viewer]))
            skip.insert(viewer)
            for suggestion in suggestions {
                skip.insert(suggestion.user.id)
            }
            let users = try User.fetchCursor(db.cachedStatement(sql: OracleQueries.usersByPopularity))
            while suggestions.count < limit, let user = try users.next() {
                if !skip.contains(user.id) {
                    suggestions.append(FollowSuggestion(user: user, mutualCount: 0))
                }
            }
            return suggestions
        }
    }

    /// Fetches the videos with these ids and returns them in the order of `ids` (missing ids are
    /// skipped).
    private func videosInOrder(_ ids: [Int64]) throws -> [Video] {
        guard !ids.isEmpty else { return [] }
        let byID = try records(Video.self, ids: ids)
        return ids.compactMap { byID[$0] }
    }

    /// The ids of the `limit` newest videos (strictly after `before`) among `authors`, newest
    /// first: a k-way merge of per-author index ranges.
    private func mergeNewest(authors: [Int64], limit: Int, before: VideoCursor?) throws -> [Int64] {
        guard !authors.isEmpty, limit > 0 else { return [] }
        let first = try db.cachedStatement(sql: OracleQueries.followedPageFirst)
        let after = try db.cachedStatement(sql: OracleQueries.followedPageAfter)

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

/// A video's position in feed order.
private struct VideoKey: Comparable {
    var createdAt: Int64
    var id: Int64

    static func < (lhs: VideoKey, rhs: VideoKey) -> Bool {
        (lhs.createdAt, lhs.id) < (rhs.createdAt, rhs.id)
    }
}

/// One author's page of keys during the merge.
private struct AuthorStream {
    var author: Int64
    var keys: [VideoKey]
    var position: Int
    var exhausted: Bool
    var nextPageSize: Int
}

private struct HeapEntry {
    var key: VideoKey
    var stream: Int
}

/// A binary max-heap on `HeapEntry.key`.
private struct MaxHeap {
    private var storage: [HeapEntry] = []

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
