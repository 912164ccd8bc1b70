import Deterministic
import FeedStore
import StoreOracle
import Testing

/// Staged writes collected for one ``FeedStorage/performTogether(_:)``, each one's result kept
/// as text, so that results of any value type compare.
final class StagedBatch {
    private(set) var writes: [GroupedWrite] = []
    private var answers: [Int: Result<String, FeedStoreError>] = [:]

    /// Adds `staged`; its result lands at the index it returns.
    @discardableResult
    func add<Value>(_ staged: StagedWrite<Value>) -> Int {
        let index = writes.count
        writes.append(staged.grouped { [self] result in answers[index] = result.map { "\($0)" } })
        return index
    }

    /// The results in the order the writes were added; nil for a write not answered (yet).
    var results: [Result<String, FeedStoreError>?] { writes.indices.map { answers[$0] } }
}

extension Result where Success == String, Failure == FeedStoreError {
    /// The error of a failed result, nil for a success.
    var error: FeedStoreError? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}

@Suite("Staged writes carried out together")
struct StagedWriteTests {
    /// A video update that no content write would send: a view count below zero, which the
    /// table's CHECK refuses outright (a hard SQL error, not a write's refusal).
    func refusedByTheTable(video: Int64) -> StagedWrite<Video> {
        StagedWrite(step: .updateVideo(id: video, changes: VideoChanges(viewCount: -1), at: 0), change: { PendingChange(kind: .videoUpdated, key: $0.id) }) {
            answer throws(FeedStoreError) in
            guard case .videoUpdated(let video?) = answer else { throw .notFound(entity: .video, id: String(video)) }
            return video
        }
    }

    /// A store with users 1…`users` and a video by user 1, and its change version.
    func storeWithUsersAndAVideo(_ backend: Backend, users: Int = 3) throws -> (any FeedStorage, video: Int64, version: Int64) {
        let store = try makeStore(backend)
        try makeUsers(users, in: store)
        let video = try makeVideo(store, author: 1).id
        return (store, video, store.changeVersion)
    }

