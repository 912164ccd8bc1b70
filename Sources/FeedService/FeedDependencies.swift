import FeedIndex

/// What one composed feed depends on, so that a later change can be judged against it: a change
/// that touches none of it leaves the feed as it was, and the cached page is served again
/// without composing anything.
///
/// The rules mirror the composition (``FeedComposer``) and err towards "affected": a wrong "yes"
/// costs one recomposition, a wrong "no" would serve a stale feed. The property tests compose
/// every feed afresh after random writes and compare.
struct FeedDependencies: Sendable {
    let viewer: Int64
    /// Whom the viewer followed: their new videos enter the followed part, their follows move
    /// the mutual counts of the suggestions.
    let followees: Set<Int64>
    /// Whether the feed has room for popular videos (the followed part was not full).
    var needsPopular = false
    /// The last popular video shown when the popular part was full: only a video ranking
    /// before it can enter. Nil with `needsPopular`: any video can.
    var popularFloor: PopularityKey?
    /// Every video of the feed, sorted (binary search: built once per composition, read rarely).
    var shownVideos: [Int64] = []
    /// Users whose profile the feed shows: the viewer (header), authors, suggested users;
    /// sorted, without repeats.
    var shownUsers: [Int64] = []
    /// The suggested users (their follower counts are shown too).
    var suggested: Set<Int64> = []
    /// The carousel exists but lies outside the page: only its presence matters, which a user
    /// appearing or disappearing may change.
    var suggestionsOffPage = false
    /// The last suggestion when the carousel was full; nil when it was not (then it shows every
    /// user the viewer may follow, and only a new user changes it).
    var suggestionFloor: Suggestion?

    init(viewer: Int64, followees: Set<Int64>) {
        self.viewer = viewer
        self.followees = followees
    }

    /// Whether `change` may alter the feed. `view` is the index now (for mutual counts).
    func isAffected(by change: IndexChange, view: IndexView) -> Bool {
        switch change {
        case .reset, .ads:
            return true
        case let .video(id, author, before, after):
            if shows(video: id) { return true }
            if followees.contains(author) {
                // A followee's new video is the newest of the followed part. Removing or
                // editing one not shown cannot change which ones are newest.
                return before == nil && after != nil
            }
            guard needsPopular, let after else { return false }
            guard let popularFloor else { return true }
            return after < popularFloor
        case let .user(id, before, after, profileChanged):
            if profileChanged, shownUsers.containsSorted(id) { return true }
            if suggestionsOffPage, before == nil || after == nil { return true }
            // Suggestions show follower counts.
            if suggested.contains(id) { return true }
            // Could this user now enter the carousel?
            guard let after, id != viewer, !followees.contains(id) else { return false }
            // A carousel that is not full already shows everyone the viewer may follow.
            guard let suggestionFloor else { return before == nil }
            guard before == nil || before?.followerCount != after.followerCount else { return false }
            guard let user = view.user(id) else { return true }
            var mutuals: Int64 = 0
            for followee in followees where view.follows(followee, id) { mutuals += 1 }
            return Suggestion(user: user, mutualCount: mutuals).ranksBefore(suggestionFloor)
        case let .follow(follower, _, _):
            return follower == viewer || followees.contains(follower)
        }
    }

    private func shows(video id: Int64) -> Bool {
        shownVideos.containsSorted(id)
    }
}

extension Array where Element == Int64 {
    /// Whether the array, sorted ascending, contains `value` (binary search).
    func containsSorted(_ value: Int64) -> Bool {
        let position = partitioningIndex { $0 >= value }
        return position < count && self[position] == value
    }

    /// The array sorted, without repeats.
    func sortedUnique() -> [Int64] {
        var result = sorted()
        var write = 0
        for read in result.indices where read == 0 || result[read] != result[write - 1] {
            result[write] = result[read]
            write += 1
        }
        result.removeSubrange(write...)
        return result
    }
}

extension Array {
    /// The first index whose element satisfies `predicate`, which must be false then true along
    /// the array (binary search).
    func partitioningIndex(where predicate: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if predicate(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
