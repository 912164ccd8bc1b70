import Deterministic
import FeedIndex
import FeedService
import FeedStore
import FeedWire
import SQLiteStore
import Testing
import WritePlanning

/// The live streams' fan-out asks which held pages a batch of index changes may touch (the pages
/// are registered in an ``InterestIndex`` and the changes noted on them, ``PageMarks``), and
/// checks only those: a page it leaves out must really be unchanged, or a live viewer would miss
/// a change.
@Suite("Interest index")
struct InterestIndexTests {
    struct Page: Hashable, Sendable {
        let viewer: Int64
        let parameters: FeedParameters
    }

    /// A store of 30 users and 260 videos seeded with `seed`, and a service over it.
    func smallStore(seed: UInt64) throws -> (SQLiteFeedStore, FeedService) {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 260, ads: 4, seed: seed, followsPerUser: 2...8))
        return (store, try FeedService(store: store))
    }

    @Test("A page the index says a batch of changes does not touch is unchanged", arguments: [21, 22] as [UInt64])
    func untouchedPagesAreUnchanged(seed: UInt64) throws {
        let (store, service) = try smallStore(seed: seed)
        var random = SplitMix64(seed: seed)
        var writer = RandomWriter(store: store, seed: seed)
        let parameterSets = [
            FeedParameters(limit: 60), FeedParameters(limit: 5, offset: 3, width: 390), FeedParameters(limit: 20, stackAds: true),
            FeedParameters(limit: 3),
        ]
        var pages: [Page] = []
        for viewer in Int64(1)...Int64(15) {
            for parameters in parameterSets { pages.append(Page(viewer: viewer, parameters: parameters)) }
        }
        var snapshots: [Page: String] = [:]
        /// Reads the page (as the live streams do).
        func look(_ page: Page) throws {
            do {
                snapshots[page] = try service.livePage(viewer: page.viewer, parameters: page.parameters).snapshotID
            } catch FeedError.viewerNotFound {
                snapshots[page] = nil
            }
        }
        for page in pages {
            service.holdPage(viewer: page.viewer, parameters: page.parameters, for: .liveStreams)
            try look(page)
        }
        _ = service.heldPagesTouched(by: .liveStreams)
        var untouchedChecked = 0
        var touchedTotal = 0
        var checked = 0
        var changedTotal = 0
        for step in 0..<150 {
            // One to three writes per batch, as a group commit applies them together.
            for _ in 0...random.next(below: 3) {
                try service.write { _ throws(FeedStoreError) in try writer.write() }
            }
            let touched = Set(service.heldPagesTouched(by: .liveStreams).map { Page(viewer: $0.viewer, parameters: $0.parameters) })
            touchedTotal += touched.count
            checked += snapshots.count
            for page in pages where snapshots[page] != nil && !touched.contains(page) {
                let current = try? service.feed(viewer: page.viewer, parameters: page.parameters).snapshotID
                #expect(current == snapshots[page], "step \(step): \(page) changed but was not touched")
                untouchedChecked += 1
            }
            for page in touched {
                let before = snapshots[page]
                try look(page)
                if snapshots[page] != before { changedTotal += 1 }
            }
        }
        // On a store this small most writes touch most pages; what matters is that the pages
        // found are mostly pages that did change (a fan-out's wasted checks) and that not all are.
        #expect(untouchedChecked > 0, "untouched \(untouchedChecked) of \(checked)")
        #expect(changedTotal * 2 > touchedTotal, "touched \(touchedTotal), of which changed \(changedTotal)")
        #expect(touchedTotal > 0)
        #expect(writer.counts.count >= 8, "the mix covered most kinds of write: \(writer.counts)")
    }

    @Test("Removing a page leaves nothing of it behind; a change touches only pages that show it")
    func registrationAndRemoval() throws {
        let (_, service) = try smallStore(seed: 5)
        var index = InterestIndex<Int64>()
        for viewer in Int64(1)...Int64(10) {
            index.update(viewer, try service.interests(viewer: viewer, parameters: FeedParameters(limit: 4)))
        }
        #expect(index.count == 10)
        // A follow by viewer 3 touches viewer 3's page (and those of whoever follows 3).
        let touched = index.members(touchedBy: [.follow(follower: 3, followee: 29, added: true)])
        #expect(touched.contains(3))
        #expect(touched.count < 10)
        // A reload touches every page.
        #expect(index.members(touchedBy: [.reset]).count == 10)
        index.remove(3)
        #expect(index.count == 9)
        #expect(!index.members(touchedBy: [.follow(follower: 3, followee: 29, added: true)]).contains(3))
        #expect(!index.members(touchedBy: [.reset]).contains(3))
        // A video no page shows, with no likes, by nobody's followee: touches nothing.
        let far = index.members(touchedBy: [.video(id: 999_999, author: 999_999, before: nil, after: nil)])
        #expect(far.isEmpty)
    }

    @Test("A like on a video of the feed past the page's end does not touch the page; removing that video does")
    func videosPastThePage() throws {
        let (store, service) = try smallStore(seed: 5)
        var index = InterestIndex<Int64>()
        for viewer in Int64(1)...Int64(10) { index.update(viewer, try service.interests(viewer: viewer, parameters: FeedParameters(limit: 4))) }
        // Viewer 1's whole feed, in order: its last video is far past a page of 4 sections.
        let whole = try service.feed(viewer: 1, parameters: FeedParameters(limit: 100))
        let ids = whole.sections.flatMap(\.items).compactMap { $0.id.hasPrefix("video:") ? Int64($0.id.dropFirst(6)) : nil }
        let shown = try service.feed(viewer: 1, parameters: FeedParameters(limit: 4)).sections.flatMap(\.items).map(\.id)
        let last = try #require(ids.last)
        #expect(ids.count > 40)
        #expect(!shown.contains("video:\(last)"))
        let video = try #require(try store.read { try $0.videos(ids: [last]) }[last])
        let key = PopularityKey(video)
        #expect(!index.members(touchedBy: [.video(id: last, author: video.authorID, before: key, after: key)]).contains(1))
        #expect(index.members(touchedBy: [.video(id: last, author: video.authorID, before: key, after: nil)]).contains(1))
    }

    /// Changes that probe every list of an index: the removal of each video and (with
    /// `climbing`) its likes moving it to the top of the popularity order, which every page with
    /// a popularity threshold may see, a new video by each author, each user (with
    /// `climbing`, at the top of the follower ranks; else removed), a follow by each user.
    func probes(_ store: SQLiteFeedStore, climbing: Bool = true) throws -> [IndexChange] {
        var changes: [IndexChange] = []
        for (_, video) in try store.read({ try $0.videos(ids: 1...260) }).sorted(by: { $0.key < $1.key }) {
            var top = PopularityKey(video)
            top.likeCount = 1_000_000
            changes.append(.video(id: video.id, author: video.authorID, before: PopularityKey(video), after: nil))
            if climbing { changes.append(.video(id: video.id, author: video.authorID, before: PopularityKey(video), after: top)) }
            changes.append(.video(id: 10_000 + video.id, author: video.authorID, before: nil, after: climbing ? PopularityKey(video) : nil))
        }
        for (_, user) in try store.read({ try $0.users(ids: 1...30) }).sorted(by: { $0.key < $1.key }) {
            var top = FollowerRankKey(user)
            top.followerCount = 1_000_000
            changes.append(.user(id: user.id, before: FollowerRankKey(user), after: climbing ? top : nil, profileChanged: true))
            changes.append(.follow(follower: user.id, followee: 1, added: true))
        }
        return changes
    }

    @Test("Pages registered, moved to other interests and removed in any order are found as if only the remaining ones had been added")
    func churnMatchesAFreshIndex() throws {
        let (store, service) = try smallStore(seed: 9)
        var shapes: [PageInterests] = []
        for viewer in Int64(1)...Int64(12) {
            for parameters in [FeedParameters(limit: 4), FeedParameters(limit: 12, offset: 2), FeedParameters(limit: 40)] {
                shapes.append(try service.interests(viewer: viewer, parameters: parameters))
            }
        }
        let probes = try probes(store)
        var random = SplitMix64(seed: 9)
        var index = InterestIndex<Int>()
        var registered: [Int: PageInterests] = [:]
        // Enough members that the lists of ids most shapes share become sets (past 64 pages),
        // then fewer again.
        for step in 0..<6_000 {
            let member = Int(random.next(below: step < 4_000 ? 1_500 : 300))
            if random.next(below: 3) == 0 {
                index.remove(member)
                registered[member] = nil
            } else {
                let shape = shapes[Int(random.next(below: UInt64(shapes.count)))]
                index.update(member, shape)
                registered[member] = shape
            }
            guard step % 1_500 == 1_499 else { continue }
            var fresh = InterestIndex<Int>()
            for (member, shape) in registered { fresh.update(member, shape) }
            #expect(index.count == registered.count)
            for change in probes {
                #expect(index.members(touchedBy: [change]) == fresh.members(touchedBy: [change]), "step \(step): \(change)")
            }
        }
    }

    @Test(
        "Forty thousand pages sharing what they show are registered, moved and removed in time that grows with their number, not its square",
        .timeLimit(.minutes(1)))
    func manyPagesSharingInterests() throws {
        let (store, service) = try smallStore(seed: 5)
        let shapes = try (Int64(1)...Int64(4)).map { try service.interests(viewer: $0, parameters: FeedParameters(limit: 12)) }
        // Before the lists became sets for popular ids, removing one of these pages searched lists
        // of up to 40,000 slots: this took minutes (debug build), not seconds.
        let members = 40_000
        var index = InterestIndex<Int>()
        for member in 0..<members { index.update(member, shapes[member % shapes.count]) }
        // Every page to the next viewer's interests: the ids they do not share leave their lists.
        for member in 0..<members { index.update(member, shapes[(member + 1) % shapes.count]) }
        #expect(index.count == members)
        // Streams close in the order they opened; every other one first.
        for member in stride(from: 0, to: members, by: 2) { index.remove(member) }
        #expect(index.members(touchedBy: [.reset]).count == members / 2)
        // Each list once, not the thresholds' runs (every page has one): a debug build's budget.
        let probes = try probes(store, climbing: false)
        var found = 0
        var stale = 0
        for change in probes {
            index.forEachSlot(touchedBy: change) { slot in
                if let member = index.member(at: slot), member % 2 == 1 { found += 1 } else { stale += 1 }
            }
        }
        #expect(found > 0)
        #expect(stale == 0)
        for member in stride(from: 1, to: members, by: 2) { index.remove(member) }
        #expect(index.count == 0)
        var left = 0
        for change in probes { index.forEachSlot(touchedBy: change) { _ in left += 1 } }
        #expect(left == 0)
    }
}

extension InterestIndex {
    /// The members `changes` may touch (each slot ``forEachSlot(touchedBy:_:)`` names, once).
    func members(touchedBy changes: [IndexChange]) -> Set<Member> {
        var touched: Set<Member> = []
        for change in changes {
            forEachSlot(touchedBy: change) { slot in
                if let member = member(at: slot) { touched.insert(member) }
            }
        }
        return touched
    }
}
