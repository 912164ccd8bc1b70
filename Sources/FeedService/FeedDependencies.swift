import Algorithms
import FeedIndex
import FeedStore

/// What one cached page depends on, so that a later index change can be judged against it:
/// does it leave the page as it is, change some items in place (a like count, a new display
/// name: the page is patched), or may it move things around (the page is composed again)?
///
/// "The region" is everything of the feed up to the end of the page: the page's own sections and
/// those before it. Videos after the region matter only by entering it.
///
/// The rules mirror the composition (``FeedComposer``) and err towards recomposing: a wrong
/// "recompose" costs time, a wrong "none" or "patch" would serve a stale page. The property test
/// composes every page afresh after random writes and compares.
struct FeedDependencies: Sendable {
    let viewer: Int64
    /// Whom the viewer followed: their new videos enter the followed part at the top, their
    /// follows move the suggestions' mutual counts.
    let followees: Set<Int64>
    /// Every video of the feed (240 at most), sorted: removing one shifts what follows it.
    var feedVideos: [Int64] = []
    /// The videos of the region, sorted.
    var regionVideos: [Int64] = []
    /// The region's videos when the page was composed and every video a shift brought into it
    /// since, sorted: what the page registers as shown (``PageInterests/videos``). A video a
    /// shift pushed out of the region stays: registering it again under the feed's other videos
    /// would move it between two lists on every shift, and a change to it costs a page one
    /// judgement at most.
    var watchedVideos: [Int64] = []
    /// The popular videos of the region in rank order, with their keys when composed (kept
    /// current by patches).
    var regionPopular: [(id: Int64, key: PopularityKey)] = []
    /// Whether this is the feed's last page: then anything added to the feed shows on it (or
    /// changes its next cursor).
    var pageIsLast = false
    /// Users whose profile the region shows (the viewer, authors, suggested users), sorted.
    var shownUsers: [Int64] = []
    /// The carousel on the page, in order: who, with how many mutual followees, at which follower rank
    /// (kept current by patches).
    var suggestionOrder: [(id: Int64, mutuals: Int64, rank: FollowerRankKey)] = []
    /// The last suggestion when the carousel is on the page and full; nil when it is not full
    /// (then it shows everyone the viewer may follow, and only a new user changes it).
    var suggestionFloor: Suggestion?
    /// The carousel is on the page.
    var suggestionsOnPage = false
    /// The carousel exists but lies outside the page: only its presence matters.
    var suggestionsOffPage = false

    init(viewer: Int64, followees: Set<Int64>) {
        self.viewer = viewer
        self.followees = followees
    }

    /// What a change does to the page.
    enum Effect: Equatable {
        case none
        /// The video's item changed in place.
        case patchVideo(Int64)
        /// The user's profile changed: their items (header, videos) change in place.
        case patchUser(Int64)
        /// A suggested user's follower count (or profile) changed without moving them.
        case patchSuggestion(Int64)
        /// A followee's new video: it may be the newest of the feed, at the top of the grid (the
        /// page cache checks that and what follows from it; ``insertFirst(_:region:)``).
        case insertFollowed(VideoRef)
        /// The carousel on the page may rank its users otherwise, or show others (a followee's
        /// follow moved mutual counts; a user's follower count moved them past a neighbour or
        /// into a full carousel): it is asked again; nothing else of the page changes.
        case refreshSuggestions
        case recompose
    }

    /// What `change` does to the page; a patch also updates these dependencies (the video's new
    /// rank). `view` is the index now (for mutual counts).
    mutating func effect(of change: IndexChange, view: IndexView) -> Effect {
        switch change {
        case .reset, .ads:
            return .recompose
        case let .video(id, author, before, after):
            return videoEffect(id: id, author: author, before: before, after: after)
        case let .user(id, before, after, profileChanged):
            if suggestionOrder.contains(where: { $0.id == id }) {
                // A suggested user may also author videos of the region: a new profile patches
                // those items as well as the card.
                let effect = suggestionEffect(id: id, after: after)
                guard profileChanged else { return effect }
                // Their videos in the region are patched with the card, not with a carousel
                // ranked again.
                return effect == .patchSuggestion(id) ? .patchUser(id) : .recompose
            }
            if shownUsers.containsSorted(id) {
                if after == nil { return .recompose }
                if profileChanged { return .patchUser(id) }
            }
            if suggestionsOffPage, before == nil || after == nil { return .recompose }
            // Could this user now enter the carousel?
            guard suggestionsOnPage, let after, id != viewer, !followees.contains(id) else { return .none }
            // A carousel that is not full already shows everyone the viewer may follow.
            guard let suggestionFloor else { return before == nil ? .recompose : .none }
            guard before == nil || before?.followerCount != after.followerCount else { return .none }
            // Everyone ranking before the floor is shown, so an unseen candidate has at most the
            // floor's mutual count: it can only enter by a better follower rank. Check that
            // first; count its mutual followees only then.
            guard after < FollowerRankKey(suggestionFloor.user.value) else { return .none }
            if suggestionFloor.mutualCount == 0 { return .refreshSuggestions }
            var mutuals: Int64 = 0
            for followee in followees where view.follows(followee, id) { mutuals += 1 }
            return mutuals >= suggestionFloor.mutualCount ? .refreshSuggestions : .none
        case let .follow(follower, followee, _):
            if follower == viewer { return .recompose }
            // A followee's follows count only as mutual followees of the carousel's candidates:
            // whether the carousel is there at all does not depend on them.
            guard followees.contains(follower), suggestionsOnPage else { return .none }
            return mutualsEffect(of: followee, view: view)
        }
    }

