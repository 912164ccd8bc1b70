import Algorithms
import FeedStore

/// Everything the index holds. A plain value: ``FeedIndex`` guards it with a lock, the loader
/// and tests build it directly. Every mutation goes through the methods below, which keep the
/// orders (timelines, popularity, follower rank) consistent with the records and report what
/// changed.
struct IndexState {
    var users = DenseTable<Revised<User>>()
    var videos = DenseTable<Revised<Video>>()
    /// Per author, their videos ascending by (`createdAt`, `id`): read from the end, newest first.
    var timelines: [Int64: [TimelineKey]] = [:]
    /// Every video, most liked first.
    var popularity = SortedKeys<PopularityKey>()
    /// Every user, most followed first.
    var followerRank = SortedKeys<FollowerRankKey>()
    /// Who each user follows.
    var followees: [Int64: Set<Int64>] = [:]
    /// Who follows each user.
    var followers: [Int64: Set<Int64>] = [:]
    /// The active ads by id, and the inventory's epoch.
    var ads = AdInventory(epoch: 0, ads: [])
    /// The change-log position everything here reflects.
    var sequence: Int64 = 0

    // MARK: - Users

    /// Stores `user` (new or changed) and reports what changed; nil when nothing did.
    mutating func put(_ user: User, revision: Int64) -> IndexChange? {
        let before = users[user.id]
        if let before, before.value == user { return nil }
        if let before {
            followerRank.remove(FollowerRankKey(before.value))
        }
        followerRank.insert(FollowerRankKey(user))
        users[user.id] = Revised(value: user, revision: revision)
        let profileChanged =
            before.map {
                $0.value.handle != user.handle || $0.value.displayName != user.displayName || $0.value.avatarURL != user.avatarURL
            } ?? true
        return .user(
            id: user.id, before: before.map { FollowerRankKey($0.value) }, after: FollowerRankKey(user),
            profileChanged: profileChanged)
    }

    /// Removes a user record (their videos and edges are removed separately).
    mutating func removeUser(_ id: Int64) -> IndexChange? {
        guard let before = users.removeValue(forKey: id) else { return nil }
        followerRank.remove(FollowerRankKey(before.value))
        return .user(id: id, before: FollowerRankKey(before.value), after: nil, profileChanged: true)
    }

    // MARK: - Videos

    /// Stores `video` (new or changed) and reports what changed; nil when nothing did.
    mutating func put(_ video: Video, revision: Int64) -> IndexChange? {
        let before = videos[video.id]
        if let before, before.value == video { return nil }
        if let before {
            popularity.remove(PopularityKey(before.value))
            removeFromTimeline(before.value)
        }
        popularity.insert(PopularityKey(video))
        insertIntoTimeline(video)
        videos[video.id] = Revised(value: video, revision: revision)
        return .video(
            id: video.id, author: video.authorID, before: before.map { PopularityKey($0.value) },
            after: PopularityKey(video))
    }

    mutating func removeVideo(_ id: Int64) -> IndexChange? {
        guard let before = videos.removeValue(forKey: id)?.value else { return nil }
        popularity.remove(PopularityKey(before))
        removeFromTimeline(before)
        return .video(id: id, author: before.authorID, before: PopularityKey(before), after: nil)
    }

    private mutating func insertIntoTimeline(_ video: Video) {
        let key = TimelineKey(video)
        var timeline = timelines.removeValue(forKey: video.authorID) ?? []
        if let last = timeline.last, last < key {
            timeline.append(key)  // the usual case: a new video is the author's newest
        } else {
            timeline.insert(key, at: timeline.partitioningIndex { !($0 < key) })
        }
        timelines[video.authorID] = timeline
    }

    private mutating func removeFromTimeline(_ video: Video) {
        let key = TimelineKey(video)
        guard var timeline = timelines.removeValue(forKey: video.authorID) else { return }
        let position = timeline.partitioningIndex { !($0 < key) }
        if position < timeline.count, timeline[position] == key { timeline.remove(at: position) }
        if !timeline.isEmpty { timelines[video.authorID] = timeline }
    }

    // MARK: - Follows

    func follows(_ follower: Int64, _ followee: Int64) -> Bool {
        followees[follower]?.contains(followee) ?? false
    }

    /// Sets whether `follower` follows `followee`; reports the change, nil when there was none.
    mutating func setFollow(_ follower: Int64, _ followee: Int64, exists: Bool) -> IndexChange? {
        guard follows(follower, followee) != exists else { return nil }
        if exists {
            followees[follower, default: []].insert(followee)
            followers[followee, default: []].insert(follower)
        } else {
            followees[follower]?.remove(followee)
            if followees[follower]?.isEmpty == true { followees[follower] = nil }
            followers[followee]?.remove(follower)
            if followers[followee]?.isEmpty == true { followers[followee] = nil }
        }
        return .follow(follower: follower, followee: followee, added: exists)
    }
}
