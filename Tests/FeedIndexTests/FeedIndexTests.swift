import Deterministic
import FeedIndex
import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

@Suite("SortedKeys, DenseTable, CountingTable, ChangeRing")
struct IndexStructureTests {
    @Test("Sorted keys stay in order through random inserts and removals") func sortedKeysStayInOrderThroughRandomInsertsAndRemovals() {
        var keys = SortedKeys<Int>()
        var reference = Set<Int>()
        var random = SplitMix64(seed: 9)
        for _ in 0..<20_000 {
            let value = Int(random.next(below: 5_000))
            if random.next(below: 3) == 0 {
                #expect(keys.remove(value) == (reference.remove(value) != nil))
            } else {
                #expect(keys.insert(value) == reference.insert(value).inserted)
            }
        }
        #expect(Array(keys) == reference.sorted())
        #expect(keys.count == reference.count)
        #expect(keys.contains(reference.first ?? -1) == !reference.isEmpty)
    }

    @Test("Sorted keys built from a sorted array match it") func sortedKeysBuiltFromASortedArrayMatchIt() {
        let values = Array(stride(from: 0, to: 3_000, by: 3))
        var keys = SortedKeys(sorted: values)
        #expect(Array(keys) == values)
        keys.insert(1)
        #expect(Array(keys.prefix(3)) == [0, 1, 3])
    }

    @Test("Dense table handles dense sparse and moved ids") func denseTableHandlesDenseSparseAndMovedIds() {
        var table = DenseTable<String>()
        table[1] = "a"
        table[3] = "c"
        table[1 << 40] = "far"  // beyond the dense range: kept in the overflow
        #expect(table.count == 3)
        #expect(table[1] == "a" && table[2] == nil && table[3] == "c" && table[1 << 40] == "far")
        table[3] = nil
        #expect(table.count == 2 && table[3] == nil)
        #expect(table.removeValue(forKey: 1 << 40) == "far")
        #expect(table.count == 1)
        #expect(table.entries.map(\.id) == [1])
        table[-5] = "negative"
        #expect(table[-5] == "negative")
    }

    @Test("Dense table grows geometrically past its reserved capacity") func denseTableGrowsGeometricallyPastItsReservedCapacity() {
        // The index reserves the loaded count; every record created later appends one id. Each
        // append past the capacity must not reallocate (and copy) the whole table.
        var table = DenseTable<Int>()
        table.reserveCapacity(1_000)
        for id in 1...1_000 { table[Int64(id)] = id }
        var capacities = Set<Int>()
        for id in 1_001...5_000 {
            table[Int64(id)] = id
            capacities.insert(table.capacity)
        }
        #expect(capacities.count <= 4, "the table reallocated \(capacities.count) times for 4,000 appends")
        #expect(table.count == 5_000 && table[4_321] == 4_321)
    }

    @Test("Counting table counts and skips excluded ids") func countingTableCountsAndSkipsExcludedIds() {
        var table = CountingTable(expected: 10)
        table.exclude(7)
        for id: Int64 in [1, 2, 2, 7, 7, 3, 2] { table.add(id) }
        var counts: [Int64: Int32] = [:]
        table.forEachCounted { counts[$0] = $1 }
        #expect(counts == [1: 1, 2: 3, 3: 1])
    }

    @Test("Change ring reports what it still covers") func changeRingReportsWhatItStillCovers() {
        var ring = ChangeRing(capacity: 4, startingAt: 10)
        #expect(ring.changes(after: 10) == [])
        for sequence: Int64 in 11...13 { ring.append(.ads, sequence: sequence) }
        #expect(ring.changes(after: 11)?.count == 2)
        for sequence: Int64 in 14...16 { ring.append(.reset, sequence: sequence) }
        #expect(ring.changes(after: 11) == nil, "13 was evicted")
        #expect(ring.changes(after: 12) == [.ads, .reset, .reset, .reset])
        #expect(ring.changes(after: 16) == [])
    }

