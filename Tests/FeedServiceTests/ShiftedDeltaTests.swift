import Deterministic
import FeedStore
import FeedWire
import ListDiff
import SQLiteStore
import StoreOracle
import Testing

// @testable: these tests build pages and read how the page cache made them (`RenderedFeed`'s
// initialiser, `patchedFrom`, `items`), which are internal to the service's delta bookkeeping.
@testable import FeedService

/// A client one write behind a page whose grids a followee's new video slid on is sent the edits
/// of the sections that changed (their items matched by id), without a diff.
@Suite("Deltas of pages whose grids slid on")
struct ShiftedDeltaTests {
    /// Writes that shift viewer 1's page, alone or with other changes in the same window.
    func shiftingWrites(
        _ service: FeedService, page: RenderedFeed
    ) throws -> [(name: String, write: (any FeedStorage) throws(FeedStoreError) -> Void)] {
        let followees = try service.store.read { try $0.followees(of: 1) }
        try #require(followees.count >= 2)
        let shown = page.sections.flatMap(\.items).compactMap { $0.id.hasPrefix("video:") ? Int64($0.id.dropFirst(6)) : nil }
        try #require(shown.count >= 8)
        let videos = try service.store.read { reader in try shown.compactMap { try reader.video(id: $0) } }
        let last = try #require(videos.last)
        func newVideo(by author: Int64, _ title: String) -> (any FeedStorage) throws(FeedStoreError) -> Void {
            { store throws(FeedStoreError) in
                try store.createVideo(authorID: author, title: title, thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
            }
        }
        return [
            ("a new video", newVideo(by: followees[0], "one")),
            (
                "two new videos",
                { store throws(FeedStoreError) in
                    try newVideo(by: followees[0], "two a")(store)
                    try newVideo(by: followees[1], "two b")(store)
                }
            ),
            (
                // Liked where it stays in its section (updated in place, sent as a patch) and
                // where it slides into the next (sent whole: the snapshot's copy is out of date).
                "a new video and likes",
                { store throws(FeedStoreError) in
                    try newVideo(by: followees[0], "liked")(store)
                    for video in [videos[1], videos[5], videos[videos.count - 2]] {
                        _ = try store.updateVideo(id: video.id, likeCount: video.likeCount + 10)
                    }
                }
            ),
            (
                "a new video and a renamed author",
                { store throws(FeedStoreError) in
                    try newVideo(by: followees[1], "renamed")(store)
                    _ = try store.updateUser(id: last.authorID, displayName: "Renamed Author")
                }
            ),
            (
                "a new video and the viewer renamed",
                { store throws(FeedStoreError) in
                    try newVideo(by: followees[0], "viewer")(store)
                    _ = try store.updateUser(id: 1, displayName: "Renamed Viewer")
                }
            ),
        ]
    }

    @Test(
        "A client one write behind a shifted page gets the document the diff makes, built from the sections' edits, in every form",
        arguments: DeltaFormat.allCases,
        [FeedParameters(limit: 12), FeedParameters(limit: 12, width: 390, stackAds: true), FeedParameters(limit: 6, offset: 3)])
    func shiftedDeltasEqualDiffedOnes(format: DeltaFormat, parameters: FeedParameters) throws {
        let service = try makeService()
        var page = try service.feed(viewer: 1, parameters: parameters)
        for (name, write) in try shiftingWrites(service, page: page) {
            let before = service.pageWork
            _ = try service.write { store throws(FeedStoreError) in try write(store) }
            let after = try service.feed(viewer: 1, parameters: parameters)
            #expect(service.pageWork.shifted == before.shifted + 1, "\(name): the page was shifted, not composed")
            let patched = try #require(after.patchedFrom, "\(name)")
            #expect(patched.snapshotID == page.snapshotID, "\(name)")
            let delta = try #require(try service.delta(viewer: 1, since: page.snapshotID, format: format).changedDocument, "\(name): expected a delta")
            guard case .itemsEdited(let edits) = delta.changes else {
                Issue.record("\(name): the delta was not built from the sections' edits")
                return
            }
            #expect(!edits.inserts.isEmpty, "\(name)")
            expectSameAsDiffed(delta, service: service, from: page, to: after, name)
            let applied = try FeedDocument(parsing: page.document.bytes).applying(try delta.decoded(since: page.snapshotID))
            #expect(applied == (try FeedDocument(parsing: after.document.bytes)), "\(name)")
            page = after
        }
    }

    @Test(
        "A carousel ranked again, with or without a new video, gets the document the diff makes, whichever way it is built",
        arguments: DeltaFormat.allCases)
    func carouselRankedAgainEqualsTheDiff(format: DeltaFormat) throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        var page = try service.feed(viewer: 1, parameters: parameters)
        let followees = try service.store.read { try $0.followees(of: 1) }
        let followed = Set(followees)
        let others = (2...40).map(Int64.init).filter { !followed.contains($0) }
        // Followees follow and unfollow users the viewer does not follow (cards change places,
        // enter and leave the carousel); every other round a followee's new video too.
        for (round, (followee, user)) in zip(followees.prefix(4), others.suffix(4)).enumerated() {
            let follows = try service.store.read { try $0.followees(of: followee) }.contains(user)
            _ = try service.write { store throws(FeedStoreError) in
                if follows { _ = try store.unfollow(follower: followee, followee: user) } else { _ = try store.follow(follower: followee, followee: user) }
                if round.isMultiple(of: 2) {
                    try store.createVideo(authorID: followees[0], title: "round \(round)", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
                }
            }
            let after = try service.feed(viewer: 1, parameters: parameters)
            guard case .answered(let outcome) = try service.delta(viewer: 1, since: page.snapshotID, format: format) else {
                Issue.record("round \(round): the snapshot is known")
                return
            }
            if case .changed(let delta) = outcome {
                expectSameAsDiffed(delta, service: service, from: page, to: after, "round \(round)")
            }
            page = after
        }
    }

    @Test("After every random write, each viewer's delta one write behind is the diff's document, whichever way it is built", arguments: [21, 22] as [UInt64])
    func randomWritesGiveTheDiffsDocument(seed: UInt64) throws {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 260, ads: 4, seed: seed, followsPerUser: 2...8))
        let service = try FeedService(store: store)
        var writer = RandomWriter(store: store, seed: seed)
        var random = SplitMix64(seed: seed)
        let parameterSets = [FeedParameters(limit: 30), FeedParameters(limit: 12, offset: 3, width: 390), FeedParameters(limit: 40, stackAds: true)]
        var held: [(viewer: Int64, parameters: FeedParameters, page: RenderedFeed)] = []
        for viewer in Int64(1)...6 {
            let parameters = parameterSets[Int(viewer) % parameterSets.count]
            held.append((viewer, parameters, try service.feed(viewer: viewer, parameters: parameters)))
        }
        let before = service.deltaWork
        for step in 0..<150 {
            try service.write { _ throws(FeedStoreError) in try writer.write() }
            // Viewers the writes deleted leave.
            for index in held.indices.reversed() {
                let (viewer, parameters, page) = held[index]
                let format = DeltaFormat.allCases[Int(random.next(below: UInt64(DeltaFormat.allCases.count)))]
                let lookup: DeltaLookup
                do {
                    lookup = try service.delta(viewer: viewer, since: page.snapshotID, format: format)
                } catch .viewerNotFound {
                    held.remove(at: index)
                    continue
                }
                guard case .answered(let outcome) = lookup else { continue }
                let now = try service.feed(viewer: viewer, parameters: parameters)
                if case .changed(let delta) = outcome {
                    expectSameAsDiffed(delta, service: service, from: page, to: now, "seed \(seed), step \(step), viewer \(viewer), \(format)")
                }
                held[index].page = now
            }
        }
        let work = service.deltaWork
        #expect(work.patched > before.patched && work.edited > before.edited, "both ways were taken: \(work)")
    }

    @Test("Sections whose items did not keep their order, or whose ids or kinds changed, are diffed")
    func itemsOutOfOrderAreDiffed() throws {
        let service = try makeService()
        let page = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12))
        let grid = try #require(page.structure.sections.firstIndex { $0.kind == SectionKind.videoGrid.rawValue })
        let items = page.structure.sections[grid].items
        try #require(items.count >= 3)
        func edited(_ change: (inout SnapshotStructure.Section) -> Void) -> RenderedFeed {
            var structure = page.structure
            change(&structure.sections[grid])
            return RenderedFeed(snapshotID: "edited", sections: page.sections, nextCursor: page.nextCursor, structure: structure)
        }
        let swapped = edited { $0.items.swapAt(0, 2) }
        let renamed = edited { $0.id = "another" }
        let repeated = edited { $0.items[1] = $0.items[0] }
        for (name, current) in [("two items swapped", swapped), ("the section's id changed", renamed), ("an id twice", repeated)] {
            #expect(
                DeltaDocument(
                    format: .batch, from: page.structure, to: current, changedSections: [grid], renderedItem: { _ in nil }, patch: { _, _ in nil })
                    == nil, "\(name)")
        }
        // Sections named twice, out of order or past the end: not the promise, so diffed.
        for sections in [[grid, grid], [grid + 1, grid], [page.sections.count]] {
            #expect(
                DeltaDocument(
                    format: .batch, from: page.structure, to: page, changedSections: sections, renderedItem: { _ in nil }, patch: { _, _ in nil })
                    == nil, "\(sections)")
        }
        // Kept in order with one item gone: the edits.
        let shortened = edited { $0.items.remove(at: 1) }
        let document = try #require(
            DeltaDocument(
                format: .batch, from: page.structure, to: shortened, changedSections: [grid], renderedItem: { _ in nil }, patch: { _, _ in nil }))
        guard case .itemsEdited(let edits) = document.changes else {
            Issue.record("expected edits")
            return
        }
        #expect(edits.deletes == [ItemPath(section: grid, item: 1)])
        #expect(edits.inserts.isEmpty && edits.updatedOldPaths.isEmpty)
    }
}

/// Expects `delta` to be, byte for byte, the document the diff of `old`'s structure and `new`
/// makes (a delta built another way, from a patch or a shift, must be that document).
func expectSameAsDiffed(
    _ delta: DeltaDocument, service: FeedService, from old: RenderedFeed, to new: RenderedFeed, _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let diffed = DeltaDocument(
        format: delta.format, from: old.structure, to: new, renderedItem: service.items.rendered(version:), patch: service.items.patch(from:to:))
    guard case .diff = diffed.changes else {
        Issue.record("\(context): the reference was not diffed", sourceLocation: sourceLocation)
        return
    }
    #expect(
        String(decoding: delta.bytes, as: UTF8.self) == String(decoding: diffed.bytes, as: UTF8.self), "\(context)", sourceLocation: sourceLocation)
}
