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
}
