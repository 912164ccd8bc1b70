public import FeedStore
import Foundation
package import GRDB

/// SQLite persistence for deltafeed: users, videos, ads, follows and feed snapshots.
///
/// A `SQLiteFeedStore` wraps a GRDB `DatabasePool` on one file in WAL mode: reads run concurrently on
/// up to ``StorageOptions/maximumReaderCount`` connections and never wait for writes; writes are
/// serialized on one connection, each in its own transaction. Every method is synchronous and
/// may be called from any thread (the HTTP workers are plain threads, not Swift concurrency).
/// Do not call the store from inside a ``read(_:)`` closure or a seeding progress callback:
/// GRDB accesses are not reentrant.
///
/// Conventions:
/// - Times are `Int64` Unix milliseconds (`…At` fields); see ``StorageOptions/clock``.
/// - Failures are ``FeedStoreError``s; a write that throws has changed nothing.
/// - Every content write (users, videos, ads, follows, seeding) increases ``changeVersion`` in
///   the same transaction. Snapshot writes do not: snapshots are not feed content.
public final class SQLiteFeedStore: FeedStorage {
    public typealias Reader = SQLiteReader
    public typealias Transaction = SQLiteTransaction

    /// The default database path of the server's `--db` option.
    public static let defaultPath = "./data/deltafeed.sqlite"

    /// The database file path.
    public let path: String
    /// The options the store was opened with.
    public let options: StorageOptions
    /// ``path``.
    public var location: String { path }

    package let pool: DatabasePool
    /// Where each stored snapshot is (rebuilt from the snapshot log when the store opens).
    let log: SnapshotLog
    let cachedChangeVersion: LockedVersion
    /// For stores made by ``temporary(options:)``: the directory to delete on deinit.
    private let temporaryDirectory: URL?
    /// Set by ``StorageOptions/backgroundCheckpointInterval``.
    private let checkpointer: BackgroundCheckpointer?

    /// Opens (or creates) the store at `path`: creates the parent folder if needed, opens the
    /// database in WAL mode and runs the pending migrations.
    ///
    /// - Parameters:
    ///   - path: the SQLite file, e.g. ``defaultPath``. Its `-wal` and `-shm` companions live
    ///     beside it.
    ///   - options: tuning and policies.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` when the folder cannot be created, the
    ///   file cannot be opened (not a database, permissions…) or a migration fails.
    public convenience init(path: String, options: StorageOptions = StorageOptions()) throws(FeedStoreError) {
        try self.init(path: path, options: options, temporaryDirectory: nil)
    }

