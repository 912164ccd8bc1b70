import FeedStore

/// A consistent view of the index for the duration of one ``FeedIndex/read(_:)``: the queries
/// a feed is composed from. Each answers exactly what the store's SQL query of the same name
/// answers (`FeedReader`), from memory.
public struct IndexView {
    let state: IndexState
    let ring: ChangeRing

    /// The changes applied after `sequence`, oldest first, or nil when the index no longer
    /// remembers all of them (assume anything changed).
    public func changes(after sequence: Int64) -> [IndexChange]? { ring.changes(after: sequence) }

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
    /// descending), at most `limit`: a k-way merge of the followees' timelines.
    ///
    /// - Complexity: O((k + limit) log k) for k followees.
    public func followedVideos(viewer: Int64, limit: Int) -> [Revised<Video>] {
        guard limit > 0, let authors = state.followees[viewer] else { return [] }
        var heads = TimelineHeap()
        for author in authors {
            guard let timeline = state.timelines[author], !timeline.isEmpty else { continue }
            heads.push(TimelineCursor(key: timeline[timeline.count - 1], author: author, position: timeline.count - 1))
        }
        var result: [Revised<Video>] = []
        result.reserveCapacity(min(limit, 256))
        while result.count < limit, var top = heads.pop() {
            if let video = state.videos[top.key.id] { result.append(video) }
            if top.position > 0, let timeline = state.timelines[top.author] {
                top.position -= 1
                top.key = timeline[top.position]
                heads.push(top)
            }
        }
        return result
    }

    /// The most liked videos (likes, then id, descending) whose author is not in
    /// `excludingAuthors`, at most `limit`.
    ///
    /// - Complexity: O(limit + s) for s skipped videos.
    public func popularVideos(limit: Int, excludingAuthors: Set<Int64>) -> [Revised<Video>] {
        guard limit > 0 else { return [] }
        var result: [Revised<Video>] = []
        result.reserveCapacity(min(limit, 256))
        for key in state.popularity {
            guard let video = state.videos[key.id] else { continue }
            if excludingAuthors.contains(video.value.authorID) { continue }
            result.append(video)
            if result.count == limit { break }
        }
        return result
    }

    /// Up to `limit` users `viewer` may want to follow: ranked by how many of `viewer`'s
    /// followees follow them, then follower count (descending), then id; filled in with the most
    /// followed users when fewer have a mutual followee. Never `viewer` or someone followed.
    ///
    /// - Complexity: O(h + c log limit) for the h edges leaving `viewer`'s followees and c
    ///   candidates, plus the fill-in walk.
    public func followSuggestions(for viewer: Int64, limit: Int) -> [Suggestion] {
        guard limit > 0 else { return [] }
        let followed = state.followees[viewer] ?? []
        var mutuals: [Int64: Int64] = [:]
        for followee in followed {
            for candidate in state.followees[followee] ?? [] where candidate != viewer && !followed.contains(candidate) {
                mutuals[candidate, default: 0] += 1
            }
        }
        // Best `limit` candidates by (mutuals desc, followers desc, id asc).
        var best: [Suggestion] = []
        best.reserveCapacity(limit + 1)
        for (id, count) in mutuals {
            guard let user = state.users[id] else { continue }
            let suggestion = Suggestion(user: user, mutualCount: count)
            if best.count == limit, let last = best.last, !(suggestion.ranksBefore(last)) { continue }
            let position = best.partitioningIndex { suggestion.ranksBefore($0) }
            best.insert(suggestion, at: position)
            if best.count > limit { best.removeLast() }
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

/// One author's place in the newest-first merge.
struct TimelineCursor {
    var key: TimelineKey
    var author: Int64
    var position: Int
}

/// A binary max-heap of timeline cursors by key (newest on top).
struct TimelineHeap {
    private var items: [TimelineCursor] = []

    mutating func push(_ item: TimelineCursor) {
        items.append(item)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[parent].key < items[child].key else { break }
            items.swapAt(parent, child)
            child = parent
        }
    }

    mutating func pop() -> TimelineCursor? {
        guard !items.isEmpty else { return nil }
        let top = items[0]
        let last = items.removeLast()
        guard !items.isEmpty else { return top }
        items[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var largest = parent
            if left < items.count, items[largest].key < items[left].key { largest = left }
            if right < items.count, items[largest].key < items[right].key { largest = right }
            if largest == parent { break }
            items.swapAt(parent, largest)
            parent = largest
        }
        return top
    }
}
