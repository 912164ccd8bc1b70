import FeedStore
import FeedWire
import ListDiff
import Testing

// @testable: these tests read how the page cache made a page (`RenderedFeed.patchedFrom`), which is
// internal to the service: the delta builders' bookkeeping, not an API.
@testable import FeedService

/// A client one write behind a page patched in place is sent the patched items without a diff.
@Suite("Deltas of pages patched in place")
struct PatchedDeltaTests {
    /// The video ids of a page, by path.
    func videos(of page: RenderedFeed) -> [(path: ItemPath, id: Int64)] {
        page.sections.indices.flatMap { section in
            page.sections[section].items.indices.compactMap { item -> (ItemPath, Int64)? in
                let id = page.sections[section].items[item].id
                guard id.hasPrefix("video:"), let video = Int64(id.dropFirst(6)) else { return nil }
                return (ItemPath(section: section, item: item), video)
            }
        }
    }

    @Test(
        "A client one write behind a page patched in place gets the document the diff makes, built from the patched items, in every form",
        arguments: DeltaFormat.allCases)
    func patchedDeltasEqualDiffedOnes(format: DeltaFormat) throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12, width: 390)
        // Writes that only change what items show: likes of one video, of two side by side and
        // of two in different sections, a retitled video, the viewer's and an author's names.
        var page = try service.feed(viewer: 1, parameters: parameters)
        let shown = videos(of: page)
        try #require(shown.count >= 8)
        let writes: [(String, (any FeedStorage) throws(FeedStoreError) -> Void)] = [
            ("one like", { store throws(FeedStoreError) in _ = try store.updateVideo(id: shown[1].id, likeCount: 777) }),
            (
                "two likes side by side",
                { store throws(FeedStoreError) in
                    _ = try store.updateVideo(id: shown[2].id, likeCount: 31)
                    _ = try store.updateVideo(id: shown[3].id, likeCount: 32)
                }
            ),
            (
                "likes in two sections",
                { store throws(FeedStoreError) in
                    _ = try store.updateVideo(id: shown[0].id, likeCount: 41)
                    _ = try store.updateVideo(id: shown[shown.count - 1].id, likeCount: 42)
                }
            ),
            ("a retitled video", { store throws(FeedStoreError) in _ = try store.updateVideo(id: shown[4].id, title: "retitled") }),
            ("the viewer renamed", { store throws(FeedStoreError) in _ = try store.updateUser(id: 1, displayName: "Renamed Viewer") }),
        ]
        for (name, write) in writes {
            _ = try service.write { store throws(FeedStoreError) in try write(store) }
            let after = try service.feed(viewer: 1, parameters: parameters)
            let patched = try #require(after.patchedFrom, "\(name): the page was patched in place")
            #expect(patched.snapshotID == page.snapshotID, "\(name)")
            guard case .itemsUpdated(let updatedItems) = patched.change else {
                Issue.record("\(name): the page's items were not updated in place")
                return
            }
            #expect(!updatedItems.isEmpty, "\(name)")
            let delta = try #require(try service.delta(viewer: 1, since: page.snapshotID, format: format).changedDocument, "\(name): expected a delta")
            guard case .itemsUpdated(let paths) = delta.changes else {
                Issue.record("\(name): the delta was diffed, not built from the patch")
                return
            }
            #expect(paths == updatedItems, "\(name)")
            expectSameAsDiffed(delta, service: service, from: page, to: after, name)
            page = after
        }
    }

    @Test("A client two writes behind is diffed: the patch names only the last write's items")
    func twoWritesBehindIsDiffed() throws {
        let service = try makeService()
        let first = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12))
        let shown = videos(of: first)
        _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: shown[0].id, likeCount: 51) }
        _ = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12))
        _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: shown[1].id, likeCount: 52) }
        let delta = try #require(try service.delta(viewer: 1, since: first.snapshotID, format: .batch).changedDocument, "expected a delta")
        guard case .diff(let diff) = delta.changes else {
            Issue.record("two writes behind, the patch of the last one is not the whole change")
            return
        }
        #expect(diff.changeCount == 2)
    }
}