    /// A followee followed or unfollowed `user`: `user`'s mutual followee count moved, and only
    /// theirs. A card that keeps its place is patched (its count is on it); someone unseen who
    /// stays behind the last card of a full carousel changes nothing; anything else asks for
    /// the carousel again. Counted from `view` (the index now), so several follows of one user
    /// in a batch give the same count, whatever their order.
    private mutating func mutualsEffect(of user: Int64, view: IndexView) -> Effect {
        // The viewer and whom they follow are not candidates.
        guard user != viewer, !followees.contains(user) else { return .none }
        var mutuals: Int64 = 0
        for followee in followees where view.follows(followee, user) { mutuals += 1 }
        if let index = suggestionOrder.firstIndex(where: { $0.id == user }) {
            let moved = (mutuals: mutuals, rank: suggestionOrder[index].rank)
            if index > 0, !Self.ranksBefore(card(index - 1), moved) { return .refreshSuggestions }
            if index + 1 < suggestionOrder.count {
                guard Self.ranksBefore(moved, card(index + 1)) else { return .refreshSuggestions }
            } else if suggestionFloor != nil, mutuals < suggestionOrder[index].mutuals {
                // The last card of a full carousel ranking lower may be overtaken by someone unseen.
                return .refreshSuggestions
            }
            suggestionOrder[index].mutuals = mutuals
            return .patchSuggestion(user)
        }
        // A carousel that is not full shows every candidate: one it lacks is not a user now.
        guard suggestionFloor != nil, !suggestionOrder.isEmpty else { return .refreshSuggestions }
        guard let record = view.user(user) else { return .none }
        return Self.ranksBefore((mutuals, FollowerRankKey(record.value)), card(suggestionOrder.count - 1)) ? .refreshSuggestions : .none
    }

    /// Card `index`'s place in the carousel's order.
    private func card(_ index: Int) -> (mutuals: Int64, rank: FollowerRankKey) {
        (suggestionOrder[index].mutuals, suggestionOrder[index].rank)
    }

    /// The carousel's order: more mutual followees first, then the better follower rank.
    private static func ranksBefore(_ lhs: (mutuals: Int64, rank: FollowerRankKey), _ rhs: (mutuals: Int64, rank: FollowerRankKey)) -> Bool {
        lhs.mutuals != rhs.mutuals ? lhs.mutuals > rhs.mutuals : lhs.rank < rhs.rank
    }

    private mutating func videoEffect(id: Int64, author: Int64, before: PopularityKey?, after: PopularityKey?) -> Effect {
        guard let after else {
            // Removed: what followed it moves up.
            return feedVideos.containsSorted(id) ? .recompose : .none
        }
        let followed = followees.contains(author)
        guard let before else {
            // Added: a followee's video is the newest of the followed part.
            if pageIsLast { return .recompose }
            if followed { return .insertFollowed(VideoRef(id: id, author: author)) }
            return entersRegion(after) ? .recompose : .none
        }
        guard regionVideos.containsSorted(id) else {
            // Changed outside the region: a followed video keeps its place (time order); a
            // popular one matters only if it climbs into the region.
            return !followed && entersRegion(after) ? .recompose : .none
        }
        if followed { return .patchVideo(id) }
        guard let index = regionPopular.firstIndex(where: { $0.id == id }) else { return .recompose }
        if after < before {
            // Ranks better: it must stay behind the one before it.
            guard index == 0 || regionPopular[index - 1].key < after else { return .recompose }
        } else if before < after {
            // Ranks worse: it must stay ahead of the one after it; the last of the region could
            // be overtaken by a video we do not track.
            guard index + 1 < regionPopular.count, after < regionPopular[index + 1].key else { return .recompose }
        }
        regionPopular[index].key = after
        return .patchVideo(id)
    }

