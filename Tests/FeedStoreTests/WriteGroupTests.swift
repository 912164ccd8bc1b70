import FeedStore
import Foundation
import StoreOracle
import Testing

@Suite("Group commit")
struct WriteGroupTests {
    @Test("A group commits its writes with their own versions; a failing write is rolled back alone", arguments: Backend.all)
    func failingWriteIsRolledBackAlone(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let alice = try store.createUser(handle: "alice", displayName: "Alice")
        var results: [Result<Int64, FeedStoreError>] = []
        func attempt(_ write: () throws -> Int64) {
            do {
                results.append(.success(try write()))
            } catch {
                results.append(.failure(error as? FeedStoreError ?? .storage(code: .other, message: "\(error)")))
            }
        }
        try store.writeGroup {
            attempt { try store.createUser(handle: "bob", displayName: "Bob").id }
            // Taken by the write just before it, in the same uncommitted transaction.
            attempt { try store.createUser(handle: "bob", displayName: "Bob again").id }
            attempt { try video(store, author: alice.id).id }
            attempt { try store.follow(follower: alice.id, followee: 999).followeeID }
            attempt { try store.updateVideo(id: 1, likeCount: 7).likeCount }
        }
        #expect(results.count == 5)
        #expect(throws: FeedStoreError.conflict(field: "handle", reason: "handle bob is already taken")) { try results[1].get() }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "999")) { try results[3].get() }
        #expect(try results[4].get() == 7)
        // The failed writes took no version: the log has no gap.
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(entries.map(\.kind) == [.userCreated, .userCreated, .videoCreated, .videoUpdated])
        #expect(entries.map(\.sequence) == [1, 2, 3, 4])
        #expect(store.changeVersion == 4)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(User.self, id: try results[0].get()) }?.handle == "bob")
        #expect(try store.read { reader in try reader.counts() }.users == 2)
    }

    @Test("Groups number their writes after every earlier write; the ad epoch moves once per ad write that stayed", arguments: Backend.all)
    func groupsContinueTheLogAndTheAdEpoch(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let alice = try store.createUser(handle: "alice", displayName: "Alice")
        let epoch = try store.read { reader in try reader.activeAds() }.epoch
        try store.writeGroup {
            _ = try? store.createAd(advertiser: "Acme", title: "Ad", imageURL: "https://cdn.example/a.jpg", targetURL: "https://acme.example", weight: 100)
            _ = try? store.updateAd(id: 999, title: "missing")  // fails alone: no epoch
            _ = try? video(store, author: alice.id)
        }
        _ = try store.createUser(handle: "bob", displayName: "Bob")  // alone, between groups
        try store.writeGroup {
            _ = try? store.updateAd(id: 1, weight: 5)
            _ = try? store.updateVideo(id: 1, likeCount: 3)
        }
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(entries.map(\.sequence) == [1, 2, 3, 4, 5, 6])
        #expect(entries.map(\.kind) == [.userCreated, .adChanged, .videoCreated, .userCreated, .adChanged, .videoUpdated])
        #expect(store.changeVersion == 6)
        let ads = try store.read { reader in try reader.activeAds() }
        #expect(ads.epoch == epoch + 2)
        #expect(ads.ads.map(\.weight) == [5])
    }

    @Test("A write whose statement the server refuses is rolled back alone; the group goes on", arguments: Backend.all)
    func refusedStatementIsRolledBackAlone(_ backend: Backend) throws {
        let store = try makeStore(backend)
        var refused: (any Error)?
        try store.writeGroup {
            _ = try? store.createUser(handle: "alice", displayName: "Alice")
            do {
                try insertLikeOfStrangers(store)  // a foreign key the server checks, not the write
            } catch {
                refused = error
            }
            _ = try? store.createUser(handle: "bob", displayName: "Bob")
        }
        #expect(refused != nil)
        #expect(try store.read { reader in try reader.changes(after: 0) }.map(\.kind) == [.userCreated, .userCreated])
        #expect(try store.read { reader in try reader.counts() }.users == 2)
    }

    /// A write whose only statement inserts a like of a video that does not exist.
    private func insertLikeOfStrangers<Store: FeedStorage>(_ store: Store) throws {
        _ = try store.write(touchesAds: false, change: { _ in PendingChange(kind: .videoUpdated, key: 999) }) { transaction in
            try transaction.insertLike(video: 999, user: 998, createdAt: 1)
        }
    }

    func video(_ store: any FeedStorage, author: Int64) throws(FeedStoreError) -> Video {
        try store.createVideo(authorID: author, title: "A video", thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 30)
    }

    @Test("Reads inside a group see its writes so far", arguments: Backend.all)
    func readsInsideAGroupSeeItsWrites(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let alice = try store.createUser(handle: "alice", displayName: "Alice")
        var seen: Int64?
        try store.writeGroup {
            _ = try? store.updateVideo(id: 1, likeCount: 1)  // no such video: fails alone
            let video = try? video(store, author: alice.id)
            _ = try? store.updateVideo(id: video?.id ?? 0, likeCount: 42)
            // No field changes: answered from a read, which must see the like above.
            seen = try? store.updateVideo(id: video?.id ?? 0).likeCount
        }
        #expect(seen == 42)
    }

    @Test("Writes from another thread do not join a group open on this one", arguments: Backend.all)
    func otherThreadsDoNotJoin(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let started = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        try store.writeGroup {
            _ = try? store.createUser(handle: "inside", displayName: "Inside")
            Thread.detachNewThread {
                started.signal()
                // Waits for the group's transaction (SQLite's writer, PostgreSQL's store_meta
                // lock), then commits on its own.
                _ = try? store.createUser(handle: "outside", displayName: "Outside")
                done.signal()
            }
            started.wait()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(entries.map(\.sequence) == [1, 2])
        #expect(try store.read { reader in try reader.counts() }.users == 2)
    }
}
