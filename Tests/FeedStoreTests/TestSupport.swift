import Foundation
import Testing

@testable import FeedStore

/// A clock tests move by hand: every read returns the current value, then advances by `step`.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Int64
    private let step: Int64

    init(start: Int64 = 1_700_000_000_000, step: Int64 = 0) {
        current = start
        self.step = step
    }

    var now: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func tick() -> Int64 {
        lock.lock()
        defer { lock.unlock() }
        let value = current
        current += step
        return value
    }

    func advance(by milliseconds: Int64) {
        lock.lock()
        defer { lock.unlock() }
        current += milliseconds
    }
}

/// A temporary store driven by `clock` (one millisecond per read by default, so creation times
/// are distinct and increasing).
func makeStore(
    clock: ManualClock = ManualClock(step: 1),
    retention: FeedStore.SnapshotRetention = FeedStore.SnapshotRetention()
) throws -> FeedStore {
    try FeedStore.temporary(
        options: FeedStore.Options(
            snapshotRetention: retention, clock: { clock.tick() }))
}

/// Creates users named `u1`, `u2`… and returns their ids in order.
@discardableResult
func makeUsers(_ count: Int, in store: FeedStore, prefix: String = "u") throws -> [Int64] {
    try (1...count).map { index in
        try store.createUser(handle: "\(prefix)\(index)", displayName: "User \(index)").id
    }
}

@discardableResult
func makeVideo(_ store: FeedStore, author: Int64, title: String = "A video", likes: Int64 = 0) throws -> Video {
    try store.createVideo(
        authorID: author, title: title, thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 30,
        likeCount: likes)
}
