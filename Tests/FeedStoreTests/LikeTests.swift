import FeedStore
import Foundation
import StoreOracle
import Synchronization
import Testing

@Suite("Likes")
struct LikeTests {
    @Test("A like adds one to the count, once per user; an unlike takes it back", arguments: Backend.all)
    func likeCountsOncePerUser(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(3, in: store)
        let video = try makeVideo(store, author: ids[0], likes: 10)
        #expect(try store.like(video: video.id, by: ids[1]).likeCount == 11)
        #expect(try store.like(video: video.id, by: ids[2]).likeCount == 12)
        #expect(throws: FeedStoreError.conflict(field: "user_id", reason: "user \(ids[1]) already likes video \(video.id)")) {
            try store.like(video: video.id, by: ids[1])
        }
        #expect(try store.unlike(video: video.id, by: ids[1]).likeCount == 11)
        #expect(throws: FeedStoreError.notFound(entity: .like, id: "\(ids[1])->\(video.id)")) { try store.unlike(video: video.id, by: ids[1]) }
        #expect(try store.like(video: video.id, by: ids[1]).likeCount == 12, "liking again after an unlike counts again")
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "999")) { try store.like(video: 999, by: ids[1]) }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "999")) { try store.like(video: video.id, by: 999) }
        let entries = try store.read { reader in try reader.changes(after: 0) }.filter { $0.kind != .userCreated }
        // Created, then four likes and unlikes that changed the count; refusals log nothing.
        #expect(entries.map(\.kind) == [.videoCreated, .videoUpdated, .videoUpdated, .videoUpdated, .videoUpdated])
    }

    @Test("A like's checks answer in order (video, user, the count's limit, the like) and a refused one changes nothing", arguments: Backend.all)
    func checksInOrder(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(2, in: store)
        let full = try makeVideo(store, author: ids[0], likes: Int64.max)
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "999")) { try store.like(video: 999, by: 998) }
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "999")) { try store.unlike(video: 999, by: 998) }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "998")) { try store.like(video: full.id, by: 998) }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "998")) { try store.unlike(video: full.id, by: 998) }
        #expect(throws: FeedStoreError.invalid(field: "like_count", reason: "must stay between 0 and \(Int64.max)")) {
            try store.like(video: full.id, by: ids[1])
        }
        #expect(throws: FeedStoreError.notFound(entity: .like, id: "\(ids[1])->\(full.id)")) { try store.unlike(video: full.id, by: ids[1]) }
        let video = try makeVideo(store, author: ids[0], likes: 3)
        try store.like(video: video.id, by: ids[1])
        #expect(throws: FeedStoreError.self) { try store.like(video: video.id, by: ids[1]) }
        let stored = try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video.id) }
        #expect(stored?.likeCount == 4)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: full.id) }?.likeCount == Int64.max)
        let entries = try store.read { reader in try reader.changes(after: 0) }.filter { $0.kind == .videoUpdated }
        #expect(entries.count == 1)  // the one like that counted
    }

    @Test("An unlike never takes the count below zero", arguments: Backend.all)
    func unlikeStopsAtZero(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(2, in: store)
        let video = try makeVideo(store, author: ids[0])
        try store.like(video: video.id, by: ids[1])
        try store.updateVideo(id: video.id, likeCount: 0)  // an editor reset the count
        #expect(try store.unlike(video: video.id, by: ids[1]).likeCount == 0)
    }

    @Test("Likes of one video arriving together all count", arguments: Backend.all)
    func concurrentLikesAllCount(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(41, in: store)
        let video = try makeVideo(store, author: ids[0], likes: 5)
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for user in ids.dropFirst().enumerated() where user.offset % 8 == thread {
                if (try? store.like(video: video.id, by: user.element)) == nil { failures.withLock { $0 += 1 } }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video.id) }?.likeCount == 45)
    }

    @Test("Deleting a user drops their likes and leaves the counts", arguments: Backend.all)
    func deletingAUserKeepsCounts(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(3, in: store)
        let video = try makeVideo(store, author: ids[0])
        try store.like(video: video.id, by: ids[1])
        try store.deleteUser(id: ids[1])
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video.id) }?.likeCount == 1)
        try store.like(video: video.id, by: ids[2])
        #expect(try store.unlike(video: video.id, by: ids[2]).likeCount == 1)
    }
}
