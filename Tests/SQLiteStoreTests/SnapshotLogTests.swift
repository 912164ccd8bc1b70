import Deterministic
import FeedStore
import Foundation
import GRDB
import StoreOracle
import Testing

// @testable: these tests read the store's snapshot log (`log`: its directory and rows), which is
// internal to the store: how snapshots sit on disk is not an API.
@testable import SQLiteStore

@Suite("The snapshot log")
struct SnapshotLogTests {
    /// A store file in a folder of its own, removed at the end.
    final class StoreFile {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("snapshot-log-\(UUID().uuidString)")
        var path: String { root.appendingPathComponent("store.sqlite").path }
        let clock = Clock()

        /// Milliseconds that move only when told.
        final class Clock: @unchecked Sendable {
            private let lock = NSLock()
            private var value: Int64 = 1_000
            var now: Int64 { lock.withLock { value } }
            func advance(by milliseconds: Int64) { lock.withLock { value += milliseconds } }
        }

        var now: Int64 { clock.now }

        func open(retention: StorageOptions.SnapshotRetention = .init()) throws -> SQLiteFeedStore {
            try SQLiteFeedStore(path: path, options: StorageOptions(snapshotRetention: retention, clock: { [clock] in clock.now }))
        }

        func advance(by milliseconds: Int64) { clock.advance(by: milliseconds) }

        deinit { try? FileManager.default.removeItem(at: root) }
    }

    static func rowCount(_ store: SQLiteFeedStore) throws -> Int {
        try store.pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM snapshot_log") ?? -1 }
    }

    static func snapshot(_ viewer: Int64, _ id: String, _ createdAt: Int64, _ bytes: [UInt8]) -> StoredSnapshot {
        StoredSnapshot(id: id, viewerID: viewer, createdAt: createdAt, structure: Data(bytes))
    }

