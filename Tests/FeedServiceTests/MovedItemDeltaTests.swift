import FeedStore
import FeedWire
import ListDiff
import StoreOracle
import Testing

@testable import FeedService

/// A new video at the top of the grid slides one video of every grid section into the next: the
/// client holds those already, so batch and sequential deltas name them by their old path.
@Suite("Inserted items the snapshot holds")
struct MovedItemDeltaTests {
    @Test(
        "A new video at the top: batch and sequential deltas carry it whole and the videos slid into the next section by old path",
        arguments: [DeltaFormat.batch, .sequential])
    func slidItemsTravelByOldPath(format: DeltaFormat) throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12, width: 390)
        let before = try service.feed(viewer: 1, parameters: parameters)
        let grids = before.sections.filter { $0.kind == .videoGrid }
        try #require(grids.count >= 3, "the page shows several full grid sections")
        let followee = try #require(try service.store.read { try $0.followees(of: 1) }.first)
        _ = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: followee, title: "fresh", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
        }
        let after = try service.feed(viewer: 1, parameters: parameters)
        guard case .answered(.changed(let delta)) = try service.delta(viewer: 1, since: before.snapshotID, format: format) else {
            Issue.record("expected a delta after a new video")
            return
        }
        let decoded = try FeedDelta(parsing: delta.bytes)
        let whole: Int
        let byOldPath: [ItemPath]
        switch decoded {
        case .batch(let batch):
            whole = batch.insertedItems.count
            byOldPath = batch.insertedFromSnapshot.map(\.from)
        case .sequential(let sequential):
            var values: [ItemChange] = []
            for case .items(_, .insert, let inserted) in sequential.operations { values += inserted }
            whole = values.filter { if case .item = $0 { true } else { false } }.count
            byOldPath = values.compactMap { if case .moved(let from) = $0 { from } else { nil } }
        case .jsonPatch:
            Issue.record("asked for \(format)")
            return
        }
        // Only the new video is new to the client; each grid section after the first takes the
        // last video of the one before it.
        #expect(whole == 1)
        #expect(byOldPath.count == grids.count - 1)
        for path in byOldPath {
            #expect(before.sections[path.section].kind == .videoGrid && path.item == before.sections[path.section].items.count - 1, "\(path)")
        }
        let applied = try FeedDocument(parsing: before.document.bytes).applying(decoded)
        #expect(applied == (try FeedDocument(parsing: after.document.bytes)))
    }

    @Test("An item the snapshot holds at an old path that names nothing is refused")
    func oldPathNamingNothingIsRefused() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let before = try service.feed(viewer: 1, parameters: parameters)
        let document = try FeedDocument(parsing: before.document.bytes)
        let section = try #require(document.sections.firstIndex { $0.kind == "video_grid" })
        let missing = ItemPath(section: section, item: document.sections[section].items.count)
        let batch = FeedDelta.batch(
            FeedDelta.Batch(
                header: FeedDelta.Header(since: before.snapshotID, snapshot: "next", nextCursor: before.nextCursor, changeCount: 1),
                update: SectionedBatchUpdate(itemInserts: [ItemPath(section: section, item: 0)]),
                insertedFromSnapshot: [Move(from: missing, to: ItemPath(section: section, item: 0))]))
        #expect(throws: DeltaApplyError.self) { try document.applying(batch) }
        let sequential = FeedDelta.sequential(
            FeedDelta.Sequential(
                header: FeedDelta.Header(since: before.snapshotID, snapshot: "next", nextCursor: before.nextCursor, changeCount: 1),
                operations: [.items(section: section, .insert(at: 0, count: 1), values: [.moved(from: missing)])]))
        #expect(throws: DeltaApplyError.self) { try document.applying(sequential) }
    }
}
