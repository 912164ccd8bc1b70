/// What one committed write changed, as recorded in the `change_log` table in the same
/// transaction as the write.
///
/// The log is how readers that keep state in memory (the feed index; other processes on the
/// same file) learn what to refresh: they read the entries after the last sequence number they
/// applied and re-read the rows the keys name. An entry says *which* rows changed, not their
/// new values, so applying it is always "read the current row", whatever happened since.
public struct ChangeEntry: Sendable, Hashable {
    /// The store's change version right after this write; increases by 1 per write.
    public var sequence: Int64
    /// What kind of write it was.
    public var kind: ChangeKind
    /// The row it is about: a user, video or ad id, or the follower of a follow.
    public var key: Int64
    /// The followee of a follow or unfollow; nil otherwise.
    public var otherKey: Int64?
    /// When it was committed, Unix milliseconds (the store clock).
    public var committedAt: Int64

    /// Creates an entry (the store writes them; tests build them).
    public init(sequence: Int64, kind: ChangeKind, key: Int64, otherKey: Int64? = nil, committedAt: Int64) {
        self.sequence = sequence
        self.kind = kind
        self.key = key
        self.otherKey = otherKey
        self.committedAt = committedAt
    }
}

/// The kinds of change-log entries. The raw value is what the `kind` column holds.
public enum ChangeKind: String, Sendable, Hashable, CaseIterable {
    /// A user was created; `key` is the user.
    case userCreated = "user_created"
    /// A user's display name or avatar changed; `key` is the user.
    case userUpdated = "user_updated"
    /// A user was deleted with their videos and follows (both directions); `key` is the user.
    case userDeleted = "user_deleted"
    /// A video was created; `key` is the video.
    case videoCreated = "video_created"
    /// Some fields of a video changed; `key` is the video.
    case videoUpdated = "video_updated"
    /// A video was deleted; `key` is the video.
    case videoDeleted = "video_deleted"
    /// The ad inventory changed (an ad created, updated or deleted; the ad epoch moved);
    /// `key` is the ad.
    case adChanged = "ad_changed"
    /// `key` started following `otherKey` (both users' counts changed).
    case followed
    /// `key` stopped following `otherKey` (both users' counts changed).
    case unfollowed
    /// Many rows changed at once (seeding): a reader reloads everything.
    case reset
}

/// The change a write makes, before it has a sequence number.
public struct PendingChange: Sendable {
    /// What kind of write it is.
    public var kind: ChangeKind
    /// The row it is about (see ``ChangeEntry/key``).
    public var key: Int64
    /// The followee of a follow or unfollow.
    public var otherKey: Int64?

    /// Creates a change.
    public init(kind: ChangeKind, key: Int64, otherKey: Int64? = nil) {
        self.kind = kind
        self.key = key
        self.otherKey = otherKey
    }
}
