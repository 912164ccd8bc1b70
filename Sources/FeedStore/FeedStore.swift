import Foundation
import GRDB

/// SQLite persistence for deltafeed: users, videos, ads, follows and feed snapshots.
///
/// A `FeedStore` wraps a GRDB `DatabasePool` on one file in WAL mode: reads run concurrently on
/// up to ``Options/maximumReaderCount`` connections and never wait for writes; writes are
/// serialized on one connection, each in its own transaction. Every method is synchronous and
/// may be called from any thread (the HTTP workers are plain threads, not Swift concurrency).
/// Do not call the store from inside a ``read(_:)`` closure or a seeding progress callback:
/// GRDB accesses are not reentrant.
///
/// Conventions:
/// - Times are `Int64` Unix milliseconds (`…At` fields); see ``Options/clock``.
/// - Failures are ``FeedStoreError``s; a write that throws has changed nothing.
/// - Every content write (users, videos, ads, follows, seeding) increases ``changeVersion`` in
///   the same transaction. Snapshot writes do not: snapshots are not feed content.
public final class FeedStore: FeedStorage {
    public typealias Reader = FeedReader
    public typealias Transaction = SQLiteTransaction

    /// Tuning and policies of a store.
    public struct Options: Sendable {
        /// How many connections may read at the same time (GRDB's `maximumReaderCount`).
        /// Readers beyond this wait for a free connection. Default 8.
        public var maximumReaderCount: Int
        /// How long a write waits for a lock held by another process (e.g. `deltafeed seed`
        /// run beside a server) before failing with `SQLITE_BUSY`, in seconds. Default 5.
        public var busyTimeout: TimeInterval
        /// Per-viewer snapshot retention, applied on every ``FeedStore/saveSnapshot(id:viewer:structure:)``.
        public var snapshotRetention: SnapshotRetention
        /// The source of "now" for `created_at`/`updated_at` and snapshot ages, in Unix
        /// milliseconds. Defaults to the system clock; tests inject a fixed or manual clock.
        public var clock: @Sendable () -> Int64
        /// When a committed write is on stable storage. Default ``Durability/full``.
        public var durability: Durability

        /// Creates options; every parameter has a production default.
        public init(
            maximumReaderCount: Int = 8,
            busyTimeout: TimeInterval = 5,
            snapshotRetention: SnapshotRetention = SnapshotRetention(),
            durability: Durability = .full,
            clock: @escaping @Sendable () -> Int64 = FeedStore.systemClock
        ) {
            self.maximumReaderCount = maximumReaderCount
            self.busyTimeout = busyTimeout
            self.snapshotRetention = snapshotRetention
            self.durability = durability
            self.clock = clock
        }
    }

    /// How far a commit goes before a write returns.
    public enum Durability: String, Sendable, CaseIterable {
        /// Every commit is synced to the disk before the write returns (SQLite
        /// `synchronous = FULL` in WAL mode): an acknowledged write survives a power loss.
        case full
        /// Commits reach the operating system, and the disk at each WAL checkpoint (SQLite
        /// `synchronous = NORMAL`): an acknowledged write survives a crash of the process but
        /// the last ones may be lost if the machine loses power. Faster on slow disks.
        case normal
    }

    /// How many snapshots are kept per viewer, and for how long.
    public struct SnapshotRetention: Sendable, Hashable {
        /// The newest snapshots kept per viewer (at least 1). Default 16.
        public var maxPerViewer: Int
        /// Snapshots older than this are deleted, in milliseconds. Default 24 hours.
        public var maxAgeMilliseconds: Int64

        /// Creates a retention policy. `maxPerViewer` is raised to 1 if lower.
        public init(maxPerViewer: Int = 16, maxAgeMilliseconds: Int64 = 24 * 60 * 60 * 1000) {
            self.maxPerViewer = max(1, maxPerViewer)
            self.maxAgeMilliseconds = maxAgeMilliseconds
        }
    }

    /// The default database path of the server's `--db` option.
    public static let defaultPath = "./data/deltafeed.sqlite"

    /// The system clock in Unix milliseconds.
    public static let systemClock: @Sendable () -> Int64 = {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The database file path.
    public let path: String
    /// The options the store was opened with.
    public let options: Options
    /// ``path``.
    public var location: String { path }

    let pool: DatabasePool
    private let cachedChangeVersion: LockedVersion
    /// For stores made by ``temporary(options:)``: the directory to delete on deinit.
    private let temporaryDirectory: URL?

    /// Opens (or creates) the store at `path`: creates the parent folder if needed, opens the
    /// database in WAL mode and runs the pending migrations.
    ///
    /// - Parameters:
    ///   - path: the SQLite file, e.g. ``defaultPath``. Its `-wal` and `-shm` companions live
    ///     beside it.
    ///   - options: tuning and policies.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` when the folder cannot be created, the
    ///   file cannot be opened (not a database, permissions…) or a migration fails.
    public convenience init(path: String, options: Options = Options()) throws(FeedStoreError) {
        try self.init(path: path, options: options, temporaryDirectory: nil)
    }

    private init(path: String, options: Options, temporaryDirectory: URL?) throws(FeedStoreError) {
        let pool = try mappingErrors {
            let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.label = "FeedStore"
            configuration.foreignKeysEnabled = true
            configuration.maximumReaderCount = max(1, options.maximumReaderCount)
            configuration.busyMode = .timeout(options.busyTimeout)
            let synchronous = options.durability == .full ? "FULL" : "NORMAL"
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            }
            // (GRDB starts DatabasePool write transactions IMMEDIATE itself: no lock upgrades.)
            let pool = try DatabasePool(path: path, configuration: configuration)
            try Schema.migrator.migrate(pool)
            return pool
        }
        self.path = path
        self.options = options
        self.pool = pool
        self.temporaryDirectory = temporaryDirectory
        let version = try mappingErrors { try pool.read { db in try FeedReader(db).meta().changeVersion } }
        self.cachedChangeVersion = LockedVersion(version)
    }

