import FeedService
import FeedStore
import FeedWire
import ListDiff
import StoreOracle
import Testing

/// A new video at the top of the grid slides one video of every grid section into the next: the
/// client holds those already, so batch and sequential deltas name them by their old path.
@Suite("Inserted items the snapshot holds")
struct MovedItemDeltaTests {
    @Test(
        "A new video at the top: every form carries it whole and the videos slid into the next section by old path (JSON Patch: a move)",
        arguments: DeltaFormat.allCases)
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
        let delta = try #require(try service.delta(viewer: 1, since: before.snapshotID, format: format).changedDocument, "expected a delta after a new video")
        let decoded = try delta.decoded(since: before.snapshotID)
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
        case .jsonPatch(let patch):
            let items = patch.operations.filter { $0.path.tokens.count == 4 && $0.path.tokens[2] == "items" }
            whole = items.filter { $0.op == .add }.count
            // Moved from where the item is at that moment: the last of its section, after the
            // new item above it arrived.
            byOldPath = items.filter { $0.op == .move }.compactMap { move in
                guard let from = move.from?.tokens, let section = Int(from[1]), let item = Int(from[3]) else { return nil }
                return ItemPath(section: section, item: item - 1)
            }
            #expect(items.filter { $0.op == .move }.allSatisfy { $0.from?.tokens[1] != $0.path.tokens[1] })
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

    @Test(
        "A deleted video: the videos slid back into the section before arrive by old path, or by a move before their removal",
        arguments: DeltaFormat.allCases)
    func itemsSlidBackTravelByOldPath(format: DeltaFormat) throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let before = try service.feed(viewer: 1, parameters: parameters)
        let first = try #require(before.sections.first { $0.kind == .videoGrid }?.items.first?.id)
        let video = try #require(Int64(first.dropFirst("video:".count)))
        _ = try service.write { store throws(FeedStoreError) in try store.deleteVideo(id: video) }
        let after = try service.feed(viewer: 1, parameters: parameters)
        let delta = try #require(
            try service.delta(viewer: 1, since: before.snapshotID, format: format).changedDocument, "expected a delta after a deleted video")
        let text = String(decoding: delta.bytes, as: UTF8.self)
        // The grid sections each take the first video of the next: only the last takes a new one.
        let grids = before.sections.filter { $0.kind == .videoGrid }.count
        let references = text.ranges(of: format == .jsonpatch ? "\"op\":\"move\"" : "\"old_path\"").count
        #expect(references >= grids - 1, "\(text)")
        let applied = try FeedDocument(parsing: before.document.bytes).applying(try delta.decoded(since: before.snapshotID))
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
                header: FeedDelta.Header(since: before.snapshotID, snapshot: "next", changeCount: 1),
                update: SectionedBatchUpdate(itemInserts: [ItemPath(section: section, item: 0)]),
                insertedFromSnapshot: [Move(from: missing, to: ItemPath(section: section, item: 0))]))
        #expect(throws: DeltaApplyError.self) { try document.applying(batch) }
        let sequential = FeedDelta.sequential(
            FeedDelta.Sequential(
                header: FeedDelta.Header(since: before.snapshotID, snapshot: "next", changeCount: 1),
                operations: [.items(section: section, .insert(at: 0, count: 1), values: [.moved(from: missing)])]))
        #expect(throws: DeltaApplyError.self) { try document.applying(sequential) }
    }
}
