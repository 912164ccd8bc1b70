import FeedStore
import GRDB
import SQLiteStore
import StoreOracle
import Testing

@Suite("Group commit on SQLite")
struct WriteGroupCommitTests {
    @Test("When a group's commit fails, none of its writes is stored and the change version stays")
    func failedCommitStoresNothing() throws {
        let store = try SQLiteFeedStore.temporary()
        try store.createUser(handle: "alice", displayName: "Alice")
        var insideWrites = 0
        #expect(throws: FeedStoreError.self) {
            try store.writeGroup {
                if (try? store.createUser(handle: "bob", displayName: "Bob")) != nil { insideWrites += 1 }
                // A foreign key checked at COMMIT (deferred) fails the whole transaction after
                // every write in it has returned.
                let broken: Void? = try? store.write(touchesAds: false, change: { _ in PendingChange(kind: .followed, key: 998, otherKey: 999) }) {
                    transaction in
                    try transaction.db.execute(sql: "PRAGMA defer_foreign_keys = ON")
                    try transaction.db.execute(sql: "INSERT INTO follows (follower_id, followee_id, created_at) VALUES (998, 999, 0)")
                }
                if broken != nil { insideWrites += 1 }
            }
        }
        #expect(insideWrites == 2, "both writes returned inside the group")
        #expect(store.changeVersion == 1)
        #expect(try store.read { reader in try reader.counts() }.users == 1)
        #expect(try store.read { reader in try reader.changes(after: 0) }.count == 1)
        // The store goes on: the next write commits.
        try store.createUser(handle: "carol", displayName: "Carol")
        #expect(store.changeVersion == 2)
    }
}