    @Test("Change ring numbers its changes for good, and fetches them by number while it holds them")
    func changeRingOrdinals() {
        var ring = ChangeRing(capacity: 4, startingAt: 10)
        #expect(ring.oldestOrdinal == 0 && ring.nextOrdinal == 0)
        ring.append(.ads, sequence: 11)
        ring.append(.video(id: 1, author: 2, before: nil, after: nil), sequence: 12)
        ring.append(.video(id: 3, author: 2, before: nil, after: nil), sequence: 12)
        #expect(ring.change(ordinal: 1)?.sequence == 12)
        #expect(ring.change(ordinal: 2)?.change == .video(id: 3, author: 2, before: nil, after: nil))
        #expect(ring.change(ordinal: 3) == nil, "not appended yet")
        #expect(ring.changes(after: 10, through: 11) == [.ads])
        for sequence: Int64 in 13...15 { ring.append(.reset, sequence: sequence) }
        #expect(ring.oldestOrdinal == 2 && ring.nextOrdinal == 6)
        #expect(ring.change(ordinal: 1) == nil, "evicted")
        #expect(ring.change(ordinal: 5)?.sequence == 15)
        ring.reset(to: 20)
        #expect(ring.change(ordinal: 5) == nil, "forgotten by the reset")
        ring.append(.ads, sequence: 21)
        #expect(ring.oldestOrdinal == 6 && ring.change(ordinal: 6)?.sequence == 21, "numbers go on after a reset")
    }
}

@Suite("FeedIndex follows the store")
struct FeedIndexCatchUpTests {
    func seededStore() throws -> SQLiteFeedStore {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 30, videos: 200, ads: 3, seed: 4))
        return store
    }

    @Test("Loading reads everything at the store version") func loadingReadsEverythingAtTheStoreVersion() throws {
        let store = try seededStore()
        let index = try FeedIndex(loadingFrom: store)
        let counts = try store.counts()
        #expect(index.counts.users == counts.users)
        #expect(index.counts.videos == counts.videos)
        #expect(index.counts.follows == counts.follows)
        #expect(index.sequence == store.changeVersion)
    }

    @Test("Deleting a user removes their videos and edges and moves others counts") func deletingAUserRemovesTheirVideosAndEdgesAndMovesOthersCounts() throws {
        let store = try seededStore()
        let index = try FeedIndex(loadingFrom: store)
        let victim: Int64 = 1
        let followers = try store.read { try $0.followers(of: victim) }
        #expect(!followers.isEmpty)
        try store.deleteUser(id: victim)
        #expect(try index.catchUp(from: store) == 1)
        #expect(index.differences(from: try FeedIndex(loadingFrom: store)) == [])
        index.read { view in
            #expect(view.user(victim) == nil)
            #expect(view.followers(of: victim).isEmpty)
            #expect(view.followedVideos(viewer: followers[0], limit: 240).allSatisfy { $0.author != victim })
        }
        let changes = try #require(index.changes(after: index.sequence - 1))
        #expect(
            changes.contains(
                .user(
                    id: victim,
                    before: changes.compactMap { change -> FollowerRankKey? in
                        if case .user(victim, let before, _, _) = change { return before } else { return nil }
                    }.first, after: nil, profileChanged: true)))
        #expect(changes.contains { if case .follow(_, victim, false) = $0 { true } else { false } })
    }

    @Test("Writes of another process are applied by the next catch up") func writesOfAnotherProcessAreAppliedByTheNextCatchUp() throws {
        let store = try seededStore()
        let index = try FeedIndex(loadingFrom: store)
        let other = try SQLiteFeedStore(path: store.path)  // a second process on the same file
        let video = try other.createVideo(authorID: 2, title: "From elsewhere", thumbnailURL: "https://x.example/a.jpg", durationSeconds: 9)
        if try !other.read({ try $0.isFollowing(follower: 3, followee: 2) }) { try other.follow(follower: 3, followee: 2) }
        #expect(index.read { $0.video(video.id) } == nil)
        try index.catchUp(from: store)
        #expect(index.read { $0.video(video.id)?.value } == video)
        #expect(index.differences(from: try FeedIndex(loadingFrom: store)) == [])
    }

    @Test("A log with a gap or a reset reloads everything") func aLogWithAGapOrAResetReloadsEverything() throws {
        let store = try seededStore()
        let index = try FeedIndex(loadingFrom: store)
        for number in 0..<5 {
            try store.createVideo(authorID: 2, title: "v\(number)", thumbnailURL: "https://x.example/a.jpg", durationSeconds: 9)
        }
        try store.pruneChangeLog(keeping: 2)  // entries the index needs are gone
        try index.catchUp(from: store)
        #expect(index.differences(from: try FeedIndex(loadingFrom: store)) == [])
        #expect(index.changes(after: index.sequence - 5) == nil, "a reload forgets the changes before it")
    }
}
