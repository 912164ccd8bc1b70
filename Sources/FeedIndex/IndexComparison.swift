extension FeedIndex {
    /// What differs between this index and `other` (empty when they hold the same records,
    /// orders, graph, ads and position): a consistency check for tests and operators, e.g.
    /// against an index freshly loaded from the store.
    public func differences(from other: FeedIndex) -> [String] {
        let mine = read { $0.state }
        let theirs = other.read { $0.state }
        var found: [String] = []
        func check(_ name: String, _ equal: Bool) {
            if !equal { found.append(name) }
        }
        check("sequence \(mine.sequence) vs \(theirs.sequence)", mine.sequence == theirs.sequence)
        check("users", mine.users.entries.map { [$0.id: $0.value.value] } == theirs.users.entries.map { [$0.id: $0.value.value] })
        check("videos", mine.videos.entries.map { [$0.id: $0.value.value] } == theirs.videos.entries.map { [$0.id: $0.value.value] })
        check("timelines", mine.timelines == theirs.timelines)
        check("popularity order", Array(mine.popularity) == Array(theirs.popularity))
        check("follower rank order", Array(mine.followerRank) == Array(theirs.followerRank))
        check("followees", mine.followees == theirs.followees)
        check("followers", mine.followers == theirs.followers)
        check("ads", mine.ads == theirs.ads)
        return found
    }
}
