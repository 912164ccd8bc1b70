import Algorithms
public import FeedStore
import HeapModule

/// A consistent view of the index for the duration of one ``FeedIndex/read(_:)``: the queries
/// a feed is composed from. Each answers exactly what the store's SQL query of the same name
/// answers (the tests' `StoreOracle`, over SQLite), from memory.
public struct IndexView {
    let state: IndexState
    let ring: ChangeRing

    /// The changes applied after `sequence`, oldest first, or nil when the index no longer
    /// remembers all of them (assume anything changed).
    public func changes(after sequence: Int64) -> [IndexChange]? { ring.changes(after: sequence) }

    /// The changes applied after `sequence` and up to `last`, oldest first, or nil when the
    /// index no longer remembers all of them.
    public func changes(after sequence: Int64, through last: Int64) -> [IndexChange]? { ring.changes(after: sequence, through: last) }

    /// The ordinals of the changes the index remembers: each change applied is numbered, from
    /// 0, and keeps its number (``change(ordinal:)``).
    public var changeOrdinals: Range<Int64> { ring.oldestOrdinal..<ring.nextOrdinal }

    /// The change numbered `ordinal` and the sequence it was applied at, or nil when the index
    /// no longer remembers it.
    public func change(ordinal: Int64) -> (sequence: Int64, change: IndexChange)? { ring.change(ordinal: ordinal) }

    /// The change-log position this view reflects.
    public var sequence: Int64 { state.sequence }

    /// The user with this id.
    public func user(_ id: Int64) -> Revised<User>? { state.users[id] }

    /// The video with this id.
    public func video(_ id: Int64) -> Revised<Video>? { state.videos[id] }

    /// Who `user` follows.
    public func followees(of user: Int64) -> Set<Int64> { state.followees[user] ?? [] }

    /// Who follows `user`.
    public func followers(of user: Int64) -> Set<Int64> { state.followers[user] ?? [] }

    /// Whether `follower` follows `followee`.
    public func follows(_ follower: Int64, _ followee: Int64) -> Bool { state.follows(follower, followee) }

    /// The active ads by id and their epoch.
    public var ads: AdInventory { state.ads }

    /// Videos by the authors `viewer` follows, newest first (`createdAt`, then `id`,
    /// descending), at most `limit`: a k-way merge of the followees' timelines. Returns ids and
    /// authors only; ``video(_:)`` has the rest.
    ///
    /// - Complexity: O((k + limit) log k) for k followees.
    public func followedVideos(viewer: Int64, limit: Int) -> [VideoRef] {
        guard limit > 0, let authors = state.followees[viewer] else { return [] }
        // One stream per followee with videos; the heap holds only keys and stream numbers.
        var timelines: [[TimelineKey]] = []
        var streamAuthors: [Int64] = []
        var positions: [Int] = []
        timelines.reserveCapacity(authors.count)
        var heads = Heap<TimelineCursor>()
        for author in authors {
            guard let timeline = state.timelines[author], !timeline.isEmpty else { continue }
            heads.insert(TimelineCursor(key: timeline[timeline.count - 1], stream: timelines.count))
            positions.append(timeline.count - 1)
            streamAuthors.append(author)
            timelines.append(timeline)
        }
        var result: [VideoRef] = []
        result.reserveCapacity(min(limit, 256))
        while result.count < limit, let top = heads.popMax() {
            result.append(VideoRef(id: top.key.id, author: streamAuthors[top.stream]))
            let position = positions[top.stream] - 1
            if position >= 0 {
                positions[top.stream] = position
                heads.insert(TimelineCursor(key: timelines[top.stream][position], stream: top.stream))
            }
        }
        return result
    }

    /// The most liked videos (likes, then id, descending) whose author is not in
    /// `excludingAuthors`, at most `limit`, with the popularity key of the last one.
    ///
    /// - Complexity: O(limit + s) for s skipped videos.
    public func popularVideos(limit: Int, excludingAuthors: Set<Int64>) -> [(video: VideoRef, key: PopularityKey)] {
        guard limit > 0 else { return [] }
        var result: [(video: VideoRef, key: PopularityKey)] = []
        result.reserveCapacity(min(limit, 256))
        for key in state.popularity {
            guard let video = state.videos[key.id] else { continue }
            let author = video.value.authorID
            if !excludingAuthors.isEmpty, excludingAuthors.contains(author) { continue }
            result.append((VideoRef(id: key.id, author: author), key))
            if result.count == limit { break }
        }
        return result
    }

