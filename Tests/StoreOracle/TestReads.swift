public import FeedStore

// Reads the tests make to check what a write did, on either backend, that production never
// makes (the feed index loads whole tables and re-reads rows by id). Written over the reader's
// own primitives, so they need nothing of a backend beyond `FeedStoreReader`.

extension FeedStoreReader {
    /// The user with this id, or nil.
    public func user(id: Int64) throws(FeedStoreError) -> User? { try record(User.self, id: id) }
    /// The video with this id, or nil.
    public func video(id: Int64) throws(FeedStoreError) -> Video? { try record(Video.self, id: id) }
    /// The ad with this id (active or not), or nil.
    public func ad(id: Int64) throws(FeedStoreError) -> Ad? { try record(Ad.self, id: id) }

    /// Every ad, active or not, by id.
    public func allAds() throws(FeedStoreError) -> [Ad] {
        var ads: [Ad] = []
        try forEach(Ad.self) { ads.append($0) }
        return ads
    }

    /// The ids `userID` follows, ascending. Walks every follow edge.
    public func followees(of userID: Int64) throws(FeedStoreError) -> [Int64] {
        var followees: [Int64] = []
        try forEachFollow { follower, followee in
            if follower == userID { followees.append(followee) }
        }
        return followees
    }

    /// The ids following `userID`, ascending. Walks every follow edge.
    public func followers(of userID: Int64) throws(FeedStoreError) -> [Int64] {
        var followers: [Int64] = []
        try forEachFollow { follower, followee in
            if followee == userID { followers.append(follower) }
        }
        return followers
    }

    /// The change-log entries after `sequence`, at most 10,000.
    public func changes(after sequence: Int64) throws(FeedStoreError) -> [ChangeEntry] {
        try changes(after: sequence, limit: 10_000)
    }

    /// The oldest sequence number still in the change log (sequences start at 1), or nil when it
    /// is empty.
    public func oldestChangeSequence() throws(FeedStoreError) -> Int64? {
        try changes(after: 0, limit: 1).first?.sequence
    }
}
