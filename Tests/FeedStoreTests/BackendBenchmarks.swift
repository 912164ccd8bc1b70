import FeedStore
import Foundation
import Testing

/// What one write and one snapshot batch cost on each backend, for the README's replica
/// figures: timings for the report, not assertions. Run with
/// `FEEDSTORE_BENCH=1 DELTAFEED_TEST_POSTGRES=postgres://… swift test --filter BackendBenchmarks`
/// against a PostgreSQL with its production settings (fsync and synchronous_commit on, as the
/// SQLite store's `durability full` syncs every commit).
@Suite("Backend benchmarks", .serialized, .enabled(if: ProcessInfo.processInfo.environment["FEEDSTORE_BENCH"] != nil))
struct BackendBenchmarks {
    @Test("Median cost of one write and of one snapshot batch", arguments: Backend.all)
    func writeAndSnapshotBatch(_ backend: Backend) throws {
        let store = try makeStore(backend, clock: ManualClock(step: 1))
        try store.seed(DemoSeed(users: 200, videos: 2000, ads: 10, seed: 3))
        let like = try FeedStoreBenchmarks.median(rounds: 200) { round in
            try store.updateVideo(id: Int64(1 + round % 2000), likeCount: Int64(round))
        }
        let create = try FeedStoreBenchmarks.median(rounds: 100) { round in
            try makeVideo(store, author: Int64(1 + round % 200), title: "Bench \(round)")
        }
        let follow = try FeedStoreBenchmarks.median(rounds: 100) { round in
            let follower = Int64(1 + round % 200)
            let followee = Int64(1 + (round * 7 + 3) % 200)
            guard follower != followee else { return }
            if try store.read({ try $0.isFollowing(follower: follower, followee: followee) }) {
                try store.unfollow(follower: follower, followee: followee)
            } else {
                try store.follow(follower: follower, followee: followee)
            }
        }
        // A second's batch of the maintenance thread under load: 500 snapshots of 2 KB (a
        // 30-item page's structure), pruning their viewers.
        let structure = Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let batch = try FeedStoreBenchmarks.median(rounds: 20) { round in
            let upserts = (0..<500).map { index in
                StoredSnapshot(id: "s\(round)-\(index)", viewerID: Int64(index), createdAt: Int64(round * 1000 + index), structure: structure)
            }
            try store.persistSnapshots(upserts: upserts, deletions: [], prune: Set(upserts.map(\.viewerID)), keepPerViewer: 32)
        }
        let read = try FeedStoreBenchmarks.median(rounds: 200) { round in
            _ = try store.snapshot(id: "s\(round % 20)-\(round % 500)", viewer: Int64(round % 500))
        }
        print(
            """
            [bench] \(backend): like-count update \(String(format: "%.2f", like)) ms, new video \(String(format: "%.2f", create)) ms, \
            follow/unfollow \(String(format: "%.2f", follow)) ms, snapshot batch of 500 \(String(format: "%.1f", batch)) ms, \
            snapshot read back \(String(format: "%.2f", read)) ms (medians)
            """)
    }

    @Test("Median cost of a group of 10 staged writes (7 likes, a new video, 2 follows): how long a group holds the store's write lock", arguments: Backend.all)
    func stagedGroup(_ backend: Backend) throws {
        let store = try makeStore(backend, clock: ManualClock(step: 1))
        try store.seed(DemoSeed(users: 200, videos: 2000, ads: 10, seed: 3))
        let group = try FeedStoreBenchmarks.median(rounds: 200) { round in
            let batch = StagedBatch()
            for index in 0..<10 {
                let user = Int64(1 + (round * 10 + index) % 200)
                switch index {
                case 0..<7: batch.add(store.stageLike(video: Int64(1 + (round * 7 + index) % 2000), by: user))
                case 7: batch.add(try store.stageVideo(authorID: user, title: "Bench", thumbnailURL: "https://cdn.example/b.jpg", durationSeconds: 9))
                default: batch.add(try store.stageFollow(follower: user, followee: user % 200 + 1))
                }
            }
            try store.writeGroup { store.performTogether(batch.writes) }
        }
        print("[bench] \(backend): a group of 10 staged writes \(String(format: "%.2f", group)) ms (median)")
    }
}
