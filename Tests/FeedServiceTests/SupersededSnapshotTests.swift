import FeedService
import FeedStore
import FeedWire
import Testing

/// A snapshot whose client moved on before the maintenance thread's pass is kept in memory only,
/// and stored when it could still be asked for after leaving memory (shed, clean stop).
@Suite("Snapshots superseded before their store pass")
struct SupersededSnapshotTests {
    /// The first video a page shows.
    private func firstVideo(of page: RenderedFeed) throws -> Int64 {
        let item = try #require(page.structure.sections.flatMap(\.items).first { $0.id.hasPrefix("video:") })
        return try #require(Int64(item.id.dropFirst("video:".count)))
    }

    /// Likes `video` (a new count each time) and returns the delta's new snapshot since `since`.
    private func liked(_ service: FeedService, video: Int64, count: Int64, viewer: Int64, since: String) throws -> String {
        _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video, likeCount: count) }
        let outcome = try #require(try service.delta(viewer: viewer, since: since, format: .batch).answer)
        let delta = try #require(outcome.delta, "the like changed the page")
        return delta.snapshot
    }

    @Test("A snapshot its client moved on from before the pass is not stored, until a clean stop stores it")
    func aSupersededSnapshotIsStoredOnlyAtACleanStop() throws {
        let clock = TestClock()
        let service = try makeService(clock: clock)
        let first = try service.feed(viewer: 2, parameters: FeedParameters(limit: 8))
        try service.persistSnapshots()
        let video = try firstVideo(of: first)
        let second = try liked(service, video: video, count: 7_001, viewer: 2, since: first.snapshotID)
        let third = try liked(service, video: video, count: 7_002, viewer: 2, since: second)
        try service.persistSnapshots()
        #expect(try service.store.snapshot(id: first.snapshotID, viewer: 2) != nil, "stored by the first pass")
        #expect(try service.store.snapshot(id: second, viewer: 2) == nil, "its client asked since it before the pass")
        #expect(try service.store.snapshot(id: third, viewer: 2) != nil, "still current at the pass")
        // In memory it still answers.
        #expect(try service.delta(viewer: 2, since: second, format: .batch).answer?.delta != nil)

        try service.persistEverySnapshot()  // a clean stop
        #expect(try service.store.snapshot(id: second, viewer: 2) != nil)
        let restarted = try FeedService(store: service.store)
        _ = try restarted.deltaReadingStorage(viewer: 2, since: second, format: .batch)
    }

    @Test("With every snapshot stored (replicas), one its client moved on from is stored at the pass")
    func replicasStoreEverySnapshot() throws {
        let service = try makeService(clock: TestClock())
        service.storeEverySnapshot()
        let first = try service.feed(viewer: 3, parameters: FeedParameters(limit: 8))
        let video = try firstVideo(of: first)
        let second = try liked(service, video: video, count: 8_001, viewer: 3, since: first.snapshotID)
        _ = try liked(service, video: video, count: 8_002, viewer: 3, since: second)
        try service.persistSnapshots()
        #expect(try service.store.snapshot(id: first.snapshotID, viewer: 3) != nil)
        #expect(try service.store.snapshot(id: second, viewer: 3) != nil)
    }
}

@Suite("SnapshotBook: superseded snapshots and what a snapshot is charged")
struct SnapshotBookChargeTests {
    private func structure(viewer: Int64, items: [SnapshotStructure.Item], sections: Int = 1) -> SnapshotStructure {
        SnapshotStructure(
            viewer: viewer, parameters: FeedParameters(limit: items.count),
            sections: (0..<sections).map { .init(id: "grid-\($0)", kind: "video_grid", items: items) })
    }

    private func items(_ count: Int, version: UInt64 = 1) -> [SnapshotStructure.Item] {
        (0..<count).map { .init(id: "video:\($0)", version: version) }
    }

    private func key(_ viewer: Int64, _ id: String) -> SnapshotBook.Key { SnapshotBook.Key(viewer: viewer, id: id) }

    @Test("A snapshot moved on from before the pass leaves the queue; only the pass's own count decides")
    func movedOnFromBeforeThePass() {
        var book = SnapshotBook(retention: .init(perViewer: 8, maxAge: 60_000, byteBudget: 1 << 20))
        book.served(structure(viewer: 1, items: items(2)), id: "a", now: 0)
        book.served(structure(viewer: 1, items: items(3)), id: "b", now: 1, movingOnFrom: "a")
        var pending = book.takePending()
        #expect(Set(pending.upserts.keys) == [key(1, "b")], "a was moved on from before any pass took it")
        #expect(book.superseded == 1)
        // Taken by a pass: moving on from it changes nothing (it is stored or being stored).
        book.served(structure(viewer: 1, items: items(4)), id: "c", now: 2, movingOnFrom: "b")
        pending = book.takePending()
        #expect(Set(pending.upserts.keys) == [key(1, "c")])
        #expect(book.superseded == 1)
        // Moving on from a snapshot served again (a stored one whose serve time is refreshed):
        // its row exists, so nothing is taken off.
        book.served(structure(viewer: 1, items: items(4)), id: "c", now: 10_000)
        book.served(structure(viewer: 1, items: items(5)), id: "d", now: 10_001, movingOnFrom: "c")
        #expect(Set(book.takePending().upserts.keys) == [key(1, "c"), key(1, "d")])
    }

