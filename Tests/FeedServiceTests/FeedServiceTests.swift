import FeedService
import FeedStore
import FeedWire
import Foundation
import SQLiteStore
import StoreOracle
import Testing

/// A small seeded store and a service over it.
func makeService(users: Int = 40, videos: Int = 300, ads: Int = 4, seed: UInt64 = 3) throws -> FeedService {
    let store = try SQLiteFeedStore.temporary()
    _ = try store.seed(DemoSeed(users: users, videos: videos, ads: ads, seed: seed))
    return try FeedService(store: store)
}

extension DeltaLookup {
    /// The document of a delta the service answered with a change; nil for any other answer
    /// (unchanged, gone, a snapshot to read from storage).
    var changedDocument: DeltaDocument? {
        guard case .answered(.changed(let delta)) = self else { return nil }
        return delta
    }
}

extension DeltaDocument {
    /// The delta as a client reads it: the body with the form it was asked in, from `since`.
    func decoded(since: String) throws -> FeedDelta {
        try FeedDelta(parsing: bytes, format: format, since: since)
    }
}

func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

@Suite("Feed composition")
struct FeedCompositionTests {
    @Test("Feed starts with header then grid then suggestions") func feedStartsWithHeaderThenGridThenSuggestions() throws {
        let service = try makeService()
        let feed = try service.feed(viewer: 1, parameters: FeedParameters(limit: 10))
        let kinds = feed.sections.map(\.kind)
        #expect(kinds.first == .header)
        #expect(kinds[1] == .videoGrid)
        #expect(kinds[2] == .followSuggestions)
        #expect(feed.sections[1].items.count == 6)
        #expect(feed.sections[2].items.count <= 10)
        #expect(try jsonObject(feed.document.bytes)["snapshot"] as? String == feed.snapshotID)
    }

    @Test("Ad positions are stable across refreshes and new videos") func adPositionsAreStableAcrossRefreshesAndNewVideos() throws {
        let service = try makeService()
        let before = try service.feed(viewer: 1, parameters: FeedParameters(limit: 60))
        let adSlots = before.sections.filter { $0.kind == .ad }.map(\.id)
        #expect(!adSlots.isEmpty)
        let followee = try #require(try service.store.read { try $0.followees(of: 1) }.first)
        _ = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: followee, title: "fresh", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
        }
        let after = try service.feed(viewer: 1, parameters: FeedParameters(limit: 60))
        #expect(after.snapshotID != before.snapshotID)
        #expect(after.sections.filter { $0.kind == .ad }.map(\.id) == adSlots)
        #expect(after.sections.filter { $0.kind == .ad }.map { $0.items[0].id } == before.sections.filter { $0.kind == .ad }.map { $0.items[0].id })
    }

    @Test("Stacked ads become the last item of their grid section") func stackedAdsBecomeTheLastItemOfTheirGridSection() throws {
        let service = try makeService()
        let feed = try service.feed(viewer: 1, parameters: FeedParameters(limit: 60, stackAds: true))
        #expect(!feed.sections.contains { $0.kind == .ad })
        let stacked = feed.sections.filter { $0.kind == .videoGridStacked }
        #expect(!stacked.isEmpty)
        #expect(stacked.allSatisfy { $0.items.last?.kind == .ad && $0.items.dropLast().allSatisfy { $0.kind == .video } })
    }

    @Test("Width gives every item a size") func widthGivesEveryItemASize() throws {
        let service = try makeService()
        let feed = try service.feed(viewer: 1, parameters: FeedParameters(limit: 5, width: 390))
        let sections = try #require(try jsonObject(feed.document.bytes)["sections"] as? [[String: Any]])
        let grid = try #require(sections.first { $0["kind"] as? String == "video_grid" })
        let size = try #require(((grid["items"] as? [[String: Any]])?.first?["size"]) as? [String: Int])
        #expect(size == ["width": 183, "height": 284])  // (390 - 16 - 8) / 2 = 183; 183 * 4 / 3 + 40
    }

    @Test("Viewer with no videos anywhere gets the empty state") func viewerWithNoVideosAnywhereGetsTheEmptyState() throws {
        let service = try makeService(users: 5, videos: 0, ads: 0)
        let feed = try service.feed(viewer: 1, parameters: FeedParameters())
        #expect(feed.sections.map(\.kind).contains(.empty))
    }

    @Test("Pages follow the cursor without overlap") func pagesFollowTheCursorWithoutOverlap() throws {
        let service = try makeService()
        let first = try service.feed(viewer: 1, parameters: FeedParameters(limit: 5))
        let cursor = try #require(first.nextCursor)
        let offset = try #require(FeedParameters.offset(fromCursor: cursor))
        let second = try service.feed(viewer: 1, parameters: FeedParameters(limit: 5, offset: offset))
        #expect(Set(first.sections.map(\.id)).isDisjoint(with: second.sections.map(\.id)))
        #expect(FeedParameters.offset(fromCursor: "garbage") == nil)
    }

    /// The README: "the feed holds at most 240 videos, and `next_cursor` pages through them".
    @Test("A feed holds at most 240 videos, each once, and its cursor pages through them all")
    func feedHoldsAtMost240Videos() throws {
        let service = try makeService(users: 40, videos: 3_000)
        var offset = 0
        var videos: [String] = []
        for _ in 0..<50 {
            let page = try service.feed(viewer: 1, parameters: FeedParameters(limit: 200, offset: offset))
            videos += page.sections.flatMap(\.items).filter { $0.kind == .video }.map(\.id)
            guard let cursor = page.nextCursor else { break }
            offset = try #require(FeedParameters.offset(fromCursor: cursor))
        }
        #expect(videos.count == 240)
        #expect(Set(videos).count == videos.count)
    }

    @Test("Unknown viewer is an error") func unknownViewerIsAnError() throws {
        let service = try makeService()
        #expect(throws: FeedError.viewerNotFound(999_999)) { try service.feed(viewer: 999_999, parameters: FeedParameters()) }
    }
}

