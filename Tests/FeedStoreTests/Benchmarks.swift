import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

/// Timings for the report, not assertions. Run with
/// `FEEDSTORE_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter FeedStoreBenchmarks`.
@Suite(
    "SQLiteFeedStore benchmarks", .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["FEEDSTORE_BENCH"] != nil))
struct FeedStoreBenchmarks {
    static func milliseconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
    }

    /// Median time of one call of `body`, over `rounds` calls, each on the next viewer.
    static func median(rounds: Int, _ body: (Int) throws -> Void) rethrows -> Double {
        var samples: [Double] = []
        for round in 0..<rounds {
            samples.append(try milliseconds { try body(round) })
        }
        samples.sort()
        return samples[samples.count / 2]
    }

    static func report(users: Int, videos: Int) throws {
        let demo = DemoSeed(users: users, videos: videos, ads: 40, seed: 42)
        let generationTime = milliseconds {
            var generator = DemoGenerator(demo)
            _ = generator.makeUsers()
            _ = generator.makeFollows()
            var checksum: Int64 = 0
            generator.forEachVideo { checksum &+= $0.likeCount &+ Int64($0.title.utf8.count) }
            _ = generator.makeAds()
            precondition(checksum != 0)
        }
        let store = try SQLiteFeedStore.temporary()
        let seedTime = try milliseconds { try store.seed(DemoSeed(users: users, videos: videos, ads: 40, seed: 42)) }
        let counts = try store.counts()
        let viewers = (1...200).map { Int64(1 + ($0 * 7919) % users) }
        let followees = try viewers.map { viewer in Set(try store.read { try $0.followees(of: viewer) }) }
        // The viewer following the most authors, to show the worst case of the merge.
        let heaviest = try (1...Int64(users)).max { a, b in
            try store.read { try $0.user(id: a) }!.followingCount < store.read { try $0.user(id: b) }!.followingCount
        }!

        _ = try store.read { try $0.followedVideos(viewer: viewers[0], limit: 50) }  // warm the caches
        let followed = try median(rounds: 200) { round in _ = try store.read { try $0.followedVideos(viewer: viewers[round], limit: 50) } }
        let followedHeavy = try median(rounds: 50) { _ in _ = try store.read { try $0.followedVideos(viewer: heaviest, limit: 50) } }
        let followedPage2 = try median(rounds: 200) { round in
            let first = try store.read { try $0.followedVideos(viewer: viewers[round], limit: 50) }
            if let cursor = first.last?.feedCursor {
                _ = try store.read { try $0.followedVideos(viewer: viewers[round], limit: 50, before: cursor) }
            }
        }
        let popular = try median(rounds: 200) { _ in _ = try store.read { try $0.popularVideos(limit: 50) } }
        let popularExcluding = try median(rounds: 200) { round in
            _ = try store.read { try $0.popularVideos(limit: 50, excludingAuthors: followees[round]) }
        }
        let suggestions = try median(rounds: 200) { round in _ = try store.read { try $0.followSuggestions(for: viewers[round]) } }
        let authors = try median(rounds: 200) { round in
            _ = try store.read { reader in try reader.users(ids: (0..<50).map { Int64(1 + (round * 50 + $0) % users) }) }
        }
        let snapshot = try median(rounds: 200) { round in
            try store.saveSnapshot(id: "snap\(round)", viewer: viewers[round % 10], structure: Data(count: 2048))
        }
        let write = try median(rounds: 200) { round in
            try store.addToVideoCounts(id: Int64(1 + round), likes: 1)
        }
        let digest = try milliseconds { _ = try store.contentDigest() }

        print(
            """
            [bench] users=\(counts.users) videos=\(counts.videos) ads=\(counts.ads) follows=\(counts.follows) \
            mean followees=\(followees.map(\.count).reduce(0, +) / followees.count) heaviest viewer follows \
            \(try store.read { try $0.user(id: heaviest) }!.followingCount)
            [bench]   seed                          \(String(format: "%9.1f", seedTime)) ms
            [bench]     of which row generation     \(String(format: "%9.1f", generationTime)) ms
            [bench]   followedVideos(limit 50)      \(String(format: "%9.3f", followed)) ms (median, 200 viewers)
            [bench]   followedVideos heaviest       \(String(format: "%9.3f", followedHeavy)) ms
            [bench]   followedVideos pages 1+2      \(String(format: "%9.3f", followedPage2)) ms
            [bench]   popularVideos(limit 50)       \(String(format: "%9.3f", popular)) ms
            [bench]   popularVideos excl. followees \(String(format: "%9.3f", popularExcluding)) ms
            [bench]   followSuggestions(10)         \(String(format: "%9.3f", suggestions)) ms
            [bench]   users(ids: 50)                \(String(format: "%9.3f", authors)) ms
            [bench]   saveSnapshot(2 KB) + prune    \(String(format: "%9.3f", snapshot)) ms
            [bench]   addToVideoCounts (1 write)    \(String(format: "%9.3f", write)) ms
            [bench]   contentDigest                 \(String(format: "%9.1f", digest)) ms
            """)
    }

    @Test("Timings at 2000 users / 50,000 videos")
    func timings50k() throws {
        try Self.report(users: 2000, videos: 50_000)
    }

    @Test("Timings at 2000 users / 500,000 videos")
    func timings500k() throws {
        try Self.report(users: 2000, videos: 500_000)
    }
}
