import Algorithms
public import FeedIndex

/// What a page shows, in the terms of the index's changes: which records' changes may touch it.
/// Taken from the page's ``FeedDependencies``, it names a superset of the changes that affect
/// the page (every change ``FeedDependencies/effect(of:view:)`` would not call `none`), so an
/// ``InterestIndex`` can find the pages a change may touch without asking every page.
public struct PageInterests: Sendable, Equatable {
    /// Whose page it is.
    var viewer: Int64
    /// The videos of the region (the feed from its top to the page's end), with those shifts
    /// pushed out of it since the page was composed, sorted: a change to one of them may change
    /// the page.
    var videos: [Int64]
    /// The feed's other videos, sorted: only their removal changes the page (what followed them
    /// moves up). A like on one of them is not noted on the page: when they counted as `videos`,
    /// every like anywhere in a viewer's 240-video feed was judged by each poll of a 20-item
    /// page.
    var laterVideos: [Int64]
    /// Whose new videos enter the page (the followees), sorted.
    var authors: [Int64]
    /// Users whose profile or rank the page shows (the viewer, authors, suggested users), sorted.
    var users: [Int64]
    /// Whose follows move the page (the viewer and the followees), sorted.
    var followers: [Int64]
    /// Any new video changes the page (it is the feed's last page).
    var anyNewVideo: Bool
    /// Any user appearing or disappearing may change the page (the carousel is off the page, or
    /// on it and not full).
    var anyUserAddedOrRemoved: Bool
    /// A video ranking before this enters the page (the last popular video of the region).
    var popularThreshold: PopularityKey?
    /// A user ranking before this may enter the full carousel on the page.
    var suggestionFloor: FollowerRankKey?

    init(_ dependencies: FeedDependencies) {
        viewer = dependencies.viewer
        // The dependencies keep their lists sorted: taken as they are (checked in one pass each),
        // not sorted again for each page a shift registers anew.
        let watched = dependencies.watchedVideos.sortedUnique()
        videos = watched
        laterVideos = dependencies.feedVideos.sortedUnique().subtractingSorted(watched)
        let followees = dependencies.followees.sorted()
        authors = followees
        let shown = dependencies.shownUsers.sortedUnique()
        users =
            dependencies.suggestionOrder.allSatisfy { shown.containsSorted($0.id) }
            ? shown : (shown + dependencies.suggestionOrder.map(\.id)).sortedUnique()
        var followers = followees
        followers.insertSorted(dependencies.viewer)
        self.followers = followers
        anyNewVideo = dependencies.pageIsLast
        anyUserAddedOrRemoved = dependencies.suggestionsOffPage || (dependencies.suggestionsOnPage && dependencies.suggestionFloor == nil)
        popularThreshold = dependencies.regionPopular.last?.key
        suggestionFloor = Self.suggestionFloor(of: dependencies)
    }

    /// What a page's interests depend on: they are the same while this is. A composition fixes
    /// everything but the two thresholds, which patches move: the region's last popular video
    /// (a like on it) and the carousel's last card (the carousel ranked again into the same
    /// users, its last one with another follower count).
    struct Stamp: Hashable, Sendable {
        let composition: UInt64
        let popularThreshold: PopularityKey?
        let suggestionFloor: FollowerRankKey?

        init(_ dependencies: FeedDependencies, composition: UInt64) {
            self.composition = composition
            popularThreshold = dependencies.regionPopular.last?.key
            suggestionFloor = PageInterests.suggestionFloor(of: dependencies)
        }
    }

    /// The follower rank of the last card of the full carousel on the page; nil if none.
    static func suggestionFloor(of dependencies: FeedDependencies) -> FollowerRankKey? {
        dependencies.suggestionsOnPage ? dependencies.suggestionFloor.map { FollowerRankKey($0.user.value) } : nil
    }
}

