import Deterministic
import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

@Suite("Demo seeding")
struct SeedTests {
    @Test("Seeding twice with the same parameters gives identical rows, on either backend; another seed gives different rows", arguments: Backend.all)
    func seedingIsDeterministic(_ backend: Backend) throws {
        let demo = DemoSeed(users: 300, videos: 6000, ads: 40, seed: 42)
        let first = try makeStore(clock: ManualClock(start: 1))
        let second = try makeStore(backend, clock: ManualClock(start: 99_999_999))
        try first.seed(demo)
        try second.seed(demo)
        #expect(try first.contentDigest() == second.contentDigest())
        #expect(try first.read { try $0.users(ids: 1...300) } == second.read { try $0.users(ids: 1...300) })

        let other = try makeStore(backend)
        try other.seed(DemoSeed(users: 300, videos: 6000, ads: 40, seed: 43))
        #expect(try other.contentDigest() != first.contentDigest())
    }

    @Test("The default demo has the requested counts and plausible, valid rows", arguments: Backend.all)
    func defaultDemoCountsAndShape(_ backend: Backend) throws {
        let store = try makeStore(backend)
        var reports: [(Int, Int)] = []
        let counts = try store.seed(DemoSeed()) { done, total in reports.append((done, total)) }
        #expect(counts.users == 2000 && counts.videos == 50_000 && counts.ads == 40)
        #expect(try store.counts() == counts)
        #expect(try !store.isEmpty())
        #expect(store.changeVersion == 1)
        #expect(try store.read { try $0.activeAds() }.epoch == 1)

        // Progress: increasing, ending exactly at the total.
        let total = 2000 + counts.follows + 50_000 + 40
        #expect(reports.last.map { $0 == (total, total) } == true)
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.0 < $1.0 })
        #expect(reports.count > 50)

        // Follow graph: everyone follows 5…50 others, and the head is heavy.
        let users = try store.read { try $0.users(ids: 1...2000) }
        #expect(users.values.allSatisfy { (5...50).contains($0.followingCount) })
        #expect(counts.follows == Int(users.values.reduce(0) { $0 + $1.followingCount }))
        let byFollowers = users.values.map(\.followerCount).sorted(by: >)
        #expect(byFollowers[0] > 1000, "the most followed user has \(byFollowers[0]) followers")
        #expect(byFollowers[1000] < 20, "the median user has \(byFollowers[1000]) followers")
        for user in users.values {
            #expect(user.handle.count <= 30 && user.handle.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" })
            #expect(user.avatarURL == "https://cdn.deltafeed.example/avatars/\(user.id).jpg")
            #expect(user.createdAt < DemoSeed.defaultBaseTime)
        }
        #expect(Set(users.values.map(\.handle)).count == 2000)

        // Videos: ids in time order, inside the last 30 days, valid fields, heavy-tailed likes.
        let sample = try store.read { try $0.videos(ids: stride(from: 1, through: 50_000, by: 97)) }
        let thirtyDays: Int64 = 30 * 24 * 3600 * 1000
        for video in sample.values {
            #expect(video.createdAt < DemoSeed.defaultBaseTime && video.createdAt >= DemoSeed.defaultBaseTime - thirtyDays)
            #expect((1...600).contains(video.durationSeconds))
            #expect(!video.title.isEmpty && video.title.count <= 200)
            #expect(video.thumbnailURL == "https://cdn.deltafeed.example/thumbs/\(video.id).jpg")
            #expect(video.likeCount <= video.viewCount)
        }
        let ordered = sample.values.sorted { $0.id < $1.id }
        #expect(zip(ordered, ordered.dropFirst()).allSatisfy { $0.createdAt <= $1.createdAt })
        var top = sample.values.first!
        try store.read { reader in try reader.forEach(Video.self) { if $0.likeCount > top.likeCount { top = $0 } } }
        let likes = sample.values.map(\.likeCount).sorted()
        #expect(top.likeCount > 100 * max(1, likes[likes.count / 2]), "top \(top.likeCount), median \(likes[likes.count / 2])")

        let ads = try store.read { try $0.activeAds() }.ads
        #expect((20...40).contains(ads.count))
        #expect(ads.allSatisfy { (1...1000).contains($0.weight) && $0.imageURL.hasPrefix("https://cdn.deltafeed.example/ads/") })

        // Every viewer's feed and suggestions are non-empty (SQLite's feed queries).
        if let store = store as? SQLiteFeedStore {
            #expect(try store.read { try $0.followedVideos(viewer: 1, limit: 20) }.count == 20)
            #expect(try store.read { try $0.followSuggestions(for: 1) }.count == 10)
        }
    }

    @Test("Seeding a store that has content is a conflict and changes nothing", arguments: Backend.all)
    func seedingNonEmptyStoreIsConflict(_ backend: Backend) throws {
        let store = try makeStore(backend)
        try store.createUser(handle: "early", displayName: "Early")
        let digest = try store.contentDigest()
        #expect {
            try store.seed(DemoSeed(users: 10, videos: 10, ads: 1))
        } throws: { error in
            guard case .conflict(field: "database", _) = error as? FeedStoreError else { return false }
            return true
        }
        #expect(try store.contentDigest() == digest)
        #expect(store.changeVersion == 1)
    }

    @Test("Impossible demo sizes are rejected", arguments: Backend.all)
    func invalidDemoSizes(_ backend: Backend) throws {
        let store = try makeStore(backend)
        #expect(throws: FeedStoreError.invalid(field: "users", reason: "must be at least 1 to author videos")) {
            try store.seed(DemoSeed(users: 0, videos: 5, ads: 0))
        }
        #expect(throws: FeedStoreError.invalid(field: "videos", reason: "must be at least 0")) {
            try store.seed(DemoSeed(users: 1, videos: -1, ads: 0))
        }
        // Tiny worlds work: one user follows nobody, an empty demo is a no-op.
        #expect(try store.seed(DemoSeed(users: 1, videos: 3, ads: 0)).videos == 3)
    }

    @Test("SplitMix64 produces the reference sequence and unbiased bounded values")
    func splitMix64() {
        var random = SplitMix64(seed: 0)
        // Reference values of SplitMix64 seeded with 0.
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
        var bounded = SplitMix64(seed: 42)
        var histogram = [Int](repeating: 0, count: 6)
        for _ in 0..<60_000 {
            histogram[Int(bounded.next(below: 6))] += 1
        }
        #expect(histogram.allSatisfy { (9_500...10_500).contains($0) })
        #expect((0..<1000).allSatisfy { _ in (3...9).contains(bounded.next(in: 3...9)) })
    }
}

