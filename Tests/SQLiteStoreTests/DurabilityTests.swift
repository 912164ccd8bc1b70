import FeedStore
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