    @Test("A refused write in a group changes nothing and takes no version; the writes around it stay", arguments: Backend.all)
    func refusalsMidGroup(_ backend: Backend) throws {
        let (store, video, versionBefore) = try storeWithUsersAndAVideo(backend)
        let batch = StagedBatch()
        batch.add(store.stageLike(video: video, by: 2))
        batch.add(store.stageLike(video: video, by: 99))
        batch.add(store.stageLike(video: video, by: 2))
        batch.add(store.stageLike(video: 99, by: 2))
        batch.add(store.stageUnlike(video: video, by: 3))
        batch.add(try store.stageFollow(follower: 2, followee: 3))
        batch.add(try store.stageFollow(follower: 2, followee: 3))
        batch.add(try store.stageFollow(follower: 2, followee: 99))
        batch.add(store.stageUnfollow(follower: 3, followee: 1))
        batch.add(try store.stageVideo(authorID: 99, title: "Nobody's", thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 5))
        batch.add(try store.stageVideo(authorID: 3, title: "Third", thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 5))
        batch.add(try store.stageVideoUpdate(id: 99, likeCount: 5))
        batch.add(store.stageLike(video: video, by: 3))
        try store.writeGroup { store.performTogether(batch.writes) }

        let results = batch.results
        #expect(results.allSatisfy { $0 != nil })
        #expect(
            results.map { $0?.error } == [
                nil, .notFound(entity: .user, id: "99"), .conflict(field: "user_id", reason: "user 2 already likes video \(video)"),
                .notFound(entity: .video, id: "99"), .notFound(entity: .like, id: "3->\(video)"), nil,
                .conflict(field: "followee_id", reason: "user 2 already follows user 3"), .notFound(entity: .user, id: "99"),
                .notFound(entity: .follow, id: "3->1"), .invalid(field: "author_id", reason: "no user with id 99"), nil,
                .notFound(entity: .video, id: "99"), nil,
            ])
        let entries = try store.read { reader in try reader.changes(after: versionBefore) }
        #expect(entries.map(\.kind) == [.videoUpdated, .followed, .videoCreated, .videoUpdated])
        #expect(entries.map(\.sequence) == Array(versionBefore + 1...versionBefore + 4))
        #expect(store.changeVersion == versionBefore + 4)
        let liked = try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video) }
        #expect(liked?.likeCount == 2)
        #expect(try store.read { reader in try reader.counts() }.follows == 1)
        #expect(try store.read { reader in try reader.counts() }.videos == 2)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(User.self, id: 3) }?.followerCount == 1)
    }

    @Test("Writes that depend on each other in one group answer as they would one by one", arguments: Backend.all)
    func dependentWritesAnswerAsOneByOne(_ backend: Backend) throws {
        for seed in UInt64(1)...4 {
            // The same writes on two stores: together in one group, and each alone.
            let together = try makeStore(backend, clock: ManualClock(step: 0))
            let alone = try makeStore(backend, clock: ManualClock(step: 0))
            for store in [together, alone] {
                try makeUsers(4, in: store)
                try makeVideo(store, author: 1)
            }
            let stage = { (store: any FeedStorage, batch: StagedBatch) throws(FeedStoreError) in
                var random = SplitMix64(seed: seed)  // the same choices on both stores
                for _ in 0..<60 { try Self.addRandomWrite(to: batch, on: store, &random) }
            }
            let batch = StagedBatch()
            try stage(together, batch)
            try together.writeGroup { together.performTogether(batch.writes) }
            let oneByOne = StagedBatch()
            try stage(alone, oneByOne)
            for write in oneByOne.writes { write.performAlone(on: alone) }

            #expect(batch.results == oneByOne.results, "seed \(seed)")
            #expect(batch.results.contains { $0?.error == nil } && batch.results.contains { $0?.error != nil }, "seed \(seed)")
            let entries = { (store: any FeedStorage) in
                try store.read { reader in try reader.changes(after: 0) }.map { "\($0.sequence) \($0.kind) \($0.key) \($0.otherKey ?? -1)" }
            }
            #expect(try entries(together) == entries(alone), "seed \(seed)")
            #expect(try together.contentDigest() == alone.contentDigest(), "seed \(seed)")
        }
    }

    /// One random staged write on users 1…5 (5 does not exist) and videos 1…4 (the first made
    /// before, the next ones by the batch's new videos): likes and unlikes of one video by the
    /// same user, likes of a video made earlier in the batch, follows and unfollows back and
    /// forth, like counts set.
    static func addRandomWrite(to batch: StagedBatch, on store: any FeedStorage, _ random: inout SplitMix64) throws(FeedStoreError) {
        let user = Int64(random.next(in: 1...5))
        let other = Int64(random.next(in: 1...5))
        let video = Int64(random.next(in: 1...4))
        switch random.next(below: 7) {
        case 0, 1: batch.add(store.stageLike(video: video, by: user))
        case 2: batch.add(store.stageUnlike(video: video, by: user))
        case 3 where user != other: batch.add(try store.stageFollow(follower: user, followee: other))
        case 4: batch.add(store.stageUnfollow(follower: user, followee: other))
        case 5: batch.add(try store.stageVideo(authorID: user, title: "New", thumbnailURL: "https://cdn.example/n.jpg", durationSeconds: 9))
        default: batch.add(try store.stageVideoUpdate(id: video, likeCount: Int64(random.next(in: 0...3))))
        }
    }

    @Test("A follow of a user made in the group, after it, is stored; before it, refused", arguments: Backend.all)
    func followOfAUserMadeInTheGroup(_ backend: Backend) throws {
        let (store, video, _) = try storeWithUsersAndAVideo(backend, users: 2)
        let before = StagedBatch()
        let after = StagedBatch()
        before.add(try store.stageFollow(follower: 1, followee: 3))
        after.add(try store.stageFollow(follower: 1, followee: 3))
        after.add(store.stageLike(video: video, by: 3))
        after.add(try store.stageVideo(authorID: 3, title: "Hers", thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 5))
        after.add(store.stageLike(video: video + 1, by: 1))
        try store.writeGroup {
            store.performTogether(before.writes)
            _ = try? store.createUser(handle: "u3", displayName: "User 3")
            store.performTogether(after.writes)
        }
        #expect(before.results.map { $0?.error } == [.notFound(entity: .user, id: "3")])
        #expect(after.results.map { $0?.error } == [nil, nil, nil, nil])
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(entries.suffix(5).map(\.kind) == [.userCreated, .followed, .videoUpdated, .videoCreated, .videoUpdated])
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video + 1) }?.likeCount == 1)
    }

    @Test("A statement that fails outright fails its write alone: the others are answered and stored as one by one", arguments: Backend.all)
    func hardFailureFallsBackToOneByOne(_ backend: Backend) throws {
        let (store, video, versionBefore) = try storeWithUsersAndAVideo(backend)
        let batch = StagedBatch()
        batch.add(store.stageLike(video: video, by: 2))
        batch.add(store.stageLike(video: video, by: 2))  // refused
        batch.add(refusedByTheTable(video: video))
        batch.add(try store.stageFollow(follower: 3, followee: 1))
        batch.add(store.stageLike(video: video, by: 3))
        try store.writeGroup { store.performTogether(batch.writes) }

        let results = batch.results
        #expect(results[0]?.error == nil)
        #expect(results[1]?.error == .conflict(field: "user_id", reason: "user 2 already likes video \(video)"))
        #expect(results[2]?.error != nil)  // the backend's account of the CHECK's refusal
        #expect(results[3]?.error == nil)
        #expect(results[4]?.error == nil)
        let entries = try store.read { reader in try reader.changes(after: versionBefore) }
        #expect(entries.map(\.kind) == [.videoUpdated, .followed, .videoUpdated])
        #expect(entries.map(\.sequence) == Array(versionBefore + 1...versionBefore + 3))
        let stored = try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video) }
        #expect(stored?.likeCount == 2)
        #expect(stored?.viewCount == 0)
        #expect(try store.read { reader in try reader.counts() }.follows == 1)
    }

    @Test(
        "A statement that fails outright after a write run alone fails its write alone: that write and the others stay, numbered without a gap",
        arguments: Backend.all)
    func hardFailureAfterAWriteAlone(_ backend: Backend) throws {
        let (store, video, versionBefore) = try storeWithUsersAndAVideo(backend)
        let batch = StagedBatch()
        batch.add(store.stageLike(video: video, by: 2))
        batch.add(refusedByTheTable(video: video))
        batch.add(store.stageLike(video: video, by: 3))
        var created: User?
        try store.writeGroup {
            created = try? store.createUser(handle: "alone", displayName: "Alone")
            store.performTogether(batch.writes)
        }
        #expect(created != nil)
        #expect(batch.results.map { $0?.error == nil } == [true, false, true])
        let entries = try store.read { reader in try reader.changes(after: versionBefore) }
        #expect(entries.map(\.kind) == [.userCreated, .videoUpdated, .videoUpdated])
        #expect(entries.map(\.sequence) == Array(versionBefore + 1...versionBefore + 3))
        #expect(store.changeVersion == versionBefore + 3)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video) }?.likeCount == 2)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(User.self, id: created?.id ?? 0) } != nil)
    }

    @Test("Staged writes outside a group are each a write of their own", arguments: Backend.all)
    func outsideAGroupEachIsAlone(_ backend: Backend) throws {
        let (store, video, _) = try storeWithUsersAndAVideo(backend, users: 2)
        let batch = StagedBatch()
        batch.add(store.stageLike(video: video, by: 2))
        batch.add(store.stageLike(video: video, by: 2))
        store.performTogether(batch.writes)
        #expect(batch.results.map { $0?.error } == [nil, .conflict(field: "user_id", reason: "user 2 already likes video \(video)")])
        #expect(try store.read { reader in try reader.changes(after: 0) }.last?.kind == .videoUpdated)
    }
}