    private init(path: String, options: StorageOptions, temporaryDirectory: URL?) throws(FeedStoreError) {
        let (pool, log) = try mappingErrors {
            let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.label = "SQLiteFeedStore"
            configuration.foreignKeysEnabled = true
            configuration.maximumReaderCount = max(1, options.maximumReaderCount)
            configuration.busyMode = .timeout(options.busyTimeout)
            // (GRDB starts DatabasePool write transactions IMMEDIATE itself: no lock upgrades.)
            let pool = try DatabasePool(path: path, configuration: configuration)
            // Whether a commit is synced is a setting of the connection that commits: the pool's
            // one writer. It is set here, after the pool opened, because GRDB sets the writer's
            // `synchronous` to NORMAL when it turns WAL on, after `prepareDatabase` has run.
            let synchronous = options.durability == .full ? "FULL" : "NORMAL"
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                // Debian's SQLite is built with secure_delete on: every page a delete frees is
                // overwritten with zeros, a second write of each snapshot-log row the log drops.
                // FAST still zeroes deleted cells on the pages a delete writes anyway.
                try db.execute(sql: "PRAGMA secure_delete = FAST")
            }
            try Schema.migrator.migrate(pool)
            return (pool, try pool.read { db in try SnapshotLog.load(from: db) })
        }
        self.path = path
        self.options = options
        self.pool = pool
        self.log = log
        self.temporaryDirectory = temporaryDirectory
        if let interval = options.backgroundCheckpointInterval {
            checkpointer = try mappingErrors {
                let checkpointer = try BackgroundCheckpointer(path: path, interval: interval, busyTimeout: options.busyTimeout)
                // Commits no longer checkpoint: the checkpointer's thread does.
                try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
                return checkpointer
            }
        } else {
            checkpointer = nil
        }
        let version = try mappingErrors { try pool.read { db in try SQLiteReader(db, log: log).meta().changeVersion } }
        self.cachedChangeVersion = LockedVersion(version)
    }

    /// Creates an empty store in a fresh temporary folder, deleted when the store is released.
    /// For tests and experiments; behaves exactly like a file store (same pool, WAL, migrations).
    ///
    /// - Parameter options: tuning and policies.
    /// - Returns: a new, empty, migrated store.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` when the folder or file cannot be
    ///   created.
    public static func temporary(options: StorageOptions = StorageOptions()) throws(FeedStoreError) -> SQLiteFeedStore {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("feedstore-\(UUID().uuidString)", isDirectory: true)
        return try SQLiteFeedStore(
            path: directory.appendingPathComponent("store.sqlite").path,
            options: options, temporaryDirectory: directory)
    }

    deinit {
        checkpointer?.stop()
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
    /// that matches the data exactly, use ``SQLiteReader/changeVersion()`` inside ``read(_:)``.
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
    /// - Parameter body: the reads; the ``SQLiteReader`` must not escape it.
    /// - Returns: what `body` returns.
    /// - Throws: ``FeedStoreError`` from the store, or whatever `body` throws.
    public func read<T>(_ body: (SQLiteReader) throws -> T) throws -> T {
        if let group = currentGroup { return try body(SQLiteReader(group.connection, log: log)) }
        do {
            return try pool.read { db in try body(SQLiteReader(db, log: log)) }
        } catch let error as DatabaseError {
            throw FeedStoreError(wrapping: error)
        }
    }

    /// ``read(_:)`` for reads that throw only ``FeedStoreError`` (every ``SQLiteReader`` method
    /// does), keeping the error's type: `try store.reading { try $0.isFollowing(follower: 7, followee: 8) }`.
    public func reading<T>(_ body: (SQLiteReader) throws(FeedStoreError) -> T) throws(FeedStoreError) -> T {
        if let group = currentGroup { return try body(SQLiteReader(group.connection, log: log)) }
        return try mappingErrors { try pool.read { db in try body(SQLiteReader(db, log: log)) } }
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
        if let group = currentGroup {
            return try writeInGroup(group, touchesAds: touchesAds, change: change, body)
        }
        let committedAt = now
        let (value, version) = try mappingErrors {
            try pool.write { db in try appendingChange(db, touchesAds: touchesAds, committedAt: committedAt, change: change, body) }
        }
        cachedChangeVersion.raise(to: version)
        return value
    }

    /// Runs `body`, then bumps the change version (and the ad epoch when `touchesAds`) and
    /// appends `change(value)` to the change log under the new version, on `db`, inside the
    /// caller's transaction or savepoint.
    func appendingChange<T>(
        _ db: Database, touchesAds: Bool, committedAt: Int64, change: (T) -> PendingChange, _ body: (Database) throws -> T
    ) throws -> (T, Int64) {
        let value = try body(db)
        let bump = try db.cachedStatement(
            sql: """
                UPDATE store_meta
                SET change_version = change_version + 1, ad_epoch = ad_epoch + ?1
                WHERE id = 1
                RETURNING change_version
                """)
        guard let version = try Int64.fetchOne(bump, arguments: [touchesAds ? 1 : 0]) else {
            throw FeedStoreError.storage(code: .corrupt, message: "store_meta row is missing")
        }
        let entry = change(value)
        try db.cachedStatement(sql: FeedQueries.appendChange)
            .execute(arguments: [version, entry.kind.rawValue, entry.key, entry.otherKey, committedAt])
        return (value, version)
    }

    /// Runs `body` in one write transaction without touching the change version (snapshots,
    /// pruning).
    ///
    /// Its commit is not synced even with ``StorageOptions/Durability/full``: what it writes may
    /// be lost on a power loss (snapshots promise survival of a clean stop, not more), and the
    /// next content write's sync covers its log frames too. So the maintenance thread's
    /// transactions hold the one writer for their work only, not for a sync each.
    func writeWithoutVersion<T>(_ body: (Database) throws -> T) throws(FeedStoreError) -> T {
        try mappingErrors {
            try pool.writeWithoutTransaction { db in
                func transaction() throws -> T {
                    var result: T?
                    try db.inTransaction(.immediate) {
                        result = try body(db)
                        return .commit
                    }
                    return result!
                }
                guard options.durability == .full else { return try transaction() }
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                defer {
                    // Content writes are synced only while this is FULL: a connection that cannot
                    // be set back must not go on acknowledging writes.
                    do { try db.execute(sql: "PRAGMA synchronous = FULL") } catch { preconditionFailure("cannot restore synchronous = FULL: \(error)") }
                }
                return try transaction()
            }
        }
    }
}
