import Deterministic
import FeedIndex
import FeedService
import FeedStore
import FeedWire
import SQLiteStore
import StoreOracle
import Testing

/// After any random sequence of writes, the index applied entry by entry equals one loaded
/// afresh from the store, and every feed the service serves (cached and revalidated, or
/// composed from the index) equals the feed composed from SQL the way it was before the index.
@Suite("Index and cached feeds stay equal to the store under random writes")
struct IndexPropertyTests {
    @Test(arguments: [11, 12, 13] as [UInt64])
    func servedFeedsEqualSQLCompositionAfterEveryWrite(seed: UInt64) throws {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 260, ads: 4, seed: seed, followsPerUser: 2...8))
        let service = try FeedService(store: store)
        var random = SplitMix64(seed: seed)
        var writer = RandomWriter(store: store)
        let viewers = Array(Int64(1)...Int64(12))
        let parameterSets = [FeedParameters(limit: 60), FeedParameters(limit: 5, offset: 3, width: 390), FeedParameters(limit: 200, stackAds: true)]
        var compared = 0
        for step in 0..<250 {
            // Most writes through the service (applied at once), some as another process
            // would (applied by the next catch-up).
            if random.next(below: 5) == 0 {
                try writer.write(&random)
                try service.catchUp()
            } else {
                try service.write { _ throws(FeedStoreError) in try writer.write(&random) }
            }
            // Ask a few viewers each step, so cached pages are revalidated across many writes.
            for _ in 0..<3 {
                let viewer = viewers[Int(random.next(below: UInt64(viewers.count)))]
                let parameters = parameterSets[Int(random.next(below: UInt64(parameterSets.count)))]
                try expectServedEqualsOracle(service: service, store: store, viewer: viewer, parameters: parameters, step: step)
                compared += 1
            }
            if step % 25 == 24 {
                let fresh = try FeedIndex(loadingFrom: store)
                #expect(service.index.differences(from: fresh) == [], "after \(step + 1) writes")
            }
        }
        #expect(compared == 750)
        #expect(writer.counts.values.reduce(0, +) == 250)
        #expect(writer.counts.count >= 8, "the mix covered most kinds of write: \(writer.counts)")
    }

    private func expectServedEqualsOracle(
        service: FeedService, store: SQLiteFeedStore, viewer: Int64, parameters: FeedParameters, step: Int
    ) throws {
        let exists = try store.reading { reader throws(FeedStoreError) in try reader.user(id: viewer) } != nil
        guard exists else {
            #expect(throws: FeedError.viewerNotFound(viewer)) { try service.feed(viewer: viewer, parameters: parameters) }
            return
        }
        let served = try service.feed(viewer: viewer, parameters: parameters)
        let all = try SQLOracle(stackAds: parameters.stackAds).compose(viewer: viewer, store: store)
        let start = min(parameters.offset, all.count)
        let expected = Array(all[start..<min(start + parameters.limit, all.count)])
        let same = served.sections == expected
        #expect(same, "viewer \(viewer) \(parameters) after write \(step + 1):\nserved   \(outline(served.sections))\nexpected \(outline(expected))")
        let structure = SnapshotStructure(viewer: viewer, parameters: parameters, page: expected)
        #expect(served.snapshotID == structure.id)
    }
}

/// Section and item ids with item versions, compact enough to read in a failure message.
func outline(_ sections: [FeedSection]) -> String {
    sections.map { section in
        "\(section.id)[" + section.items.map { "\($0.id)@\(String($0.version, radix: 16).prefix(6))" }.joined(separator: " ") + "]"
    }.joined(separator: " ")
}

/// Random writes of every kind the API offers, valid most of the time (a refused write is
/// retried as another kind so every step changes something).
struct RandomWriter {
    let store: SQLiteFeedStore
    var counts: [String: Int] = [:]
    private var serial = 0

    init(store: SQLiteFeedStore) {
        self.store = store
    }

    mutating func write(_ random: inout SplitMix64) throws(FeedStoreError) {
        for _ in 0..<50 {
            if try attempt(&random) { return }
        }
        throw .invalid(field: "test", reason: "no write succeeded in 50 attempts")
    }

    private mutating func attempt(_ random: inout SplitMix64) throws(FeedStoreError) -> Bool {
        serial += 1
        let users = try store.counts().users
        func someUser() throws(FeedStoreError) -> Int64 { Int64(random.next(below: UInt64(max(1, users + 8)))) + 1 }
        func someVideo() throws(FeedStoreError) -> Int64? {
            try store.reading { reader throws(FeedStoreError) in try reader.popularVideos(limit: 300) }.randomElement(using: &random)?.id
        }
        let kind = random.next(below: 100)
        do {
            switch kind {
            case 0..<15:
                guard let video = try someVideo() else { return false }
                try store.updateVideo(id: video, likeCount: Int64(random.next(below: 5000)))
                counts["likes", default: 0] += 1
            case 15..<30:
                // A few more likes, as they arrive: mostly an in-place change of the item.
                guard let video = try someVideo() else { return false }
                try store.addToVideoCounts(id: video, likes: Int64(random.next(below: 4)) + 1)
                counts["like increments", default: 0] += 1
            case 30..<38:
                guard let video = try someVideo() else { return false }
                try store.updateVideo(id: video, title: "Edited \(serial)")
                counts["title", default: 0] += 1
            case 38..<55:
                try store.createVideo(
                    authorID: try someUser(), title: "New \(serial)", thumbnailURL: "https://img.example/\(serial).jpg",
                    durationSeconds: 30, likeCount: Int64(random.next(below: 3000)))
                counts["new video", default: 0] += 1
            case 55..<62:
                guard let video = try someVideo() else { return false }
                try store.deleteVideo(id: video)
                counts["delete video", default: 0] += 1
            case 62..<75:
                try store.follow(follower: try someUser(), followee: try someUser())
                counts["follow", default: 0] += 1
            case 75..<85:
                let follower = try someUser()
                guard let followee = try store.reading({ reader throws(FeedStoreError) in try reader.followees(of: follower) }).randomElement(using: &random)
                else { return false }
                try store.unfollow(follower: follower, followee: followee)
                counts["unfollow", default: 0] += 1
            case 85..<89:
                try store.createUser(handle: "user_\(serial)", displayName: "User \(serial)")
                counts["new user", default: 0] += 1
            case 89..<93:
                try store.updateUser(id: try someUser(), displayName: "Renamed \(serial)")
                counts["rename", default: 0] += 1
            case 93..<95:
                try store.deleteUser(id: try someUser())
                counts["delete user", default: 0] += 1
            case 95..<97:
                try store.createAd(
                    advertiser: "Adv \(serial)", title: "Ad \(serial)", imageURL: "https://ads.example/\(serial).png",
                    targetURL: "https://ads.example", weight: Int64(random.next(below: 100)) + 1)
                counts["new ad", default: 0] += 1
            default:
                guard let ad = try store.reading({ reader throws(FeedStoreError) in try reader.allAds() }).randomElement(using: &random) else { return false }
                if random.next(below: 2) == 0 {
                    try store.updateAd(id: ad.id, active: !ad.active)
                } else {
                    try store.deleteAd(id: ad.id)
                }
                counts["ad change", default: 0] += 1
            }
            return true
        } catch .notFound, .conflict, .invalid {
            return false
        }
    }
}
