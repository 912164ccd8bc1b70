import FeedStore
import Foundation
import PostgresStore
import PostgresTestSupport
import StoreOracle
import Testing

/// What a write costs in round trips to PostgreSQL: statements without an answer to wait for
/// (BEGIN, savepoints, the change-log append) travel with the next statement that has one.
@Suite("PostgreSQL round trips per write", needsPostgres)
struct PostgresRoundTripTests {
    /// A store with users 1…`users` and one video by user 1, whose pooled connection has run a
    /// group of likes, one refused, and a follow and unfollow already: their statements are
    /// prepared (preparing costs a round trip, once per connection).
    func warmStore(users: Int) throws -> (PostgresFeedStore, video: Int64) {
        let store = try PostgresFeedStore(url: postgresURL!, schema: freshSchemaName(), options: StorageOptions(maximumReaderCount: 1))
        try makeUsers(max(2, users), in: store)
        let video = try makeVideo(store, author: 1).id
        try store.writeGroup {
            _ = try? store.like(video: video, by: 1)
            _ = try? store.like(video: video, by: 1)
            _ = try? store.unlike(video: video, by: 1)
        }
        try store.follow(follower: 2, followee: 1)
        try store.unfollow(follower: 2, followee: 1)
        _ = try store.read { reader in try reader.changeVersion() }
        return (store, video)
    }

    @Test("A group of likes costs one round trip per like, plus one to commit: the group's lock goes with the first")
    func groupedLikes() throws {
        let (store, video) = try warmStore(users: 11)
        let before = store.roundTrips
        var refused = 0
        try store.writeGroup {
            for user in Int64(2)...11 { _ = try? store.like(video: video, by: user) }
            do { _ = try store.like(video: video, by: 2) } catch { refused += 1 }  // a 409: rolled back alone
        }
        // A like is one round trip: its savepoint, its user's check, the count's update and the
        // like's insert go together, and the answers say which check failed; the refused one
        // too, and the rollback to its savepoint waits for the commit.
        #expect(refused == 1)
        #expect(store.roundTrips - before == 10 + 1 + 1)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video) }?.likeCount == 10)
    }

    @Test("A grouped follow and a grouped new video are one round trip each, refused or not")
    func groupedFollowsAndVideos() throws {
        let (store, _) = try warmStore(users: 4)
        try store.writeGroup {  // prepares the statements of each outcome
            _ = try? store.follow(follower: 3, followee: 4)
            _ = try? store.follow(follower: 3, followee: 4)
            _ = try? makeVideo(store, author: 3)
            _ = try? makeVideo(store, author: 99)
        }
        let before = store.roundTrips
        var refused = 0
        try store.writeGroup {
            for follower in Int64(1)...2 { _ = try? store.follow(follower: follower, followee: 4) }
            do { _ = try store.follow(follower: 1, followee: 4) } catch { refused += 1 }  // exists
            do { _ = try store.follow(follower: 1, followee: 99) } catch { refused += 1 }  // no such user
            for author in Int64(1)...3 { _ = try? makeVideo(store, author: author) }
            do { _ = try makeVideo(store, author: 99) } catch { refused += 1 }
        }
        #expect(refused == 3)
        #expect(store.roundTrips - before == 4 + 4 + 1)
        #expect(try store.read { reader in try reader.counts() }.follows == 3)
    }

    @Test("A pass of handed-out snapshots, new bases included, is one round trip: answers wait for it")
    func snapshotPassIsOneRoundTrip() throws {
        let (store, _) = try warmStore(users: 4)
        func pass(_ round: Int) throws {
            let snapshots = (Int64(1)...3).map {
                StoredSnapshot(id: "r\(round)s\($0)", viewerID: $0, createdAt: Int64(round * 10) + $0, structure: Data([4, UInt8($0)]))
            }
            let bases = (Int64(1)...2).map { StoredSnapshot(id: "r\(round)b\($0)", viewerID: $0, createdAt: Int64(round * 10), structure: Data([3, 1])) }
            try store.persistSnapshots(upserts: snapshots, deletions: [], prune: [], keepPerViewer: 4, bases: bases)
        }
        try pass(0)  // prepares the statements
        let before = store.roundTrips
        try pass(1)
        #expect(store.roundTrips - before == 1)
        #expect(try store.read { reader in try reader.snapshot(id: "r1s3", viewer: 3) }?.structure == Data([4, 3]))
        #expect(try store.read { reader in try reader.snapshotBase(id: "r1b2", viewer: 2) } != nil)
    }

    @Test("A group of staged writes is one round trip however many they are: BEGIN, the lock, every step with its log entry, the version and COMMIT")
    func stagedWritesShareRoundTrips() throws {
        let (store, video) = try warmStore(users: 80)
        /// Runs `count` staged likes, follows and new videos, by users from `firstUser` on, in
        /// one group, and returns the round trips it took.
        func cost(_ count: Int, firstUser: Int64) throws -> Int {
            let batch = StagedBatch()
            for index in 0..<count {
                let user = firstUser + Int64(index)
                switch index % 3 {
                case 0: batch.add(store.stageLike(video: video, by: user))
                case 1: batch.add(try store.stageFollow(follower: 1, followee: user))
                default: batch.add(try store.stageVideo(authorID: user, title: "New", thumbnailURL: "https://cdn.example/n.jpg", durationSeconds: 9))
                }
            }
            let before = store.roundTrips
            try store.writeGroup { store.performTogether(batch.writes) }
            #expect(batch.results.allSatisfy { $0 != nil && $0?.error == nil })
            return store.roundTrips - before
        }
        let (few, many) = (try cost(6, firstUser: 2), try cost(60, firstUser: 8))
        #expect(few == 1)
        #expect(many == 1)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video) }?.likeCount == 22)
        // Numbered on the server, in the order of the steps, with no gap; the version follows.
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(entries.map(\.sequence) == Array(1...Int64(entries.count)))
        #expect(entries.suffix(66).map(\.kind) == (0..<66).map { [ChangeKind.videoUpdated, .followed, .videoCreated][$0 % 3] })
        #expect(try store.read { reader in try reader.changeVersion() } == Int64(entries.count))
    }

