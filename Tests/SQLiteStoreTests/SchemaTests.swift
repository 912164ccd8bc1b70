import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

@Suite("Schema and opening")
struct SchemaTests {
    @Test("A fresh database is migrated to the latest schema with every table, index and trigger")
    func freshDatabaseIsFullyMigrated() throws {
        let store = try SQLiteFeedStore.temporary()
        #expect(
            try store.appliedMigrations() == [
                "v1: users, videos, ads, follows, snapshots, store_meta", "v2: change_log", "v3: snapshot bases", "v4: likes", "v5: snapshot log",
            ])
        let objects = try store.schemaObjects()
        for expected in [
            "table users", "table videos", "table ads", "table follows", "table snapshot_log", "table store_meta", "table change_log",
            "table likes", "index likes_by_user",
            "index videos_by_author_time", "index videos_by_popularity", "index follows_by_followee",
            "index users_by_popularity", "index ads_active", "trigger follows_count_insert", "trigger follows_count_delete",
        ] {
            #expect(objects.contains(expected), "missing \(expected)")
        }
        for gone in ["table snapshots", "table snapshot_bases"] { #expect(!objects.contains(gone), "\(gone) is still there") }
        #expect(try store.isEmpty())
        #expect(try store.counts() == StoreCounts(users: 0, videos: 0, ads: 0, follows: 0, snapshots: 0))
        #expect(store.changeVersion == 0)
        #expect(try store.read { try $0.activeAds() }.epoch == 0)
    }

    @Test("The store runs in WAL journal mode")
    func journalModeIsWAL() throws {
        let store = try SQLiteFeedStore.temporary()
        #expect(try store.journalMode() == "wal")
    }

    @Test("Opening a path creates its parent folders, and reopening keeps data and the change version")
    func openCreatesFolderAndReopenKeepsData() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("feedstore-open-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("nested/data/deltafeed.sqlite").path
        let user: User
        do {
            let store = try SQLiteFeedStore(path: path)
            user = try store.createUser(handle: "alice", displayName: "Alice")
            try store.createVideo(authorID: user.id, title: "A video", thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 30)
            #expect(store.changeVersion == 2)
        }
        #expect(FileManager.default.fileExists(atPath: path))
        let reopened = try SQLiteFeedStore(path: path)
        #expect(reopened.changeVersion == 2)
        #expect(try reopened.read { try $0.user(id: user.id) } == user)
        #expect(try reopened.appliedMigrations().count == 5)
    }

    @Test("A file that is not a database fails with a storage error")
    func garbageFileFailsWithStorageError() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("feedstore-bad-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("bad.sqlite").path
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteFeedStore(path: path)
        } throws: { error in
            guard case .storage = error as? FeedStoreError else { return false }
            return true
        }
    }

    @Test("A temporary store deletes its folder when released")
    func temporaryStoreCleansUp() throws {
        var store: SQLiteFeedStore? = try SQLiteFeedStore.temporary()
        let folder = URL(fileURLWithPath: store!.path).deletingLastPathComponent().path
        try store!.createUser(handle: "bob", displayName: "Bob")
        #expect(FileManager.default.fileExists(atPath: folder))
        store = nil
        #expect(!FileManager.default.fileExists(atPath: folder))
    }
}
