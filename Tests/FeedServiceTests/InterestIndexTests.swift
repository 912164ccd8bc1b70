import Deterministic
import FeedIndex
import FeedService
import FeedStore
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

    @Test("A page the index says a batch of changes does not touch is unchanged", arguments: [21, 22] as [UInt64])
    func untouchedPagesAreUnchanged(seed: UInt64) throws {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 260, ads: 4, seed: seed, followsPerUser: 2...8))
        let service = try FeedService(store: store)
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
            service.holdPage(viewer: page.viewer, parameters: page.parameters)
            try look(page)
        }
        _ = service.heldPagesTouched()
        var untouchedChecked = 0
        var touchedTotal = 0
        var checked = 0
        var changedTotal = 0
        for step in 0..<150 {
            // One to three writes per batch, as a group commit applies them together.
            for _ in 0...random.next(below: 3) {
                try service.write { _ throws(FeedStoreError) in try writer.write() }
            }
            let touched = Set(service.heldPagesTouched().map { Page(viewer: $0.viewer, parameters: $0.parameters) })
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
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 260, ads: 4, seed: 5, followsPerUser: 2...8))
        let service = try FeedService(store: store)
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
