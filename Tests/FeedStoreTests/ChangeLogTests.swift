import FeedStore
import Foundation
import GRDB
import SQLiteStore
import StoreOracle
import Testing

@Suite("Change log")
struct ChangeLogTests {
    @Test("Every write appends one entry in its transaction, numbered by the change version", arguments: Backend.all)
    func everyWriteIsLoggedWithTheVersionAsSequence(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let alice = try store.createUser(handle: "alice", displayName: "Alice")
        let bob = try store.createUser(handle: "bob", displayName: "Bob")
        let video = try makeVideo(store, author: alice.id)
        try store.updateVideo(id: video.id, likeCount: 5)
        try store.follow(follower: bob.id, followee: alice.id)
        try store.unfollow(follower: bob.id, followee: alice.id)
        let ad = try store.createAd(advertiser: "Acme", title: "Buy", imageURL: "https://a.example/i.png", targetURL: "https://a.example", weight: 10)
        try store.deleteVideo(id: video.id)
        try store.deleteAd(id: ad.id)
        try store.deleteUser(id: bob.id)
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(
            entries.map(\.kind) == [
                .userCreated, .userCreated, .videoCreated, .videoUpdated, .followed, .unfollowed, .adChanged,
                .videoDeleted, .adChanged, .userDeleted,
            ])
        #expect(entries.map(\.sequence) == Array(1...10))
        #expect(entries.last?.sequence == store.changeVersion)
        #expect(entries[4].key == bob.id && entries[4].otherKey == alice.id)
        #expect(entries[2].key == video.id)
        #expect(try store.read { reader in try reader.changes(after: 8) }.map(\.sequence) == [9, 10])
    }

    @Test("A failed write logs nothing", arguments: Backend.all)
    func failedWriteLogsNothing(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let alice = try store.createUser(handle: "alice", displayName: "Alice")
        #expect(throws: FeedStoreError.self) { try store.follow(follower: alice.id, followee: 999) }
        #expect(throws: FeedStoreError.self) { try store.createUser(handle: "alice", displayName: "Again") }
        #expect(try store.read { reader in try reader.changes(after: 0) }.count == 1)
    }

    @Test("Seeding logs one reset entry", arguments: Backend.all)
    func seedingLogsAReset(_ backend: Backend) throws {
        let store = try makeStore(backend)
        try store.seed(DemoSeed(users: 10, videos: 20, ads: 2, seed: 1))
        let entries = try store.read { reader in try reader.changes(after: 0) }
        #expect(entries.map(\.kind) == [.reset])
    }

    @Test("Pruning keeps the newest entries and reports where the log starts", arguments: Backend.all)
    func pruningKeepsTheNewest(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let alice = try store.createUser(handle: "alice", displayName: "Alice")
        for index in 0..<9 { try makeVideo(store, author: alice.id, title: "v\(index)") }
        #expect(try store.pruneChangeLog(keeping: 3) == 7)
        #expect(try store.read { reader in try reader.oldestChangeSequence() } == 8)
        #expect(try store.read { reader in try reader.changes(after: 0) }.map(\.sequence) == [8, 9, 10])
    }
}

@Suite("Change log under concurrent writers")
struct ChangeLogOrderTests {
    @Test("Sequence numbers commit in order under concurrent writers: a reader tailing the log never sees a gap", arguments: Backend.all)
    func sequencesCommitInOrder(_ backend: Backend) throws {
        let store = try makeStore(backend, clock: ManualClock(step: 1))
        let author = try store.createUser(handle: "author", displayName: "Author").id
        let writers = 4
        let perWriter = 30
        let last = Int64(1 + writers * perWriter)
        let failures = ErrorLog()
        let group = DispatchGroup()
        for writer in 0..<writers {
            DispatchQueue.global().async(group: group) {
                for index in 0..<perWriter {
                    do {
                        try makeVideo(store, author: author, title: "w\(writer) v\(index)")
                    } catch {
                        failures.append("writer \(writer): \(error)")
                    }
                }
            }
        }
        // The tailer reads "entries after the last one I saw", as a replica's index does.
        DispatchQueue.global().async(group: group) {
            var seen: Int64 = 1
            let deadline = Date().addingTimeInterval(60)
            while seen < last, Date() < deadline {
                do {
                    for entry in try store.read({ try $0.changes(after: seen) }) {
                        if entry.sequence != seen + 1 { failures.append("saw \(entry.sequence) right after \(seen)") }
                        seen = entry.sequence
                    }
                } catch {
                    failures.append("tailer: \(error)")
                    return
                }
            }
            if seen != last { failures.append("tailer stopped at \(seen) of \(last)") }
        }
        group.wait()
        #expect(failures.messages.isEmpty, "\(failures.messages.prefix(5))")
        let entries = try store.read { try $0.changes(after: 0) }
        #expect(entries.map(\.sequence) == Array(1...last))
        #expect(store.changeVersion == last)
        #expect(try store.counts().videos == writers * perWriter)
    }
}
