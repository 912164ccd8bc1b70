import FeedStore
import Foundation
import PostgresStore
import PostgresTestSupport
import Testing

@Suite(
    "PostgreSQL unreachable, lost and back",
    needsPostgres)
struct PostgresFailureTests {
    @Test("A server that refuses connections makes the store unavailable, not a storage error")
    func refusedServerIsUnavailable() {
        #expect {
            try PostgresFeedStore(url: "postgres://nobody@127.0.0.1:1/none")
        } throws: { error in
            guard case .unavailable(let reason) = error as? FeedStoreError else { return false }
            return !reason.contains("nobody")
        }
    }

    @Test("When PostgreSQL drops the store's connections, the next read and write reconnect; a write cut mid-transaction is unavailable and changed nothing")
    func droppedConnectionsReconnect() throws {
        let schema = freshSchemaName()
        let store = try PostgresFeedStore(url: postgresURL!, schema: schema, options: StorageOptions(maximumReaderCount: 1))
        let admin = try PostgresConnection(url: postgresURL!)
        let author = try store.createUser(handle: "author", displayName: "Author").id
        func dropConnections() throws {
            try admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", ["deltafeed " + schema])
            usleep(100_000)
        }

        // Idle pooled connections the server ended: the next uses reconnect on their own.
        try dropConnections()
        #expect(try makeVideo(store, author: author).id == 1)
        try dropConnections()
        #expect(try store.read { try $0.changeVersion() } == 2)

        // A write whose connection is cut inside its transaction answers unavailable, and
        // rolls back: the counter, the log and the table are as before.
        #expect {
            try store.write(touchesAds: false, change: { _ in PendingChange(kind: .videoCreated, key: 99) }) { _ in
                try dropConnections()
            }
        } throws: { error in
            guard case .unavailable = error as? FeedStoreError else { return false }
            return true
        }
        #expect(try store.storedChangeVersion() == 2)
        #expect(try store.counts().videos == 1)
        #expect(try makeVideo(store, author: author).id == 2)
    }

    @Test("A group that cannot take the store_meta lock fails whole: its writes get the lock's error, nothing is stored, the store goes on")
    func groupWithoutTheLockFailsWhole() throws {
        let schema = freshSchemaName()
        let store = try PostgresFeedStore(url: postgresURL!, schema: schema, options: StorageOptions(maximumReaderCount: 1, busyTimeout: 0.2))
        try makeUsers(2, in: store)
        let video = try makeVideo(store, author: 1).id
        // Another replica in its write: it holds the lock past the group's lock_timeout.
        let other = try PostgresConnection(url: postgresURL!)
        try other.execute("SELECT set_config('search_path', $1, false)", [schema])
        try other.execute("BEGIN")
        try other.execute("SELECT change_version FROM store_meta WHERE id = 1 FOR UPDATE")

        let batch = StagedBatch()
        batch.add(store.stageLike(video: video, by: 2))
        var direct: Result<User, FeedStoreError>?
        #expect(throws: FeedStoreError.self) {
            try store.writeGroup {
                store.performTogether(batch.writes)
                do throws(FeedStoreError) { direct = .success(try store.createUser(handle: "late", displayName: "Late")) } catch { direct = .failure(error) }
            }
        }
        #expect(batch.results.allSatisfy { $0?.error != nil })
        #expect(direct.map { (try? $0.get()) == nil } == true)
        try other.execute("ROLLBACK")

        #expect(try store.storedChangeVersion() == 3)
        #expect(try store.counts().users == 2)
        #expect(try store.like(video: video, by: 2).likeCount == 1)
    }
}