    /// Records that `video` became the first of the region (`region`, the region's videos in
    /// feed order before it, which loses its last): the region's sets, its popular part and the
    /// users it shows follow. The feed keeps its size (it holds ``FeedComposer/maxVideos``, so
    /// one video leaves its end); the one that leaves stays in `feedVideos`, which may name more
    /// videos than the feed holds (a change to it only recomposes for nothing).
    ///
    /// - Returns: The region after it, or nil when the region's last video is not the one its
    ///   popular part says (recompose then).
    mutating func insertFirst(_ video: VideoRef, region: [VideoRef]) -> [VideoRef]? {
        guard let dropped = region.last else { return nil }
        if !followees.contains(dropped.author) {
            guard regionPopular.last?.id == dropped.id else { return nil }
            regionPopular.removeLast()
        }
        var updated: [VideoRef] = []
        updated.reserveCapacity(region.count)
        updated.append(video)
        updated.append(contentsOf: region.dropLast())
        feedVideos.insertSorted(video.id)
        watchedVideos.insertSorted(video.id)
        // The sets moved by one video in and one out, not sorted again (they were a third of
        // this, for a page of a 240-video feed): the same lists as sorting the region's.
        regionVideos.removeSorted(dropped.id)
        let position = regionVideos.partitioningIndex { $0 >= video.id }
        regionVideos.insert(video.id, at: position)
        shownUsers.insertSorted(video.author)
        if dropped.author != video.author, dropped.author != viewer, !suggestionOrder.contains(where: { $0.id == dropped.author }),
            !updated.contains(where: { $0.author == dropped.author })
        {
            shownUsers.removeSorted(dropped.author)
        }
        assert(regionVideos == updated.map(\.id).sorted(), "a shift's region videos differ from the region's")
        assert(
            shownUsers == ([viewer] + suggestionOrder.map(\.id) + updated.map(\.author)).sortedUnique(), "a shift's shown users differ from the region's")
        return updated
    }

    /// Records the carousel `suggestions` (as many cards as the page shows) and the users the
    /// page shows with it; `region` is the region's videos in feed order.
    mutating func refresh(_ suggestions: [Suggestion], region: [VideoRef]) {
        suggestionOrder = suggestions.map { ($0.user.value.id, $0.mutualCount, FollowerRankKey($0.user.value)) }
        suggestionFloor = suggestions.count == FeedComposer.maxSuggestions ? suggestions.last : nil
        shownUsers = ([viewer] + suggestionOrder.map(\.id) + region.map(\.author)).sortedUnique()
    }

    /// A suggested user changed: patch their card if they keep their place in the carousel, or
    /// ask for the carousel again.
    private mutating func suggestionEffect(id: Int64, after: FollowerRankKey?) -> Effect {
        guard let after, let index = suggestionOrder.firstIndex(where: { $0.id == id }) else { return .recompose }
        let moved = (mutuals: suggestionOrder[index].mutuals, rank: after)
        if index > 0, !Self.ranksBefore(card(index - 1), moved) { return .refreshSuggestions }
        if index + 1 < suggestionOrder.count {
            guard Self.ranksBefore(moved, card(index + 1)) else { return .refreshSuggestions }
        } else if suggestionFloor != nil, suggestionOrder[index].rank < after {
            // The last card of a full carousel ranking lower may be overtaken by someone unseen.
            return .refreshSuggestions
        }
        suggestionOrder[index].rank = after
        return .patchSuggestion(id)
    }

    /// Whether a popular video ranking at `key` lands in the region.
    private func entersRegion(_ key: PopularityKey) -> Bool {
        guard let last = regionPopular.last?.key else { return false }
        return key < last
    }
}

extension Array where Element == Int64 {
    /// Whether the array, sorted ascending, contains `value` (binary search).
    func containsSorted(_ value: Int64) -> Bool {
        let position = partitioningIndex { $0 >= value }
        return position < count && self[position] == value
    }

    /// The array sorted, without repeats: the array itself (no copy) when it already is, as the
    /// dependencies' lists are when a page registers them again (a shifted page sorted its feed's
    /// 240 videos and its shown users each time: 26,000 instructions of a poll).
    func sortedUnique() -> [Int64] {
        if isSortedUnique { return self }
        var result = sorted()
        var write = 0
        for read in result.indices where read == 0 || result[read] != result[write - 1] {
            result[write] = result[read]
            write += 1
        }
        result.removeSubrange(write...)
        return result
    }

    /// Whether each element is greater than the one before.
    var isSortedUnique: Bool {
        withUnsafeBufferPointer { elements in
            for index in elements.indices.dropFirst() where elements[index - 1] >= elements[index] { return false }
            return true
        }
    }

    /// The elements of this sorted, repeat-free array that `other` (sorted, repeat-free) lacks,
    /// by one merge of the two.
    func subtractingSorted(_ other: [Int64]) -> [Int64] {
        var result: [Int64] = []
        result.reserveCapacity(count)
        var position = 0
        for value in self {
            while position < other.count, other[position] < value { position += 1 }
            if position < other.count, other[position] == value { continue }
            result.append(value)
        }
        return result
    }

    /// Inserts `value` at its place in this sorted array unless it holds it.
    mutating func insertSorted(_ value: Int64) {
        let position = partitioningIndex { $0 >= value }
        if position == count || self[position] != value { insert(value, at: position) }
    }

    /// Removes one `value` from this sorted array, if it holds it.
    mutating func removeSorted(_ value: Int64) {
        let position = partitioningIndex { $0 >= value }
        if position < count, self[position] == value { remove(at: position) }
    }
}