    @Test("Staged writes after a write run alone in the same group go out with the commit: one round trip more than that write")
    func stagedAfterAWriteAlone() throws {
        let (store, video) = try warmStore(users: 6)
        try store.writeGroup { _ = try? store.createUser(handle: "warm", displayName: "Warm") }  // prepares
        let batch = StagedBatch()
        for user in Int64(2)...6 { batch.add(store.stageLike(video: video, by: user)) }
        let before = store.roundTrips
        try store.writeGroup {
            _ = try? store.createUser(handle: "new", displayName: "New")  // its check, then its insert
            store.performTogether(batch.writes)
        }
        #expect(store.roundTrips - before == 2 + 1)
        #expect(batch.results.allSatisfy { $0 != nil && $0?.error == nil })
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(entries.map(\.sequence) == Array(1...Int64(entries.count)))
        #expect(entries.suffix(6).map(\.kind) == [.userCreated] + Array(repeating: .videoUpdated, count: 5))
    }

    @Test("A group notifies once, with the version it reached; a group whose writes were all refused does not")
    func oneNotificationPerGroup() throws {
        let (store, video) = try warmStore(users: 6)
        let listener = try PostgresConnection(url: postgresURL!)
        try listener.execute("LISTEN \(store.channel)")
        let liked = StagedBatch()
        let again = StagedBatch()
        for user in Int64(2)...6 {
            liked.add(store.stageLike(video: video, by: user))
            again.add(store.stageLike(video: video, by: user))  // refused: each like exists by then
        }
        try store.writeGroup { store.performTogether(liked.writes) }
        let reached = store.changeVersion
        try store.writeGroup { store.performTogether(again.writes) }
        #expect(liked.results.allSatisfy { $0 != nil && $0?.error == nil })
        #expect(again.results.allSatisfy { $0?.error != nil })
        var payloads: [String] = []
        for _ in 0..<4 { payloads += try listener.notifications(waitingUpTo: .milliseconds(250)) }
        #expect(payloads == [String(reached)])
        #expect(store.changeVersion == reached)
    }

    @Test("The rows a catch-up reads cost one round trip, however many follow edges it asks about")
    func changedRowsInOneRoundTrip() throws {
        let (store, video) = try warmStore(users: 12)
        for followee in Int64(2)...6 { try store.follow(follower: 1, followee: followee) }
        let edges = Set((Int64(2)...11).map { FollowEdge(follower: 1, followee: $0) })
        _ = try store.reading { reader throws(FeedStoreError) in try reader.changedRows(users: [1], videos: [video], edges: edges) }  // prepares
        let before = store.roundTrips
        let rows = try store.reading { reader throws(FeedStoreError) in
            try reader.changedRows(users: [1, 2, 99], videos: [video, 99], edges: edges)
        }
        #expect(store.roundTrips - before == 2)  // the read's BEGIN goes with them; then its COMMIT
        #expect(Set(rows.users.keys) == [1, 2])
        #expect(Set(rows.videos.keys) == [video])
        #expect(rows.follows == Set((Int64(2)...6).map { FollowEdge(follower: 1, followee: $0) }))
    }

    @Test("A like alone costs the version bump, the like, and the COMMIT with the log entry")
    func likeAlone() throws {
        let (store, video) = try warmStore(users: 2)
        let before = store.roundTrips
        try store.like(video: video, by: 2)
        #expect(store.roundTrips - before == 3)
        #expect(try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video) }?.likeCount == 1)
    }

    @Test("An update in a group answers before the write ends: its failure is that write's alone")
    func groupedUpdateFailsAlone() throws {
        let (store, video) = try warmStore(users: 2)
        var failure: (any Error)?
        try store.writeGroup {
            do {
                // A view count below zero: the content writes refuse it before any SQL, so only
                // an update made by hand reaches the table's CHECK.
                _ = try store.write(touchesAds: false, change: { _ in PendingChange(kind: .videoUpdated, key: video) }) { transaction in
                    guard var record = try transaction.fetch(Video.self, id: video) else { return }
                    record.viewCount = -1
                    try transaction.update(record)
                }
            } catch {
                failure = error
            }
            _ = try? store.like(video: video, by: 2)
        }
        #expect(failure != nil)
        let stored = try store.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: video) }
        #expect(stored?.viewCount == 0)
        #expect(stored?.likeCount == 1)
    }

    @Test("A read costs its statements and the COMMIT: BEGIN goes with the first")
    func readTransaction() throws {
        let (store, _) = try warmStore(users: 1)
        let before = store.roundTrips
        _ = try store.read { reader in try reader.changeVersion() }
        #expect(store.roundTrips - before == 2)
    }

    @Test("A write alone costs its statements, the version bump and the COMMIT: BEGIN, the log entry and NOTIFY go with others")
    func writeAlone() throws {
        let (store, _) = try warmStore(users: 2)
        try store.follow(follower: 1, followee: 2)
        let before = store.roundTrips
        try store.unfollow(follower: 1, followee: 2)
        // The bump (with BEGIN), the delete, the COMMIT (with the entry and NOTIFY).
        #expect(store.roundTrips - before == 3)
        #expect(try store.read { reader in try reader.changes(after: 0) }.last?.kind == .unfollowed)
    }
}
