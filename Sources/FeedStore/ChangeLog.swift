import GRDB

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

extension FeedReader {
    /// The change-log entries with a sequence number greater than `sequence`, oldest first, at
    /// most `limit`.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n + k) for k entries, a range of the primary key.
    public func changes(after sequence: Int64, limit: Int) throws(FeedStoreError) -> [ChangeEntry] {
        try mappingErrors {
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: FeedQueries.changesAfter), arguments: [sequence, max(1, limit)])
            var entries: [ChangeEntry] = []
            while let row = try rows.next() {
                let kindText: String = row[1]
                guard let kind = ChangeKind(rawValue: kindText) else {
                    throw FeedStoreError.storage(code: -1, message: "unknown change kind \(kindText) at \(row[0] as Int64)")
                }
                entries.append(ChangeEntry(sequence: row[0], kind: kind, key: row[2], otherKey: row[3], committedAt: row[4]))
            }
            return entries
        }
    }
}

extension FeedStore {
    /// Deletes change-log entries older than the newest `keep`, so the log does not grow
    /// without bound. Readers that fall further behind reload everything (a gap in
    /// ``FeedReader/changes(after:limit:)`` tells them).
    ///
    /// - Returns: the number of entries deleted.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    @discardableResult
    public func pruneChangeLog(keeping keep: Int64) throws(FeedStoreError) -> Int {
        try writeWithoutVersion { db in
            try db.cachedStatement(
                sql: """
                    DELETE FROM change_log WHERE seq <= (SELECT change_version FROM store_meta WHERE id = 1) - ?1
                    """
            ).execute(arguments: [max(0, keep)])
            return db.changesCount
        }
    }
}

extension FeedQueries {
    /// Log entries after `?1`, oldest first, at most `?2`. Range of the primary key.
    static let changesAfter = """
        SELECT seq, kind, key, other_key, committed_at FROM change_log WHERE seq > ?1 ORDER BY seq LIMIT ?2
        """

    /// Appends one entry.
    static let appendChange = """
        INSERT INTO change_log (seq, kind, key, other_key, committed_at) VALUES (?1, ?2, ?3, ?4, ?5)
        """
}