    @Test("An unstored snapshot is queued when served again or shed, never deleted, and all at a clean stop")
    func unstoredSnapshotsReachTheStoreWhenNeeded() {
        var book = SnapshotBook(retention: .init(perViewer: 3, maxAge: 60_000, byteBudget: 1 << 20))
        book.served(structure(viewer: 1, items: items(2)), id: "a", now: 0)
        book.served(structure(viewer: 1, items: items(3)), id: "b", now: 1, movingOnFrom: "a")
        book.served(structure(viewer: 1, items: items(4)), id: "c", now: 2, movingOnFrom: "b")
        _ = book.takePending()  // stores c only
        // Handed out again (another device): stored after all.
        book.served(structure(viewer: 1, items: items(3)), id: "b", now: 3)
        #expect(Set(book.takePending().upserts.keys) == [key(1, "b")])
        // Retention drops "a" (never stored) and then "c" (stored): a deletion for "c" only.
        book.served(structure(viewer: 1, items: items(5)), id: "d", now: 4, movingOnFrom: "c")  // c was stored: nothing taken off
        book.served(structure(viewer: 1, items: items(6)), id: "e", now: 5, movingOnFrom: "d")
        let pending = book.takePending()
        #expect(pending.deletions == [key(1, "c")], "a had no row")
        #expect(Set(pending.upserts.keys) == [key(1, "e")])
        // "d" is unstored; a clean stop queues it.
        #expect(book.queueUnstored() == 1)
        #expect(Set(book.takePending().upserts.keys) == [key(1, "d")])
        #expect(book.queueUnstored() == 0)

        // Shedding an unstored one stores it: it is read back when asked for.
        var small = SnapshotBook(retention: .init(perViewer: 8, maxAge: 60_000, byteBudget: 2_000))
        small.served(structure(viewer: 1, items: items(30)), id: "x", now: 0)
        small.served(structure(viewer: 1, items: items(30, version: 2)), id: "y", now: 1, movingOnFrom: "x")
        _ = small.takePending()
        for viewer in Int64(2)...6 { small.served(structure(viewer: viewer, items: items(30)), id: "v\(viewer)", now: 10 + viewer) }
        _ = small.takePending()
        small.shedIfOverBudget()
        #expect(small.takePending().upserts[key(1, "x")] != nil, "x was shed and had no row")
        #expect(small.lookup(viewer: 1, id: "x", now: 100) == .notInMemory)
    }

    @Test("What retention removes while serving is handed to the maintenance thread to free, not freed by the server")
    func retiredEntriesAreHandedOver() {
        var book = SnapshotBook(retention: .init(perViewer: 2, maxAge: 60_000, byteBudget: 1 << 20))
        for round in 0..<4 { book.served(structure(viewer: 1, items: items(round + 1)), id: "r\(round)", now: Int64(round)) }
        #expect(book.takeRetired().map(\.id) == ["r0", "r1"])
        #expect(book.takeRetired().isEmpty)
        #expect(book.lookup(viewer: 1, id: "r0", now: 10) == .expired, "retired all the same")
    }

    @Test("A snapshot sharing item arrays with the one before is charged its sections' slots, and the book's count stays exact")
    func sharedItemArraysAreChargedOnce() {
        let full = SnapshotBook.size(of: structure(viewer: 1, items: items(40), sections: 20))
        var patched = structure(viewer: 1, items: items(40), sections: 20)
        let earlier = patched
        patched.sections[3].items[0].version = 9  // a like: one section's items copied
        let charged = SnapshotBook.size(of: patched, sharingWith: earlier)
        #expect(charged < full / 8, "charged \(charged) of \(full)")
        #expect(SnapshotBook.size(of: patched, sharingWith: structure(viewer: 1, items: items(40), sections: 20)) == full, "equal arrays, not shared")

        var book = SnapshotBook(retention: .init(perViewer: 3, maxAge: 1_000, byteBudget: 1 << 20))
        var page = earlier
        for round in 0..<6 {
            page.sections[round % 20].items[0].version = UInt64(100 + round)
            book.served(page, id: "p\(round)", now: Int64(round), movingOnFrom: round > 0 ? "p\(round - 1)" : nil)
            #expect(book.bytes == book.recountedBytes)
        }
        #expect(book.bytes < 2 * full, "three snapshots of one page sharing most of it")
        book.served(page, id: "p4", now: 10)  // served again: moved to the newest place
        #expect(book.bytes == book.recountedBytes)
        #expect(book.lookup(viewer: 1, id: "p5", now: 1_006) == .expired)  // removed from the middle
        #expect(book.bytes == book.recountedBytes)
        _ = book.dropExpired(now: 2_000, viewers: [1])
        #expect(book.bytes == 0 && book.recountedBytes == 0)
    }
}

@Suite("SnapshotBook keys")
struct SnapshotBookKeyTests {
    @Test("Keys of ids that share their first 8 digits differ, and id order sorts as (viewer, id) does")
    func keysCompareTheWholeIDAndSortByIt() {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        func id(prefix: String = "") -> String {
            prefix + String((0..<(32 - prefix.count)).map { _ in digits[Int(generator.next() % 16)] })
        }
        let shared = "0123abcd"
        let (first, second) = (id(prefix: shared), id(prefix: shared))
        let (left, right) = (SnapshotBook.Key(viewer: 1, id: first), SnapshotBook.Key(viewer: 1, id: second))
        #expect(left.tag == right.tag)
        #expect((left == right) == (first == second))
        #expect(Set([left, right, SnapshotBook.Key(viewer: 1, id: first)]).count == (first == second ? 1 : 2))
        var keys = (0..<300).map { _ in SnapshotBook.Key(viewer: Int64(generator.next() % 4), id: id(prefix: generator.next() % 3 == 0 ? shared : "")) }
        keys.append(left)
        keys.append(right)
        let sorted = keys.sorted(by: SnapshotBook.Key.inIDOrder).map { ($0.viewer, $0.id) }
        let expected = keys.map { ($0.viewer, $0.id) }.sorted { $0 < $1 }
        #expect(sorted.elementsEqual(expected) { $0 == $1 })
    }
}