/// Pages (any `Member`: a viewer's page with its parameters, a live stream) by what they show,
/// so that the members a batch of index changes may touch are found in time proportional to
/// them, not to all members: a change to a record no member shows costs a few hash lookups and
/// two binary searches.
///
/// Not thread-safe: one owner mutates it (the live streams' thread).
public struct InterestIndex<Member: Hashable & Sendable>: Sendable {
    private var slots: [Member: Int32] = [:]
    private var members: [Member?] = []
    private var interests: [PageInterests?] = []
    private var freeSlots: [Int32] = []
    private var byVideo: [Int64: SlotList] = [:]
    private var byLaterVideo: [Int64: SlotList] = [:]
    private var byAuthor: [Int64: SlotList] = [:]
    private var byUser: [Int64: SlotList] = [:]
    private var byFollower: [Int64: SlotList] = [:]
    private var anyNewVideo: Set<Int32> = []
    private var anyUserAddedOrRemoved: Set<Int32> = []
    /// Thresholds in ascending order, ties by slot.
    private var popular = SortedSlots<PopularityKey>()
    private var floors = SortedSlots<FollowerRankKey>()

    public init() {}

    /// Members registered.
    public var count: Int { slots.count }

    /// Every member registered.
    public var allMembers: Dictionary<Member, Int32>.Keys { slots.keys }

    /// Registers `member` as showing what `interests` name, replacing what it was registered
    /// with. Costs the difference between the two: a page whose ids stayed the same (a like
    /// moved its last popular video's rank) touches no list. Returns the member's slot.
    @discardableResult
    public mutating func update(_ member: Member, _ new: PageInterests) -> Int32 {
        let slot: Int32
        if let existing = slots[member] {
            slot = existing
            guard let old = interests[Int(slot)] else {
                add(new, slot: slot)
                return slot
            }
            if old != new { replace(old, with: new, slot: slot) }
            return slot
        } else if let free = freeSlots.popLast() {
            slot = free
            slots[member] = slot
            members[Int(slot)] = member
        } else {
            slot = Int32(members.count)
            slots[member] = slot
            members.append(member)
            interests.append(nil)
        }
        add(new, slot: slot)
        return slot
    }

    /// Forgets `member`; returns the slot it had, which a later ``update(_:_:)`` may reuse.
    @discardableResult
    public mutating func remove(_ member: Member) -> Int32? {
        guard let slot = slots.removeValue(forKey: member) else { return nil }
        if let old = interests[Int(slot)] { remove(old, slot: slot) }
        members[Int(slot)] = nil
        freeSlots.append(slot)
        return slot
    }

    /// The member registered in `slot`, if any.
    public func member(at slot: Int32) -> Member? {
        Int(slot) < members.count ? members[Int(slot)] : nil
    }

    /// The slot `member` is registered in (``update(_:_:)`` returns it too): slots are numbered
    /// from 0, so a caller can keep its own per-member state in an array beside the index.
    public func slot(of member: Member) -> Int32? { slots[member] }

    /// Calls `body` with the slot of every member `change` may touch (every member for a reload
    /// or the ads); a slot may come more than once.
    public func forEachSlot(touchedBy change: IndexChange, _ body: (Int32) -> Void) {
        func take(_ slots: SlotList?) {
            slots?.forEach(body)
        }
        switch change {
        case .reset, .ads:
            for slot in slots.values { body(slot) }
        case let .video(id, author, before, after):
            take(byVideo[id])
            if after == nil { take(byLaterVideo[id]) }
            if before == nil {
                take(byAuthor[author])
                for slot in anyNewVideo { body(slot) }
            }
            if let after {
                // Pages whose region ends after this video's rank: it may climb into them.
                popular.forEach(after: after) { body($0.slot) }
            }
        case let .user(id, before, after, _):
            take(byUser[id])
            if before == nil || after == nil {
                for slot in anyUserAddedOrRemoved { body(slot) }
            }
            if let after {
                // Carousels whose last card ranks after this user: they may enter it, unless
                // they are the viewer or someone the viewer follows (never suggested).
                floors.forEach(after: after) { entry in
                    guard let page = interests[Int(entry.slot)], page.viewer != id, !page.authors.containsSorted(id) else { return }
                    body(entry.slot)
                }
            }
        case let .follow(follower, _, _):
            take(byFollower[follower])
        }
    }

