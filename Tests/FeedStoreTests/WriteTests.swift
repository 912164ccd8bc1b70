import FeedStore
import Foundation
import StoreOracle
import Testing

@Suite("Writes, counts and versions")
struct WriteTests {
    @Test("Follow and unfollow maintain follower and following counts", arguments: Backend.all)
    func followMaintainsCounts(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(4, in: store)
        try store.follow(follower: ids[0], followee: ids[1])
        try store.follow(follower: ids[2], followee: ids[1])
        try store.follow(follower: ids[3], followee: ids[1])
        try store.follow(follower: ids[1], followee: ids[0])
        var users = try store.read { try $0.users(ids: ids) }
        #expect(users[ids[1]]?.followerCount == 3)
        #expect(users[ids[1]]?.followingCount == 1)
        #expect(users[ids[0]]?.followerCount == 1)
        #expect(users[ids[0]]?.followingCount == 1)
        #expect(try store.read { try $0.followees(of: ids[0]) } == [ids[1]])
        #expect(try store.read { try $0.followers(of: ids[1]) } == [ids[0], ids[2], ids[3]])
        #expect(try store.read { try $0.isFollowing(follower: ids[2], followee: ids[1]) })
        #expect(try !store.read { try $0.isFollowing(follower: ids[1], followee: ids[2]) })

        try store.unfollow(follower: ids[2], followee: ids[1])
        users = try store.read { try $0.users(ids: ids) }
        #expect(users[ids[1]]?.followerCount == 2)
        #expect(users[ids[2]]?.followingCount == 0)
        #expect(try store.counts().follows == 3)
    }

    @Test("Deleting a user removes their videos and follows and fixes the others' counts", arguments: Backend.all)
    func deleteUserCascades(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(3, in: store)
        try store.follow(follower: ids[0], followee: ids[1])
        try store.follow(follower: ids[1], followee: ids[2])
        try store.follow(follower: ids[2], followee: ids[1])
        try makeVideo(store, author: ids[1])
        try makeVideo(store, author: ids[0])
        try store.deleteUser(id: ids[1])
        let users = try store.read { try $0.users(ids: ids) }
        #expect(users[ids[1]] == nil)
        #expect(users[ids[0]]?.followingCount == 0)
        #expect(users[ids[2]]?.followerCount == 0)
        #expect(users[ids[2]]?.followingCount == 0)
        #expect(try store.counts() == StoreCounts(users: 2, videos: 1, ads: 0, follows: 0, snapshots: 0))
    }

    @Test("A partial video update changes only the given fields and bumps updated_at", arguments: Backend.all)
    func partialVideoUpdate(_ backend: Backend) throws {
        let clock = ManualClock(start: 1_000, step: 0)
        let store = try makeStore(backend, clock: clock)
        let author = try store.createUser(handle: "a", displayName: "A").id
        let video = try makeVideo(store, author: author, title: "Before", likes: 2)
        #expect(video.createdAt == 1_000 && video.updatedAt == 1_000)
        clock.advance(by: 500)
        let updated = try store.updateVideo(id: video.id, title: "  After ", likeCount: 10)
        #expect(updated.title == "After")
        #expect(updated.likeCount == 10)
        #expect(updated.thumbnailURL == video.thumbnailURL)
        #expect(updated.durationSeconds == video.durationSeconds)
        #expect(updated.viewCount == video.viewCount)
        #expect(updated.createdAt == 1_000)
        #expect(updated.updatedAt == 1_500)
        #expect(try store.read { try $0.video(id: video.id) } == updated)

        let version = store.changeVersion
        #expect(try store.updateVideo(id: video.id) == updated)
        #expect(store.changeVersion == version, "an empty update writes nothing")

        clock.advance(by: 1)
        let counted = try store.addToVideoCounts(id: video.id, likes: 5, views: 100)
        #expect(counted.likeCount == 15 && counted.viewCount == 100 && counted.updatedAt == 1_501)
        try store.deleteVideo(id: video.id)
        #expect(try store.read { try $0.video(id: video.id) } == nil)
    }

    @Test("Ids are never reused after a deletion", arguments: Backend.all)
    func idsAreNotReused(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let author = try store.createUser(handle: "a", displayName: "A").id
        let first = try makeVideo(store, author: author)
        try store.deleteVideo(id: first.id)
        let second = try makeVideo(store, author: author)
        #expect(second.id > first.id)
    }

    @Test("User updates set, keep and remove the avatar", arguments: Backend.all)
    func userUpdates(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let user = try store.createUser(handle: "shayne", displayName: "Shayne", avatarURL: "https://a.example/1.jpg")
        let renamed = try store.updateUser(id: user.id, displayName: "Ann")
        #expect(renamed.displayName == "Ann" && renamed.avatarURL == "https://a.example/1.jpg")
        let removed = try store.updateUser(id: user.id, avatarURL: .some(nil))
        #expect(removed.avatarURL == nil && removed.displayName == "Ann")
        let set = try store.updateUser(id: user.id, avatarURL: "https://a.example/2.jpg")
        #expect(set.avatarURL == "https://a.example/2.jpg")
        #expect(try store.read { try $0.user(id: user.id) } == set)
    }

