import DeltaFeedClient
import FeedStore
import Foundation
import GRDB
import SQLiteStore
import StoreOracle
import Synchronization
import Testing

/// The event loop never waits on storage: while another process holds the database's write
/// lock, health checks, feeds and deltas are answered from memory, and a write waits for the
/// lock on the writer's thread, then answers 503 with Retry-After, having changed nothing.
@Suite("A held write lock does not stall reads")
struct StorageLockTests {
    @Test("Reads are answered while another process holds the write lock") func readsAreAnsweredWhileAnotherProcessHoldsTheWriteLock() throws {
        var options = StorageOptions()
        options.busyTimeout = 1
        let server = try TestServer(storeOptions: options)
        defer { server.stop() }
        let feed = try server.freshFeed(viewer: 3, query: FeedQuery(limit: 10))
        guard case .string(let snapshot)? = feed.json["snapshot"],
            case .int(let video)? = feed.json["sections"]?[1]?["items"]?[0]?["data"]?["video"]?["id"]
        else { throw TestFailure("feed without a snapshot or a video") }

        // Another process: a second connection to the same file takes the write lock.
        let other = try DatabaseQueue(path: server.store.path)
        let release = Mutex(false)
        let released = Mutex(false)
        let holding = Mutex(false)
        let lockHolder = Thread {
            try? other.inDatabase { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                holding.withLock { $0 = true }
                for _ in 0..<1000 where !release.withLock({ $0 }) { usleep(10_000) }
                try db.execute(sql: "ROLLBACK")
            }
            released.withLock { $0 = true }
        }
        lockHolder.start()
        while !holding.withLock({ $0 }) { usleep(1_000) }

        #expect(try server.request("GET", "/healthz", token: nil).status == 200)
        #expect(try server.request("GET", "/v1/users/4/feed?limit=10", token: nil).status == 200)
        #expect(try server.request("GET", "/v1/users/3/feed/delta?since=\(snapshot)", token: nil).status == 304)
        #expect(!released.withLock { $0 }, "the reads were answered while the lock was held")

        let refused = try server.request("PATCH", "/v1/videos/\(video)", json: .object(["like_count": .int(424_242)]))
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(!released.withLock { $0 })

        release.withLock { $0 = true }
        while !released.withLock({ $0 }) { usleep(1_000) }
        #expect(try server.store.read { try $0.video(id: video) }?.likeCount != 424_242, "a refused write changed nothing")
        let accepted = try server.request("PATCH", "/v1/videos/\(video)", json: .object(["like_count": .int(424_242)]))
        #expect(accepted.status == 200)
        #expect(try server.store.read { try $0.video(id: video) }?.likeCount == 424_242)
        // The writer reads its own write at once: the next delta carries it.
        let delta = try server.request("GET", "/v1/users/3/feed/delta?since=\(snapshot)", token: nil)
        #expect(delta.status == 200)
        #expect(String(decoding: delta.body, as: UTF8.self).contains("424242"))
    }
}

/// A replica still catching up with the change log must not get traffic.
@Suite("Readiness")
struct ReadinessTests {
    @Test("/healthz answers 503 starting until the service is ready, then 200 ok")
    func healthzSaysStartingUntilReady() throws {
        let ready = Mutex(false)
        let server = try TestServer(seed: DemoSeed(users: 5, videos: 10, ads: 1), isReady: { ready.withLock { $0 } })
        defer { server.stop() }
        let starting = try server.request("GET", "/healthz", token: nil)
        #expect(starting.status == 503)
        #expect(String(decoding: starting.body, as: UTF8.self) == #"{"status":"starting"}"#)
        ready.withLock { $0 = true }
        let healthy = try server.request("GET", "/healthz", token: nil)
        #expect(healthy.status == 200)
        #expect(String(decoding: healthy.body, as: UTF8.self) == #"{"status":"ok"}"#)
    }
}