    /// Moves `slot` from `old` to `new`, touching only the ids and thresholds that differ.
    private mutating func replace(_ old: PageInterests, with new: PageInterests, slot: Int32) {
        interests[Int(slot)] = new
        /// Walks two sorted arrays: ids only in `before` leave `map`, ids only in `after` join.
        func move(_ before: [Int64], _ after: [Int64], in map: inout [Int64: SlotList]) {
            guard before != after else { return }
            var left = 0
            var right = 0
            while left < before.count || right < after.count {
                if right == after.count || (left < before.count && before[left] < after[right]) {
                    InterestIndex.drop(slot, from: before[left], in: &map)
                    left += 1
                } else if left == before.count || after[right] < before[left] {
                    map[after[right], default: SlotList()].insert(slot)
                    right += 1
                } else {
                    left += 1
                    right += 1
                }
            }
        }
        move(old.videos, new.videos, in: &byVideo)
        move(old.laterVideos, new.laterVideos, in: &byLaterVideo)
        move(old.authors, new.authors, in: &byAuthor)
        move(old.users, new.users, in: &byUser)
        move(old.followers, new.followers, in: &byFollower)
        if old.anyNewVideo != new.anyNewVideo {
            if new.anyNewVideo { anyNewVideo.insert(slot) } else { anyNewVideo.remove(slot) }
        }
        if old.anyUserAddedOrRemoved != new.anyUserAddedOrRemoved {
            if new.anyUserAddedOrRemoved { anyUserAddedOrRemoved.insert(slot) } else { anyUserAddedOrRemoved.remove(slot) }
        }
        if old.popularThreshold != new.popularThreshold {
            if let key = old.popularThreshold { popular.remove(slot, key: key) }
            if let key = new.popularThreshold { popular.insert(slot, key: key) }
        }
        if old.suggestionFloor != new.suggestionFloor {
            if let key = old.suggestionFloor { floors.remove(slot, key: key) }
            if let key = new.suggestionFloor { floors.insert(slot, key: key) }
        }
    }

    private static func drop(_ slot: Int32, from id: Int64, in map: inout [Int64: SlotList]) {
        // In place: a popular video's list holds a slot for every page that shows it.
        guard let index = map.index(forKey: id) else { return }
        map.values[index].remove(slot)
        if map.values[index].isEmpty { map.remove(at: index) }
    }

    private mutating func add(_ new: PageInterests, slot: Int32) {
        interests[Int(slot)] = new
        for id in new.videos { byVideo[id, default: SlotList()].insert(slot) }
        for id in new.laterVideos { byLaterVideo[id, default: SlotList()].insert(slot) }
        for id in new.authors { byAuthor[id, default: SlotList()].insert(slot) }
        for id in new.users { byUser[id, default: SlotList()].insert(slot) }
        for id in new.followers { byFollower[id, default: SlotList()].insert(slot) }
        if new.anyNewVideo { anyNewVideo.insert(slot) }
        if new.anyUserAddedOrRemoved { anyUserAddedOrRemoved.insert(slot) }
        if let key = new.popularThreshold { popular.insert(slot, key: key) }
        if let key = new.suggestionFloor { floors.insert(slot, key: key) }
    }

    private mutating func remove(_ old: PageInterests, slot: Int32) {
        interests[Int(slot)] = nil
        func drop(_ ids: [Int64], from map: inout [Int64: SlotList]) {
            for id in ids { InterestIndex.drop(slot, from: id, in: &map) }
        }
        drop(old.videos, from: &byVideo)
        drop(old.laterVideos, from: &byLaterVideo)
        drop(old.authors, from: &byAuthor)
        drop(old.users, from: &byUser)
        drop(old.followers, from: &byFollower)
        anyNewVideo.remove(slot)
        anyUserAddedOrRemoved.remove(slot)
        if let key = old.popularThreshold { popular.remove(slot, key: key) }
        if let key = old.suggestionFloor { floors.remove(slot, key: key) }
    }
}
