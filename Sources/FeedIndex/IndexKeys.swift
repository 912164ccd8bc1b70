public import FeedStore

/// A video's place in the popularity order: most liked first, ties broken by the newer id.
/// `a < b` means `a` ranks before `b`.
public struct PopularityKey: Comparable, Hashable, Sendable {
    /// Likes when the key was taken.
    public var likeCount: Int64
    /// The video.
    public var id: Int64

    /// The key of `video` as it is now.
    public init(_ video: Video) {
        likeCount = video.likeCount
        id = video.id
    }

    public static func < (lhs: PopularityKey, rhs: PopularityKey) -> Bool {
        (lhs.likeCount, lhs.id) > (rhs.likeCount, rhs.id)
    }
}

/// A user's place in the "most followed" order: most followers first, ties by the smaller id.
/// `a < b` means `a` ranks before `b`.
public struct FollowerRankKey: Comparable, Hashable, Sendable {
    /// Followers when the key was taken.
    public var followerCount: Int64
    /// The user.
    public var id: Int64

    /// The key of `user` as it is now.
    public init(_ user: User) {
        followerCount = user.followerCount
        id = user.id
    }

    public static func < (lhs: FollowerRankKey, rhs: FollowerRankKey) -> Bool {
        if lhs.followerCount != rhs.followerCount { return lhs.followerCount > rhs.followerCount }
        return lhs.id < rhs.id
    }
}

/// A video's place in one author's timeline, and in a feed's followed part: ascending
/// (`createdAt`, `id`); feeds read it from the end, newest first.
package struct TimelineKey: Comparable, Hashable, Sendable {
    var createdAt: Int64
    var id: Int64

    package init(_ video: Video) {
        createdAt = video.createdAt
        id = video.id
    }

    package static func < (lhs: TimelineKey, rhs: TimelineKey) -> Bool {
        (lhs.createdAt, lhs.id) < (rhs.createdAt, rhs.id)
    }
}

/// A record with the change-log position of its last change: the index's version of it, which
/// renderers use to know whether bytes they made from it are still current.
public struct Revised<Value: Sendable>: Sendable {
    /// The record.
    public var value: Value
    /// The sequence number of the change that last touched it.
    public var revision: Int64
}