@Suite("Demo seeding keeps the schema whole")
struct SeedSchemaTests {
    @Test("After seeding, every index and trigger is back, counts match the graph and triggers still count", arguments: Backend.all)
    func schemaAndCountsAfterBulkLoad(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let before = try (store as? SQLiteFeedStore)?.schemaObjects()
        var reports: [(Int, Int)] = []
        let counts = try store.seed(DemoSeed(users: 120, videos: 1500, ads: 5, seed: 9)) { reports.append(($0, $1)) }
        #expect(try (store as? SQLiteFeedStore)?.schemaObjects() == before)
        #expect(
            reports.last! == (
                counts.users + counts.follows + counts.videos + counts.ads,
                counts.users + counts.follows + counts.videos + counts.ads
            ))

        let users = try store.read { try $0.users(ids: 1...120) }
        for user in users.values {
            #expect(user.followerCount == Int64(try store.read { try $0.followers(of: user.id) }.count), "user \(user.id)")
            #expect(user.followingCount == Int64(try store.read { try $0.followees(of: user.id) }.count), "user \(user.id)")
        }
        // The triggers work again after the bulk load.
        let (a, b) = (Int64(1), Int64(2))
        if try store.read({ try $0.isFollowing(follower: a, followee: b) }) {
            try store.unfollow(follower: a, followee: b)
            #expect(try store.read { try $0.user(id: b) }!.followerCount == users[b]!.followerCount - 1)
        } else {
            try store.follow(follower: a, followee: b)
            #expect(try store.read { try $0.user(id: b) }!.followerCount == users[b]!.followerCount + 1)
        }
        // New rows get ids after the loaded ones (PostgreSQL's identity sequences were moved on).
        #expect(try store.createUser(handle: "after_seed", displayName: "After").id == 121)
        #expect(try makeVideo(store, author: 1).id == 1501)
        #expect(try store.createAd(advertiser: "A", title: "T", imageURL: "https://a/i", targetURL: "https://a/t", weight: 1).id == 6)
        // The handle stays unique.
        #expect(throws: FeedStoreError.self) {
            try store.createUser(handle: users[1]!.handle, displayName: "Copy")
        }
    }

    @Test("An empty demo reports (0, 0) once", arguments: Backend.all)
    func emptyDemoProgress(_ backend: Backend) throws {
        let store = try makeStore(backend)
        var reports: [(Int, Int)] = []
        try store.seed(DemoSeed(users: 0, videos: 0, ads: 0)) { reports.append(($0, $1)) }
        #expect(reports.count == 1 && reports[0] == (0, 0))
    }
}
