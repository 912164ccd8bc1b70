import Deterministic
import FeedIndex
import FeedService
import FeedStore
import FeedWire
import SQLiteStore
import StoreOracle
import Testing
import WritePlanning

/// After any random sequence of writes, the index applied entry by entry equals one loaded
/// afresh from the store, and every feed the service serves (cached and revalidated, or
/// composed from the index) equals the feed composed from SQL the way it was before the index.
@Suite("Index and cached feeds stay equal to the store under random writes")
struct IndexPropertyTests {
    @Test("Served feeds equal SQL composition after every write", arguments: [11, 12, 13] as [UInt64])
    func servedFeedsEqualSQLCompositionAfterEveryWrite(seed: UInt64) throws {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 260, ads: 4, seed: seed, followsPerUser: 2...8))
        try expectServedFeedsFollowRandomWrites(service: try FeedService(store: store), store: store, seed: seed)
    }

    /// The same with every fallback of the notes taken often: an index that remembers few
    /// changes (pages read past it are composed again), pages noted more than 3 times reading
    /// the log instead, and a page cache small enough to evict (its pages' notes go with them).
    @Test("Served feeds equal SQL composition when the index forgets changes, notes overflow and pages are evicted", arguments: [14, 15] as [UInt64])
    func servedFeedsEqualSQLCompositionUnderTightLimits(seed: UInt64) throws {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 260, ads: 4, seed: seed, followsPerUser: 2...8))
        var options = FeedService.Options(pageCacheBytes: 96 << 10)
        options.notesPerPage = 3
        let service = try FeedService(store: store, index: try FeedIndex(loadingFrom: store, changeMemory: 40), options: options)
        try expectServedFeedsFollowRandomWrites(service: service, store: store, seed: seed)
        let registration = service.pageRegistration
        #expect(registration.cached < 36, "some pages were evicted")
        #expect(registration.registered == registration.cached, "an evicted page's notes went with it")
    }

    private func expectServedFeedsFollowRandomWrites(service: FeedService, store: SQLiteFeedStore, seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        var writer = RandomWriter(store: store, seed: seed)
        let viewers = Array(Int64(1)...Int64(12))
        let parameterSets = [FeedParameters(limit: 60), FeedParameters(limit: 5, offset: 3, width: 390), FeedParameters(limit: 200, stackAds: true)]
        var compared = 0
        for step in 0..<250 {
            // Most writes through the service (applied at once), some as another process
            // would (applied by the next catch-up).
            if random.next(below: 5) == 0 {
                try writer.write()
                try service.catchUp()
            } else {
                try service.write { _ throws(FeedStoreError) in try writer.write() }
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
        let structure = SnapshotStructure(viewer: viewer, parameters: parameters, page: expected, hasNextPage: served.nextCursor != nil)
        #expect(served.snapshotID == structure.id)
    }
}

/// Section and item ids with item versions, compact enough to read in a failure message.
func outline(_ sections: [FeedSection]) -> String {
    sections.map { section in
        "\(section.id)[" + section.items.map { "\($0.id)@\(String($0.version, radix: 16).prefix(6))" }.joined(separator: " ") + "]"
    }.joined(separator: " ")
}

/// Random writes of every kind the store offers (``WriteMix/store``), valid most of the time (a
/// refused write, e.g. on a user deleted meanwhile, is drawn again so every step changes something).
struct RandomWriter {
    let store: SQLiteFeedStore
    var counts: [String: Int] = [:]
    private var planner: WritePlanner

    init(store: SQLiteFeedStore, seed: UInt64) {
        self.store = store
        planner = WritePlanner(seed: seed, mix: .store)
    }

    mutating func write() throws(FeedStoreError) {
        for _ in 0..<50 {
            if try attempt() { return }
        }
        throw .invalid(field: "test", reason: "no write succeeded in 50 attempts")
    }

    private mutating func attempt() throws(FeedStoreError) -> Bool {
        let users = try store.counts().users
        var options = WriteOptions()
        // Ids past the last user, and of users deleted meanwhile, are refused: drawn again.
        options.users = Array(1...Int64(users + 8))
        options.authors = options.users
        options.videos = try store.reading { reader throws(FeedStoreError) in try reader.popularVideos(limit: 300) }.map(\.id)
        options.ads = try store.reading { reader throws(FeedStoreError) in try reader.allAds() }.map(\.id)
        guard let planned = planner.next(options) else { return false }
        do {
            try perform(planned)
            counts[String(describing: planned).prefix { $0 != "(" }.description, default: 0] += 1
            return true
        } catch .notFound, .conflict, .invalid {
            return false
        }
    }

    private func perform(_ planned: PlannedWrite) throws(FeedStoreError) {
        switch planned {
        case .setLikes(let video, let likes, let views):
            try store.updateVideo(id: video, likeCount: likes, viewCount: views)
        case .addLikes(let video, let likes):
            try store.addToVideoCounts(id: video, likes: likes)
        case .retitle(let video, let title):
            try store.updateVideo(id: video, title: title)
        case .changeDetails(let video, let duration, let thumbnail):
            try store.updateVideo(id: video, thumbnailURL: thumbnail, durationSeconds: duration)
        case .createVideo(let video):
            try store.createVideo(
                authorID: video.authorID, title: video.title, thumbnailURL: video.thumbnailURL, durationSeconds: video.durationSeconds,
                likeCount: video.likeCount, viewCount: video.viewCount ?? 0)
        case .deleteVideo(let video):
            try store.deleteVideo(id: video)
        case .follow(let follower, let followee):
            try store.follow(follower: follower, followee: followee)
        case .unfollow(let follower, let followee):
            try store.unfollow(follower: follower, followee: followee)
        case .toggleFollow(let follower, let followee):
            if try store.reading({ reader throws(FeedStoreError) in try reader.isFollowing(follower: follower, followee: followee) }) {
                try store.unfollow(follower: follower, followee: followee)
            } else {
                try store.follow(follower: follower, followee: followee)
            }
        case .createUser(let handle, let displayName):
            try store.createUser(handle: handle, displayName: displayName)
        case .renameUser(let user, let displayName):
            try store.updateUser(id: user, displayName: displayName)
        case .deleteUser(let user):
            try store.deleteUser(id: user)
        case .createAd(let ad):
            try store.createAd(advertiser: ad.advertiser, title: ad.title, imageURL: ad.imageURL, targetURL: ad.targetURL, weight: ad.weight)
        case .editAd(let ad, let edit):
            switch edit {
            case .title(let title): try store.updateAd(id: ad, title: title)
            case .weight(let weight): try store.updateAd(id: ad, weight: weight)
            case .active(let active): try store.updateAd(id: ad, active: active)
            case .reactivate(let advertiser): try store.updateAd(id: ad, advertiser: advertiser, active: true)
            }
        case .deleteAd(let ad):
            try store.deleteAd(id: ad)
        }
    }
}