    /// Creates an empty store in a fresh temporary folder, deleted when the store is released.
    /// For tests and experiments; behaves exactly like a file store (same pool, WAL, migrations).
    ///
    /// - Parameter options: tuning and policies.
    /// - Returns: a new, empty, migrated store.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` when the folder or file cannot be
    ///   created.
    public static func temporary(options: Options = Options()) throws(FeedStoreError) -> FeedStore {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("feedstore-\(UUID().uuidString)", isDirectory: true)
        return try FeedStore(
            path: directory.appendingPathComponent("store.sqlite").path,
            options: options, temporaryDirectory: directory)
    }

    deinit {
        if let temporaryDirectory {
            try? pool.close()
            try? FileManager.default.removeItem(at: temporaryDirectory)
        }
    }

    // MARK: - Versions

    /// A number that increases with every committed content write (users, videos, ads, follows,
    /// seeding), starting at 0 for a new store. Failed writes and snapshot writes leave it
    /// unchanged.
    ///
    /// Reading it costs a lock, no database access: it is cached in memory and raised right after
    /// each commit, so data can be newer than the cached version for a moment, never older.
    /// Hence the rule for caches: read this value *before* reading the data you cache under it
    /// (then the data is at least as new as the key; a later bump invalidates it). For a version
    /// that matches the data exactly, use ``FeedReader/changeVersion()`` inside ``read(_:)``.
    /// Writes made by another process are not seen until ``refreshChangeVersion()``.
    ///
    /// - Complexity: O(1).
    public var changeVersion: Int64 {
        cachedChangeVersion.value
    }

    /// Re-reads the change version from the database (for writes made by another process on the
    /// same file) and returns it.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    @discardableResult
    public func refreshChangeVersion() throws(FeedStoreError) -> Int64 {
        let version = try reading { reader throws(FeedStoreError) in try reader.changeVersion() }
        return cachedChangeVersion.raise(to: version)
    }

    // MARK: - Reading

    /// Runs `body` with read access to one consistent state of the store (a WAL read
    /// transaction), concurrently with other reads and with writes.
    ///
    /// Use it for several reads that must agree with each other, and with the change version
    /// they were read at (the feed index loads the whole store in one).
    ///
    /// - Parameter body: the reads; the ``FeedReader`` must not escape it.
    /// - Returns: what `body` returns.
    /// - Throws: ``FeedStoreError`` from the store, or whatever `body` throws.
    public func read<T>(_ body: (FeedReader) throws -> T) throws -> T {
        do {
            return try pool.read { db in try body(FeedReader(db)) }
        } catch let error as DatabaseError {
            throw FeedStoreError(wrapping: error)
        }
    }

    /// ``read(_:)`` for reads that throw only ``FeedStoreError`` (every ``FeedReader`` method
    /// does), keeping the error's type: `try store.reading { try $0.isFollowing(follower: 7, followee: 8) }`.
    public func reading<T>(_ body: (FeedReader) throws(FeedStoreError) -> T) throws(FeedStoreError) -> T {
        try mappingErrors { try pool.read { db in try body(FeedReader(db)) } }
    }

    // MARK: - Writing

    /// Runs `body` in one write transaction, then bumps the change version (and the ad epoch when
    /// `touchesAds`) and appends `change(value)` to the change log under the new version, all in
    /// the same transaction. Nothing is written if `body` throws.
    public func write<T>(
        touchesAds: Bool, change: (T) -> PendingChange, _ body: (SQLiteTransaction) throws -> T
    ) throws(FeedStoreError) -> T {
        try writeDatabase(touchesAds: touchesAds, change: change) { db in try body(SQLiteTransaction(db: db)) }
    }

    /// ``write(touchesAds:change:_:)`` with the GRDB connection itself (seeding).
    func writeDatabase<T>(
        touchesAds: Bool, change: (T) -> PendingChange, _ body: (Database) throws -> T
    ) throws(FeedStoreError) -> T {
        let committedAt = now
        let (value, version) = try mappingErrors {
            try pool.write { db in
                let value = try body(db)
                let bump = try db.cachedStatement(
                    sql: """
                        UPDATE store_meta
                        SET change_version = change_version + 1, ad_epoch = ad_epoch + ?1
                        WHERE id = 1
                        RETURNING change_version
                        """)
                guard let version = try Int64.fetchOne(bump, arguments: [touchesAds ? 1 : 0]) else {
                    throw FeedStoreError.storage(code: -1, message: "store_meta row is missing")
                }
                let entry = change(value)
                try db.cachedStatement(sql: FeedQueries.appendChange)
                    .execute(arguments: [version, entry.kind.rawValue, entry.key, entry.otherKey, committedAt])
                return (value, version)
            }
        }
        cachedChangeVersion.raise(to: version)
        return value
    }

    /// Runs `body` in one write transaction without touching the change version (snapshots).
    func writeWithoutVersion<T>(_ body: (Database) throws -> T) throws(FeedStoreError) -> T {
        try mappingErrors { try pool.write { db in try body(db) } }
    }
}

/// An `Int64` behind a lock that only ever increases.
package final class LockedVersion: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Int64

    package init(_ value: Int64) {
        current = value
    }

    package var value: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Raises the value to `candidate` if higher; returns the value after the call.
    @discardableResult
    package func raise(to candidate: Int64) -> Int64 {
        lock.lock()
        defer { lock.unlock() }
        if candidate > current { current = candidate }
        return current
    }
}
