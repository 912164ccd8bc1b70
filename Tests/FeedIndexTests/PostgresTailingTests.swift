import FeedIndex
import FeedStore
import Foundation
import PostgresStore
import PostgresTestSupport
import SQLiteStore
import Synchronization
import Testing

/// Two replicas in one process: stores on the same PostgreSQL schema, an index on the first.
@Suite(
    "Tailing the PostgreSQL change log", needsPostgres)
struct PostgresTailingTests {
    struct Replicas {
        let schema = "test_tail_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let reader: PostgresFeedStore
        let writer: PostgresFeedStore
        let index: FeedIndex

        init() throws {
            reader = try PostgresFeedStore(url: postgresURL!, schema: schema)
            writer = try PostgresFeedStore(url: postgresURL!, schema: schema)
            try writer.seed(DemoSeed(users: 20, videos: 100, ads: 3, seed: 7))
            index = try FeedIndex(loadingFrom: reader)
        }

        /// Waits up to 5 s for `condition`.
        func eventually(_ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline {
                if condition() { return true }
                usleep(10_000)
            }
            return condition()
        }
    }

    @Test("A write nobody was listening for (its NOTIFY missed) is found by the next catch-up from the last sequence")
    func catchUpAfterMissedNotification() throws {
        let replicas = try Replicas()
        let video = try replicas.writer.createVideo(authorID: 1, title: "Posted elsewhere", thumbnailURL: "https://t/1.jpg", durationSeconds: 9)
        try replicas.writer.updateVideo(id: 5, title: "Renamed elsewhere")
        #expect(replicas.index.read { $0.video(video.id) } == nil)
        #expect(try replicas.index.catchUp(from: replicas.reader) == 2)
        #expect(replicas.index.read { $0.video(video.id)?.value.title } == "Posted elsewhere")
        #expect(replicas.index.read { $0.video(5)?.value.title } == "Renamed elsewhere")
        #expect(replicas.index.sequence == replicas.writer.changeVersion)
    }

    @Test("LISTEN wakes the catch-up; a write committed while the listener's connection was down is applied after it reconnects")
    func listenerReconnectsAndCatchesUp() throws {
        let replicas = try Replicas()
        let (index, reader) = (replicas.index, replicas.reader)
        // Committed before anyone listens: the listener's first catch-up finds it.
        let early = try replicas.writer.createUser(handle: "early", displayName: "Early")
        let listener = ChangeListener(store: reader, onChange: { _ = try? index.catchUp(from: reader, reaching: $0) }, report: { _ in })
        defer { listener.stop() }
        #expect(replicas.eventually { index.read { $0.user(early.id) } != nil })

        // Woken by NOTIFY (nothing else catches up in this test).
        let woken = try replicas.writer.createVideo(authorID: 2, title: "Notified", thumbnailURL: "https://t/2.jpg", durationSeconds: 9)
        #expect(replicas.eventually { index.read { $0.video(woken.id) } != nil })

        // The listener's connection dies; a write lands before it is back.
        let admin = try PostgresConnection(url: postgresURL!)
        try admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", ["deltafeed-listen " + reader.channel])
        let missed = try replicas.writer.createVideo(authorID: 3, title: "While down", thumbnailURL: "https://t/3.jpg", durationSeconds: 9)
        #expect(replicas.eventually { listener.connections >= 2 })
        #expect(replicas.eventually { index.read { $0.video(missed.id) } != nil })
        #expect(index.sequence == replicas.writer.changeVersion)
    }

    @Test("A catch-up asked to reach a sequence the index holds reads nothing: a replica's listener woken by its own write's NOTIFY")
    func catchUpToAHeldSequenceReadsNothing() throws {
        let replicas = try Replicas()
        let (index, store) = (replicas.index, replicas.reader)
        _ = try store.createVideo(authorID: 2, title: "Mine", thumbnailURL: "https://t/2.jpg", durationSeconds: 9)
        #expect(try index.catchUp(from: store, reaching: store.changeVersion) == 1)
        let before = store.roundTrips
        #expect(try index.catchUp(from: store, reaching: store.changeVersion) == 0)
        #expect(store.roundTrips == before)
        // Without a target it asks the store (the log's end and the change version, one statement).
        #expect(try index.catchUp(from: store) == 0)
        #expect(store.roundTrips - before == 1)
    }

    @Test("A catch-up reads a group's entries and the rows they name in one round trip; a deleted user's batch in one read of its own")
    func catchUpInOneRoundTrip() throws {
        let replicas = try Replicas()
        let (index, writer, reader) = (replicas.index, replicas.writer, replicas.reader)
        try index.catchUp(from: reader)  // prepares the statement on the connection
        var video: Video?
        try writer.writeGroup {
            _ = try? writer.like(video: 3, by: 4)
            _ = try? writer.follow(follower: 5, followee: 6)
            _ = try? writer.unfollow(follower: 5, followee: 6)
            _ = try? writer.follow(follower: 7, followee: 8)
            video = try? writer.createVideo(authorID: 11, title: "Grouped", thumbnailURL: "https://t/9.jpg", durationSeconds: 9)
            _ = try? writer.updateUser(id: 10, displayName: "Renamed")
        }
        let (before, written) = (reader.roundTrips, Int(writer.changeVersion - index.sequence))
        #expect(try index.catchUp(from: reader) == written)
        #expect(reader.roundTrips - before == 1)
        #expect(index.sequence == writer.changeVersion)
        let stored = try writer.reading { reader throws(FeedStoreError) in try reader.record(Video.self, id: 3) }
        #expect(index.read { $0.video(3)?.value.likeCount } == stored?.likeCount)
        #expect(index.read { $0.user(10)?.value.displayName } == "Renamed")
        #expect(index.read { $0.followees(of: 7).contains(8) && !$0.followees(of: 5).contains(6) })
        #expect(index.read { $0.video(video?.id ?? 0)?.value.title } == "Grouped")

        // A deleted user: what went with them is known from the index, read in one transaction.
        _ = try? writer.follow(follower: 12, followee: 11)
        try writer.deleteUser(id: 11)
        let deleted = Int(writer.changeVersion - index.sequence)
        #expect(try index.catchUp(from: reader) == deleted)
        #expect(index.read { $0.user(11) } == nil)
        #expect(index.read { $0.video(video?.id ?? 0) } == nil)
        #expect(index.read { $0.followees(of: 12).contains(11) } == false)
    }

    @Test("The listener passes on the sequence a notification announces")
    func listenerPassesTheAnnouncedSequence() throws {
        let replicas = try Replicas()
        let announced = Mutex<[Int64?]>([])
        let listener = ChangeListener(store: replicas.reader, onChange: { reaching in announced.withLock { $0.append(reaching) } }, report: { _ in })
        defer { listener.stop() }
        #expect(replicas.eventually { announced.withLock { $0 } == [nil] })  // after connecting: anything
        try replicas.writer.createUser(handle: "noted", displayName: "Noted")
        #expect(replicas.eventually { announced.withLock { $0.count } == 2 })
        #expect(announced.withLock { $0.last } == replicas.writer.changeVersion)
    }
}