    @Test("The change version increases on every write and never on a failed write", arguments: Backend.all)
    func changeVersionTracksEveryWrite(_ backend: Backend) throws {
        let store = try makeStore(backend)
        var expected: Int64 = 0
        func step(_ description: String, succeeds: Bool = true, _ write: () throws -> Void) {
            do {
                try write()
                #expect(succeeds, "\(description) should have failed")
            } catch {
                #expect(!succeeds, "\(description) failed: \(error)")
            }
            if succeeds { expected += 1 }
            #expect(store.changeVersion == expected, "after \(description)")
            #expect((try? store.storedChangeVersion()) == expected, "stored version after \(description)")
        }
        var ids: [Int64] = []
        var video: Int64 = 0
        var ad: Int64 = 0
        step("create user") { ids.append(try store.createUser(handle: "a", displayName: "A").id) }
        step("create user 2") { ids.append(try store.createUser(handle: "b", displayName: "B").id) }
        step("duplicate user", succeeds: false) { try store.createUser(handle: "a", displayName: "A") }
        step("update user") { try store.updateUser(id: ids[0], displayName: "Alpha") }
        step("create video") { video = try makeVideo(store, author: ids[0]).id }
        step("invalid video", succeeds: false) { try makeVideo(store, author: 42) }
        step("update video") { try store.updateVideo(id: video, viewCount: 9) }
        step("count video") { try store.addToVideoCounts(id: video, likes: 1) }
        step("follow") { try store.follow(follower: ids[1], followee: ids[0]) }
        step("follow again", succeeds: false) { try store.follow(follower: ids[1], followee: ids[0]) }
        step("unfollow") { try store.unfollow(follower: ids[1], followee: ids[0]) }
        step("unfollow again", succeeds: false) { try store.unfollow(follower: ids[1], followee: ids[0]) }
        step("create ad") {
            ad = try store.createAd(advertiser: "A", title: "T", imageURL: "https://x/i", targetURL: "https://x/t", weight: 3).id
        }
        step("update ad") { try store.updateAd(id: ad, active: false) }
        step("delete ad") { try store.deleteAd(id: ad) }
        step("delete video") { try store.deleteVideo(id: video) }
        step("delete missing video", succeeds: false) { try store.deleteVideo(id: video) }
        step("delete user") { try store.deleteUser(id: ids[1]) }

        // Snapshots are not content.
        try store.saveSnapshot(id: "abc", viewer: ids[0], structure: Data([1]))
        #expect(store.changeVersion == expected)
        // A version read inside a read transaction agrees with the cached one when nothing races.
        let inside = try store.read { reader in try reader.changeVersion() }
        #expect(inside == expected)
        #expect(try store.refreshChangeVersion() == expected)
    }

    @Test("The ad epoch changes with ad writes only, and active ads are ordered by id", arguments: Backend.all)
    func adEpochAndActiveAds(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let u = "https://ads.example/i.jpg"
        let a1 = try store.createAd(advertiser: "A", title: "One", imageURL: u, targetURL: u, weight: 1)
        let a2 = try store.createAd(advertiser: "B", title: "Two", imageURL: u, targetURL: u, weight: 2, active: false)
        let a3 = try store.createAd(advertiser: "C", title: "Three", imageURL: u, targetURL: u, weight: 3)
        var inventory = try store.read { try $0.activeAds() }
        #expect(inventory.ads.map(\.id) == [a1.id, a3.id])
        #expect(inventory.epoch == 3)

        let author = try store.createUser(handle: "a", displayName: "A").id
        try makeVideo(store, author: author)
        #expect(try store.read { try $0.activeAds() }.epoch == 3, "content writes do not touch the ad epoch")

        try store.updateAd(id: a2.id, active: true)
        inventory = try store.read { try $0.activeAds() }
        #expect(inventory.ads.map(\.id) == [a1.id, a2.id, a3.id])
        #expect(inventory.epoch == 4)
        try store.deleteAd(id: a1.id)
        #expect(try store.read { try $0.activeAds() }.epoch == 5)
        #expect(try store.read { try $0.activeAds() }.ads.map(\.id) == [a2.id, a3.id])
        #expect(try store.read { try $0.ad(id: a1.id) } == nil)
        #expect(try store.read { try $0.allAds() }.map(\.id) == [a2.id, a3.id])
    }

    @Test("Records encode to JSON with snake_case keys")
    func recordsEncodeSnakeCase() throws {
        let video = Video(
            id: 1, authorID: 2, title: "T", thumbnailURL: "https://x", durationSeconds: 3, likeCount: 4,
            viewCount: 5, createdAt: 6, updatedAt: 7)
        let json = String(decoding: try JSONEncoder().encode(video), as: UTF8.self)
        #expect(json.contains("\"author_id\":2"))
        #expect(json.contains("\"thumbnail_url\""))
        let decoded = try JSONDecoder().decode(Video.self, from: Data(json.utf8))
        #expect(decoded == video)
    }
}
