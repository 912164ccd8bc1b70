import FeedStore
import Foundation
import PostgresStore
import PostgresTestSupport
import SQLiteStore
import Testing

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
    retention: StorageOptions.SnapshotRetention = StorageOptions.SnapshotRetention()
) throws -> SQLiteFeedStore {
    try SQLiteFeedStore.temporary(
        options: StorageOptions(
            snapshotRetention: retention, clock: { clock.tick() }))
}

/// The PostgreSQL server scripts/test starts (it sets the variable); without it the store suites
/// run on SQLite alone.

/// The backends a store suite runs on: SQLite always, PostgreSQL when scripts/test started one.
enum Backend: String, CustomTestStringConvertible, Sendable {
    case sqlite
    case postgres

    static let all: [Backend] = postgresURL == nil ? [.sqlite] : [.sqlite, .postgres]

    var testDescription: String { rawValue }
}

/// An empty store on `backend` driven by `clock`: a temporary SQLite file, or a fresh schema of
/// its own in the test PostgreSQL (so tests running at once never see each other's rows).
func makeStore(
    _ backend: Backend, clock: ManualClock = ManualClock(step: 1),
    retention: StorageOptions.SnapshotRetention = StorageOptions.SnapshotRetention()
) throws -> any FeedStorage {
    let options = StorageOptions(maximumReaderCount: 2, snapshotRetention: retention, clock: { clock.tick() })
    switch backend {
    case .sqlite:
        return try SQLiteFeedStore.temporary(options: options)
    case .postgres:
        return try PostgresFeedStore(url: postgresURL!, schema: freshSchemaName(), options: options)
    }
}

/// A schema name no other test uses.
func freshSchemaName() -> String {
    "test_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
}

/// Creates users named `u1`, `u2`… and returns their ids in order.
@discardableResult
func makeUsers(_ count: Int, in store: any FeedStorage, prefix: String = "u") throws -> [Int64] {
    try (1...count).map { index in
        try store.createUser(handle: "\(prefix)\(index)", displayName: "User \(index)").id
    }
}

@discardableResult
func makeVideo(_ store: any FeedStorage, author: Int64, title: String = "A video", likes: Int64 = 0) throws -> Video {
    try store.createVideo(
        authorID: author, title: title, thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 30,
        likeCount: likes)
}
