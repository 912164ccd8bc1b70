import FeedStore
import Foundation
import GRDB
import SQLiteStore
import Testing

@Suite("Durability")
struct DurabilityTests {
    @Test("Durability full is the default and sets synchronous FULL on the connection writes use; normal is offered")
    func durabilityChoosesSynchronousMode() throws {
        // Writes go through the pool's one writer connection; readers never commit, so the
        // setting that decides whether a commit is synced is the writer's.
        func writerSynchronous(_ store: SQLiteFeedStore) throws -> Int? {
            try store.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        }
        let full = try SQLiteFeedStore.temporary()
        #expect(try writerSynchronous(full) == 2)
        let normal = try SQLiteFeedStore.temporary(options: StorageOptions(durability: .normal))
        #expect(try writerSynchronous(normal) == 1)
    }
}

@Suite("Snapshot transactions and checkpoints")
struct MaintenanceWriteTests {
    func writerPragma(_ store: SQLiteFeedStore, _ name: String) throws -> Int? {
        try store.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA \(name)") }
    }

    @Test("Snapshot writes commit unsynced, and content writes after them are synced again (synchronous back to FULL)")
    func snapshotWritesLeaveContentWritesSynced() throws {
        let store = try SQLiteFeedStore.temporary()
        let snapshot = StoredSnapshot(id: "abc", viewerID: 1, createdAt: 1, structure: Data([1, 2, 3]))
        try store.persistSnapshots(upserts: [snapshot], deletions: [], prune: [1], keepPerViewer: 4, bases: [snapshot])
        #expect(try writerPragma(store, "synchronous") == 2)
        #expect(try store.snapshot(id: "abc", viewer: 1) != nil)
        _ = try store.createUser(handle: "alice", displayName: "Alice")
        #expect(try writerPragma(store, "synchronous") == 2)
        // A failing snapshot transaction restores it too.
        #expect(throws: FeedStoreError.self) {
            try store.persistSnapshots(
                upserts: [StoredSnapshot(id: "", viewerID: 1, createdAt: 1, structure: Data())], deletions: [], prune: [], keepPerViewer: 4, bases: [])
        }
        #expect(try writerPragma(store, "synchronous") == 2)
    }

    @Test("With a background checkpoint interval, commits never checkpoint and the log still reaches the database file")
    func backgroundCheckpointsCopyTheLog() throws {
        let store = try SQLiteFeedStore.temporary(options: StorageOptions(backgroundCheckpointInterval: .milliseconds(20)))
        #expect(try writerPragma(store, "wal_autocheckpoint") == 0)
        func fileSize() throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int) ?? 0
        }
        let before = try fileSize()
        // About 200 KB of rows: far below the 1,000 pages after which a commit would checkpoint.
        for index in 0..<200 {
            _ = try store.createUser(handle: "user\(index)", displayName: String(repeating: "x", count: 60))
            _ = try store.createVideo(
                authorID: Int64(index + 1), title: String(repeating: "t", count: 90), thumbnailURL: "https://cdn.example/\(index).jpg", durationSeconds: 30)
        }
        let deadline = Date().addingTimeInterval(10)
        while try fileSize() <= before && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(try fileSize() > before, "the checkpointer copied the log into the file")
        let plain = try SQLiteFeedStore.temporary()  // without the option, SQLite's default stays
        #expect(try writerPragma(plain, "wal_autocheckpoint") == 1000)
    }
}