    @Test("A batch of many viewers' snapshots is a few appended rows, whatever the viewers, and reads back byte for byte")
    func aBatchIsAFewRows() throws {
        let file = StoreFile()
        let store = try file.open()
        let upserts = (0..<200).map { Self.snapshot(Int64($0 * 7), "s\($0)", 1_000, Array(repeating: UInt8($0 % 251), count: 300 + $0)) }
        try store.persistSnapshots(upserts: upserts, deletions: [], prune: [], keepPerViewer: 4, bases: [])
        #expect(try Self.rowCount(store) == 4, "rows of at most 64")
        for snapshot in upserts { #expect(try store.snapshot(id: snapshot.id, viewer: snapshot.viewerID) == snapshot) }
        #expect(try store.snapshot(id: "s1", viewer: 0) == nil, "another viewer's id")
        #expect(try store.counts().snapshots == 200)
        // Similar structures share their bytes: 60,000 B of structures take a few KB.
        let stored = try store.pool.read { try Int.fetchOne($0, sql: "SELECT sum(length(body) + length(directory)) FROM snapshot_log") ?? 0 }
        #expect(stored < 6_000, "\(stored) B")
    }

    @Test("A row is deleted with the batch that removes the last thing it holds, and not before")
    func emptiedRowsAreDeleted() throws {
        let file = StoreFile()
        let store = try file.open()
        try store.persistSnapshots(
            upserts: [Self.snapshot(1, "a", 1_000, [1]), Self.snapshot(2, "b", 1_000, [2])], deletions: [], prune: [], keepPerViewer: 4, bases: [])
        try store.persistSnapshots(upserts: [], deletions: [(viewer: 1, id: "a")], prune: [], keepPerViewer: 4, bases: [])
        // The first row still holds b; the second holds the tombstone of a.
        #expect(try Self.rowCount(store) == 2)
        try store.persistSnapshots(upserts: [], deletions: [(viewer: 2, id: "b")], prune: [], keepPerViewer: 4, bases: [])
        // b was the first row's last entry: it goes, and the tombstone row with it.
        #expect(try Self.rowCount(store) == 0)
        #expect(try store.counts().snapshots == 0)
    }

    @Test("Reopening finds exactly what was kept: deleted, pruned and replaced snapshots stay gone while their rows stay")
    func reopeningKeepsTheDirectory() throws {
        let file = StoreFile()
        do {
            let store = try file.open(retention: .init(maxPerViewer: 3))
            try store.persistSnapshots(
                upserts: (1...4).map { Self.snapshot(1, "a\($0)", 1_000 + Int64($0), [UInt8($0)]) } + [Self.snapshot(2, "b", 1_000, [9])],
                deletions: [], prune: [], keepPerViewer: 4, bases: [Self.snapshot(1, "base", 1_000, [7, 7])])
            file.advance(by: 10)
            try store.persistSnapshots(
                upserts: [Self.snapshot(1, "a1", 1_100, [11])], deletions: [(viewer: 1, id: "a2")], prune: [], keepPerViewer: 4, bases: [])
            try store.saveSnapshot(id: "a5", viewer: 1, structure: Data([5]))  // keeps a5 and the 2 newest others: a1 (1_100), a4
            #expect(try Self.rowCount(store) == 3)
        }
        let store = try file.open(retention: .init(maxPerViewer: 3))
        #expect(try store.snapshot(id: "a1", viewer: 1) == Self.snapshot(1, "a1", 1_100, [11]), "replaced by its newer copy")
        for gone in ["a2", "a3"] { #expect(try store.snapshot(id: gone, viewer: 1) == nil, "\(gone) came back") }
        #expect(try store.snapshot(id: "a4", viewer: 1) == Self.snapshot(1, "a4", 1_004, [4]))
        #expect(try store.snapshot(id: "a5", viewer: 1)?.structure == Data([5]))
        #expect(try store.snapshot(id: "b", viewer: 2) == Self.snapshot(2, "b", 1_000, [9]))
        #expect(try store.snapshotBase(id: "base", viewer: 1) == Self.snapshot(1, "base", 1_000, [7, 7]))
        #expect(try store.counts().snapshots == 4)
        // Writing after reopening goes on from the rows there.
        try store.persistSnapshots(upserts: [Self.snapshot(2, "c", 1_200, [3])], deletions: [(viewer: 2, id: "b")], prune: [], keepPerViewer: 4, bases: [])
        #expect(try store.snapshot(id: "c", viewer: 2)?.structure == Data([3]))
        #expect(try store.snapshot(id: "b", viewer: 2) == nil)
    }

    @Test("Random batches, prunes and reopenings: every lookup after reopening equals the one before, and every row holds something")
    func randomHistoriesSurviveReopening() throws {
        var random = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &random)
        var generator = SplitMix64(seed: seed)
        let file = StoreFile()
        var store: SQLiteFeedStore? = try file.open(retention: .init(maxPerViewer: 4, maxAgeMilliseconds: 5_000))
        let viewers: [Int64] = [1, 2, 3, 4, 5]
        let ids = (0..<12).map { "id\($0)" }
        func everything(_ store: SQLiteFeedStore) throws -> [String: StoredSnapshot] {
            var found: [String: StoredSnapshot] = [:]
            for viewer in viewers {
                for id in ids {
                    if let snapshot = try store.snapshot(id: id, viewer: viewer) { found["s \(viewer) \(id)"] = snapshot }
                    if let base = try store.snapshotBase(id: id, viewer: viewer) { found["b \(viewer) \(id)"] = base }
                }
            }
            return found
        }
        for step in 0..<300 {
            guard let current = store else { break }
            file.advance(by: Int64.random(in: 0...200, using: &generator))
            let now = file.now
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5:
                let upserts = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                    Self.snapshot(
                        viewers.randomElement(using: &generator)!, ids.randomElement(using: &generator)!, now - Int64.random(in: 0...50, using: &generator),
                        (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...3, using: &generator) })
                }
                let bases = (0..<Int.random(in: 0...1, using: &generator)).map { _ in
                    Self.snapshot(viewers.randomElement(using: &generator)!, ids.randomElement(using: &generator)!, now, [UInt8(step % 256)])
                }
                let deletions = (0..<Int.random(in: 0...2, using: &generator)).map { _ in
                    (viewer: viewers.randomElement(using: &generator)!, id: ids.randomElement(using: &generator)!)
                }
                let prune = Set((0..<Int.random(in: 0...2, using: &generator)).map { _ in viewers.randomElement(using: &generator)! })
                try current.persistSnapshots(upserts: upserts, deletions: deletions, prune: prune, keepPerViewer: 3, bases: bases)
            case 5..<7:
                try current.saveSnapshot(
                    id: ids.randomElement(using: &generator)!, viewer: viewers.randomElement(using: &generator)!, structure: Data([UInt8(step % 256)]))
            case 7:
                try current.pruneExpiredSnapshots()
                try current.compactSnapshotLog(minimumAge: Int64.random(in: 0...500, using: &generator), limit: Int.random(in: 1...20, using: &generator))
            default:
                let before = try everything(current)
                store = nil
                let reopened = try file.open(retention: .init(maxPerViewer: 4, maxAgeMilliseconds: 5_000))
                #expect(try everything(reopened) == before, "seed \(seed), step \(step)")
                store = reopened
            }
            let rows = try Self.rowCount(store!)
            let known = store!.log.withLock { $0.rowNumbers.count }
            #expect(rows == known, "seed \(seed), step \(step): \(rows) rows stored, \(known) known")
        }
        // Nothing retained means no rows at all.
        file.advance(by: 1_000_000)
        try store!.pruneExpiredSnapshots()
        #expect(try Self.rowCount(store!) == 0, "seed \(seed)")
    }

    @Test("Compaction moves the few snapshots a sparse old row still holds into a new row and deletes it; they read back, also after reopening")
    func compactionEmptiesSparseRows() throws {
        let file = StoreFile()
        var store = try file.open()
        // 64 viewers' snapshots in one row; all but two are pruned by newer snapshots.
        try store.persistSnapshots(
            upserts: (0..<64).map { Self.snapshot(Int64($0), "old", 1_000, [UInt8($0), 1, 2, 3]) }, deletions: [], prune: [], keepPerViewer: 1, bases: [])
        try store.persistSnapshots(
            upserts: (2..<64).map { Self.snapshot(Int64($0), "new", 1_001, [UInt8($0)]) }, deletions: [], prune: Set((2..<64).map { Int64($0) }),
            keepPerViewer: 1,
            bases: [])
        let before = try Self.rowCount(store)
        #expect(try store.compactSnapshotLog(minimumAge: 60_000) == 0, "too young")
        file.advance(by: 60_001)
        #expect(try store.compactSnapshotLog() == 2, "the two snapshots the first row still holds")
        #expect(try Self.rowCount(store) == before, "the sparse row went, one row came")
        for viewer in [Int64(0), 1] { #expect(try store.snapshot(id: "old", viewer: viewer)?.structure == Data([UInt8(viewer), 1, 2, 3])) }
        #expect(try store.snapshot(id: "old", viewer: 2) == nil)
        #expect(try store.compactSnapshotLog(minimumAge: 0) == 0, "nothing sparse is left")
        store = try file.open()
        for viewer in [Int64(0), 1] { #expect(try store.snapshot(id: "old", viewer: viewer)?.structure == Data([UInt8(viewer), 1, 2, 3])) }
        #expect(try store.snapshot(id: "new", viewer: 63)?.structure == Data([63]))
        #expect(try store.counts().snapshots == 64)
    }

    @Test("Opening a store from before the log copies its snapshots and bases into it")
    func olderStoresAreConverted() throws {
        let file = StoreFile()
        try FileManager.default.createDirectory(at: file.root, withIntermediateDirectories: true)
        do {
            let pool = try DatabasePool(path: file.path)
            try Schema.migrator.migrate(pool, upTo: "v4: likes")
            try pool.write { db in
                for index in 0..<100 {
                    try db.execute(
                        sql: "INSERT INTO snapshots (viewer_id, id, created_at, structure) VALUES (?, ?, ?, ?)",
                        arguments: [index % 7, "s\(index)", 1_000 + index, Data([UInt8(index)])])
                }
                try db.execute(sql: "INSERT INTO snapshot_bases (viewer_id, id, created_at, structure) VALUES (3, 'b', 900, x'0102')")
            }
        }
        let store = try file.open()
        #expect(try store.counts().snapshots == 100)
        #expect(try store.snapshot(id: "s42", viewer: 0) == Self.snapshot(0, "s42", 1_042, [42]))
        #expect(try store.snapshotBase(id: "b", viewer: 3) == Self.snapshot(3, "b", 900, [1, 2]))
        #expect(try Self.rowCount(store) == 3, "one row of bases, two of 64 snapshots at most")
        #expect(try !store.schemaObjects().contains("table snapshots"))
    }
}