@Suite("Deltas")
struct DeltaTests {
    @Test("Every format is valid JSON with the new snapshot", arguments: DeltaFormat.allCases)
    func everyFormatIsValidJSONWithTheNewSnapshot(format: DeltaFormat) throws {
        let service = try makeService()
        let before = try service.feed(viewer: 1, parameters: FeedParameters(limit: 8))
        let video = try #require(before.sections[1].items.first?.id.split(separator: ":").last.flatMap { Int64($0) })
        _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video, title: "changed") }
        let outcome = try #require(try service.delta(viewer: 1, since: before.snapshotID, format: format).answer)
        let delta = try #require(outcome.delta, "expected a delta, got none")
        #expect(delta.format == format)
        let json = try jsonObject(delta.bytes)
        #expect(json["snapshot"] as? String == outcome.snapshotID)
        #expect(json["change_count"] as? Int == 1)
        let after = try service.feed(viewer: 1, parameters: FeedParameters(limit: 8))
        #expect(outcome.snapshotID == after.snapshotID)
    }

    @Test("Unchanged feed has no delta body") func unchangedFeedHasNoDeltaBody() throws {
        let service = try makeService()
        let feed = try service.feed(viewer: 1, parameters: FeedParameters())
        #expect(try #require(try service.delta(viewer: 1, since: feed.snapshotID, format: .batch).answer).delta == nil)
    }

    @Test("Snapshot of another viewer is unknown") func snapshotOfAnotherViewerIsUnknown() throws {
        let service = try makeService()
        let feed = try service.feed(viewer: 2, parameters: FeedParameters())
        #expect(throws: FeedError.snapshotUnknown(feed.snapshotID)) {
            try service.deltaReadingStorage(viewer: 3, since: feed.snapshotID, format: .batch)
        }
        #expect(try service.delta(viewer: 3, since: feed.snapshotID, format: .batch).answer == nil, "not in memory for viewer 3: the store decides")
    }

    @Test("Snapshot ids are stable across service instances") func snapshotIdsAreStableAcrossServiceInstances() throws {
        let store = try SQLiteFeedStore.temporary()
        _ = try store.seed(DemoSeed(users: 20, videos: 100, ads: 2, seed: 5))
        let first = try FeedService(store: store).feed(viewer: 1, parameters: FeedParameters())
        let second = try FeedService(store: store).feed(viewer: 1, parameters: FeedParameters())
        #expect(first.snapshotID == second.snapshotID)
        #expect(first.document.bytes == second.document.bytes)
    }
}

extension DeltaLookup {
    /// The answer when the snapshot was in memory; nil when the store must be asked.
    var answer: DeltaOutcome? {
        if case .answered(let outcome) = self { return outcome }
        return nil
    }
}
