import FeedService
import FeedStore
import FeedWire
import Foundation
import SQLiteStore
import Testing

/// Section versions and snapshot ids were hashed a byte at a time (FNV-1a) until session 40 and a
/// word at a time since. A client that held a snapshot across the upgrade holds section versions
/// hashed the old way, and its snapshot's stored structure no longer hashes to its id: the
/// delta it gets must set every section version it keeps, or it would hold the old ones until
/// each section changed, unlike a fresh fetch.
@Suite("Snapshots an earlier release made")
struct EarlierReleaseSnapshotTests {
    /// A service, the page of viewer 1, and the same page as a client of the earlier release
    /// holds it: stored under an id its structure does not hash to, with other section versions.
    private func earlierReleaseClient() throws -> (service: FeedService, held: FeedDocument, page: RenderedFeed) {
        let store = try SQLiteFeedStore.temporary()
        _ = try store.seed(DemoSeed(users: 40, videos: 300, ads: 4, seed: 3))
        let service = try FeedService(store: store)
        let page = try service.feed(viewer: 1, parameters: FeedParameters())
        let oldID = String(repeating: "0123456789abcdef", count: 2)
        #expect(!page.structure.hashesToItsID(oldID))
        _ = try store.saveSnapshot(id: oldID, viewer: 1, structure: page.structure.encoded())
        var held = try FeedDocument(parsing: page.document.bytes)
        held.snapshot = oldID
        for index in held.sections.indices { held.sections[index].version = String(format: "%016llx", UInt64(index) &* 0x9E37_79B9) }
        return (service, held, page)
    }

    @Test(
        "A delta from a stored snapshot that does not hash to its id sets every kept section's version, and the client ends on a fresh fetch",
        arguments: DeltaFormat.allCases)
    func deltaSetsEveryKeptSectionVersion(format: DeltaFormat) throws {
        let (service, held, page) = try earlierReleaseClient()
        // Nothing changed but the hashing: the delta is the versions and the id.
        let unchanged = try service.deltaReadingStorage(viewer: 1, since: held.snapshot, format: format)
        guard case .changed(let versionsOnly) = unchanged else {
            Issue.record("expected a delta, got \(unchanged)")
            return
        }
        #expect(versionsOnly.snapshot == page.snapshotID)
        let synced = try held.applying(try versionsOnly.decoded(since: held.snapshot))
        #expect(synced == (try FeedDocument(parsing: page.document.bytes)))

        // And with a like on the page meanwhile.
        let video = try #require(page.sections.lazy.flatMap(\.items).first { $0.kind == .video }?.id.split(separator: ":").last.flatMap { Int64($0) })
        _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video, likeCount: 424_242) }
        let liked = try service.deltaReadingStorage(viewer: 1, since: held.snapshot, format: format)
        guard case .changed(let delta) = liked else {
            Issue.record("expected a delta, got \(liked)")
            return
        }
        let applied = try held.applying(try delta.decoded(since: held.snapshot))
        let fresh = try service.feed(viewer: 1, parameters: FeedParameters())
        #expect(applied == (try FeedDocument(parsing: fresh.document.bytes)))
    }

    @Test("A page's snapshot id is the same hashed from its rendered sections' id words as from its structure's ids, at three parameter sets")
    func pageAndStructureHashAlike() throws {
        let (service, _, _) = try earlierReleaseClient()
        for (viewer, parameters) in [
            (1, FeedParameters()), (2, FeedParameters(limit: 5, width: 390, viewport: 700)), (3, FeedParameters(limit: 30, offset: 2, stackAds: true)),
        ] as [(Int64, FeedParameters)] {
            let page = try service.feed(viewer: viewer, parameters: parameters)
            #expect(page.structure.idHashes(page: page.sections).id == page.snapshotID)
            #expect(page.structure.id == page.snapshotID)
            // And with only some sections hashed again, as a patch or a shift does.
            let changed = Array(stride(from: 0, to: page.sections.count, by: 2))
            let reused = page.structure.idHashes(reusing: page.structure.idHashes(), changed: changed, page: page.sections)
            #expect(reused.id == page.snapshotID)
        }
    }

    @Test("A posted document whose snapshot its structure does not hash to gets every kept section's version", arguments: DeltaFormat.allCases)
    func postedDocumentOfAnEarlierRelease(format: DeltaFormat) throws {
        let (service, held, page) = try earlierReleaseClient()
        let outcome = try service.delta(viewer: 1, from: page.structure, heldID: held.snapshot, format: format)
        guard case .changed(let delta) = outcome else {
            Issue.record("expected a delta, got \(outcome)")
            return
        }
        let applied = try held.applying(try delta.decoded(since: held.snapshot))
        #expect(applied == (try FeedDocument(parsing: page.document.bytes)))
        // The same structure naming its own id is unchanged.
        let current = try service.delta(viewer: 1, from: page.structure, heldID: page.snapshotID, format: format)
        guard case .unchanged = current else {
            Issue.record("expected unchanged, got \(current)")
            return
        }
    }
}