    /// Whether ``followSuggestions(for:limit:)`` has anyone to suggest: someone who is neither
    /// `viewer` nor followed by them.
    ///
    /// - Complexity: O(1).
    public func hasSuggestions(for viewer: Int64) -> Bool {
        let excluded = (state.users[viewer] == nil ? 0 : 1) + (state.followees[viewer]?.count ?? 0)
        return state.users.count > excluded
    }

    /// Up to `limit` users `viewer` may want to follow: ranked by how many of `viewer`'s
    /// followees follow them, then follower count (descending), then id; filled in with the most
    /// followed users when fewer have a mutual followee. Never `viewer` or someone followed.
    ///
    /// - Complexity: O(h + c log c) for the h edges leaving `viewer`'s followees and the c
    ///   candidates tied with the `limit`-th best mutual count, plus the fill-in walk.
    public func followSuggestions(for viewer: Int64, limit: Int) -> [Suggestion] {
        guard limit > 0 else { return [] }
        let followed = state.followees[viewer] ?? []
        var edges = 0
        for followee in followed { edges += state.followees[followee]?.count ?? 0 }
        var table = CountingTable(expected: edges + followed.count + 1)
        table.exclude(viewer)
        for followee in followed { table.exclude(followee) }
        for followee in followed {
            for candidate in state.followees[followee] ?? [] { table.add(candidate) }
        }
        // Only candidates with at least the limit-th best count can make the list: find that
        // count (the `limit` largest, kept in a small sorted array), then look up and rank only
        // the candidates that reach it.
        var largest: [Int32] = []
        largest.reserveCapacity(limit + 1)
        table.forEachCounted { _, count in
            guard largest.count < limit || count > largest[largest.count - 1] else { return }
            largest.insert(count, at: largest.partitioningIndex { $0 < count })
            if largest.count > limit { largest.removeLast() }
        }
        var best: [Suggestion] = []
        if let threshold = largest.last {
            table.forEachCounted { id, count in
                guard count >= threshold, let user = state.users[id] else { return }
                best.append(Suggestion(user: user, mutualCount: Int64(count)))
            }
            best.sort { $0.ranksBefore($1) }
            if best.count > limit { best.removeSubrange(limit...) }
        }
        guard best.count < limit else { return best }
        var skip = followed
        skip.insert(viewer)
        for suggestion in best { skip.insert(suggestion.user.value.id) }
        for key in state.followerRank {
            guard !skip.contains(key.id), let user = state.users[key.id] else { continue }
            best.append(Suggestion(user: user, mutualCount: 0))
            if best.count == limit { break }
        }
        return best
    }
}

/// A video in a feed's order: its id and author, without the record.
public struct VideoRef: Sendable, Hashable {
    public var id: Int64
    public var author: Int64

    public init(id: Int64, author: Int64) {
        self.id = id
        self.author = author
    }
}

/// A suggested user and how many of the viewer's followees follow them.
public struct Suggestion: Sendable {
    public var user: Revised<User>
    public var mutualCount: Int64

    public init(user: Revised<User>, mutualCount: Int64) {
        self.user = user
        self.mutualCount = mutualCount
    }

    /// The suggestion order: more mutual followees, then more followers, then smaller id.
    public func ranksBefore(_ other: Suggestion) -> Bool {
        if mutualCount != other.mutualCount { return mutualCount > other.mutualCount }
        return FollowerRankKey(user.value) < FollowerRankKey(other.user.value)
    }
}

/// One followee's place in the newest-first merge, ordered by the key of its next video.
struct TimelineCursor: Comparable {
    var key: TimelineKey
    var stream: Int

    static func < (lhs: TimelineCursor, rhs: TimelineCursor) -> Bool { lhs.key < rhs.key }
    static func == (lhs: TimelineCursor, rhs: TimelineCursor) -> Bool { lhs.key == rhs.key }
}
