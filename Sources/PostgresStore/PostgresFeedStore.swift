public import FeedStore
import Foundation
import Synchronization

/// The PostgreSQL store, for several deltafeed replicas sharing one database: the same tables,
/// validation, errors and change log as the SQLite ``SQLiteStore/SQLiteFeedStore``, over libpq.
///
/// - Connections: a small pool (``FeedStore/StorageOptions/maximumReaderCount`` + 2) that the
///   server's threads share; a connection that fails is dropped and the next use opens a new
///   one, so the store reconnects on its own after PostgreSQL restarts. While it cannot connect,
///   every call throws ``FeedStoreError/unavailable(reason:)``.
/// - Writes: one transaction each. Its first statement bumps the `store_meta` row (the change
///   version), whose row lock every writer of every replica takes first and holds until it
///   commits: sequence numbers are taken and committed in order, so a reader of "entries after
///   N" never sees N+2 before N+1. The change-log entry is appended and `NOTIFY`
///   (``channel``, payload the sequence) sent in the same transaction; PostgreSQL delivers the
///   notification only if it commits.
/// - Reads: a `REPEATABLE READ READ ONLY` transaction per ``read(_:)``, one consistent state.
/// - Round trips: `BEGIN`, savepoints, change-log entries and `NOTIFY` have no answer to wait
///   for: they are queued on the connection and sent with the next statement that has one
///   (libpq's pipeline mode), so a transaction costs one round trip per statement whose answer
///   it reads, plus its `COMMIT`.
/// - Durability: ``FeedStore/StorageOptions/Durability/full`` is `synchronous_commit = on`,
///   `normal` is `off` (a crash of the server may lose the last commits, never corrupt).
/// - Errors name the SQLSTATE and constraint, never a value of a statement.
public final class PostgresFeedStore: FeedStorage {
    public typealias Reader = PostgresReader
    public typealias Transaction = PostgresTransaction

    public let options: StorageOptions
    /// The server and database, without a password.
    public let location: String
    /// The channel every committed write notifies, with its sequence number as payload.
    public let channel: String

    let pool: ConnectionPool
    /// How to open a connection of the store's own (the pool's, and the change listener's).
    let connect: @Sendable () throws -> PostgresConnection
    let cachedChangeVersion: LockedVersion
    let roundTripCounter: RoundTripCounter
    /// When to vacuum the snapshot tables (``snapshotRowsDeleted(_:)``).
    let snapshotVacuum = Mutex(SnapshotVacuumPolicy.standard)
    /// Vacuums of the snapshot tables this store ran (``snapshotRowsDeleted(_:)``), for tests.
    let vacuumsRun = Atomic<Int>(0)

    /// Round trips to the server so far, over every connection of the store (the pool's and the
    /// change listener's), counted by ``PostgresConnection``: what a write costs, for tests.
    package var roundTrips: Int { roundTripCounter.total }

    /// Vacuums of the snapshot tables this store has finished.
    package var snapshotVacuums: Int { vacuumsRun.load(ordering: .relaxed) }

    /// Vacuums the snapshot tables after every `rows` deleted rows, at most every `interval`
    /// milliseconds (tests lower the standard policy's numbers).
    package func vacuumSnapshots(afterDeleting rows: Int, atMostEvery interval: Int64) {
        snapshotVacuum.withLock { $0 = SnapshotVacuumPolicy(rows: rows, interval: interval) }
    }

    /// Connects to `url` (`postgres://USER@HOST:PORT/DB`, or any libpq connection string),
    /// applies the pending migrations and reads the change version.
    ///
    /// - Parameters:
    ///   - url: the server. A `connect_timeout` of 3 s is added unless the URL sets one.
    ///   - schema: a schema to create if missing and use instead of the default search path
    ///     (tests give each store a fresh one); letters, digits and `_` only.
    ///   - options: tuning and policies; `busyTimeout` bounds how long a write waits for another
    ///     replica's lock (`lock_timeout`) and for a free pooled connection.
    /// - Throws: ``FeedStoreError/unavailable(reason:)`` when the server cannot be reached;
    ///   ``FeedStoreError/storage(code:message:)`` when a migration fails.
    public init(url: String, schema: String? = nil, options: StorageOptions = StorageOptions()) throws(FeedStoreError) {
        if let schema, schema.isEmpty || !schema.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }) {
            throw .invalid(field: "schema", reason: "may contain only a-z, 0-9 and _")
        }
        let conninfo = Self.withConnectTimeout(url)
        let synchronousCommit = options.durability == .full ? "on" : "off"
        let lockTimeout = "\(Int(options.busyTimeout * 1000))ms"
        let applicationName = "deltafeed" + (schema.map { " " + $0 } ?? "")
        let roundTrips = RoundTripCounter()
        let connect: @Sendable () throws -> PostgresConnection = {
            let connection = try PostgresConnection(url: conninfo, counting: roundTrips)
            // No JIT: every statement here is short, and PostgreSQL compiles a plan whose cost
            // estimate passes `jit_above_cost` before running it. The per-viewer pruning's
            // estimate did (its rows per viewer are overestimated on a table this churned), and
            // compiling took about 100 ms of a 140 ms statement that found nothing to delete
            // (`auto_explain` in the polling mix, BENCHMARKS session 27).
            try connection.execute(
                "SELECT set_config('synchronous_commit', $1, false), set_config('lock_timeout', $2, false), set_config('application_name', $3, false), set_config('jit', 'off', false)",
                [synchronousCommit, lockTimeout, applicationName])
            if let schema {
                try connection.execute("SELECT set_config('search_path', $1, false)", [schema])
            }
            return connection
        }
        self.options = options
        self.location = Self.redacted(url) + (schema.map { " (schema \($0))" } ?? "")
        self.channel = "deltafeed_changes" + (schema.map { "_" + $0 } ?? "")
        self.connect = connect
        self.roundTripCounter = roundTrips
        self.pool = ConnectionPool(capacity: max(1, options.maximumReaderCount) + 2, wait: .seconds(options.busyTimeout), connect: connect)
        self.cachedChangeVersion = LockedVersion(0)
        do {
            try pool.withConnection { connection in
                if let schema { try connection.execute("CREATE SCHEMA IF NOT EXISTS \(schema)") }
                try PostgresSchema.migrate(connection)
            }
        } catch {
            throw Self.mapped(error)
        }
        try refreshChangeVersion()
    }

    /// `url` with `connect_timeout=3` unless it sets a timeout: a server that does not answer
    /// must not hold a writer for libpq's default of forever.
    static func withConnectTimeout(_ url: String) -> String {
        guard !url.contains("connect_timeout") else { return url }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return url + (url.contains("?") ? "&" : "?") + "connect_timeout=3"
        }
        return url + " connect_timeout=3"
    }

    /// `url` without the password of its user part, for logs.
    static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url.range(of: "@", range: scheme.upperBound..<url.endIndex),
            let colon = url.range(of: ":", range: scheme.upperBound..<at.lowerBound)
        else { return url }
        return String(url[..<colon.lowerBound]) + String(url[at.lowerBound...])
    }

    // MARK: - Versions

    public var changeVersion: Int64 { cachedChangeVersion.value }

    @discardableResult
    public func refreshChangeVersion() throws(FeedStoreError) -> Int64 {
        let version = try reading { reader throws(FeedStoreError) in try reader.changeVersion() }
        return cachedChangeVersion.raise(to: version)
    }

    // MARK: - Reading

    public func read<T>(_ body: (PostgresReader) throws -> T) throws -> T {
        if let group = currentGroup { return try body(PostgresReader(connection: connection(settling: group))) }
        return try pool.withConnection { connection in
            try connection.inTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                try body(PostgresReader(connection: connection))
            }
        }
    }

    public func reading<T>(_ body: (PostgresReader) throws(FeedStoreError) -> T) throws(FeedStoreError) -> T {
        do {
            return try read { reader in try body(reader) }
        } catch {
            throw Self.mapped(error)
        }
    }

    // MARK: - Writing

    public func write<T>(
        touchesAds: Bool, change: (T) -> PendingChange, _ body: (PostgresTransaction) throws -> T
    ) throws(FeedStoreError) -> T {
        if let group = currentGroup {
            return try writeInGroup(group, touchesAds: touchesAds, change: change, body)
        }
        let committedAt = now
        let (value, version): (T, Int64)
        do {
            (value, version) = try pool.withConnection { connection in
                try connection.inTransaction("BEGIN") {
                    let (value, version) = try appendingChange(
                        connection, touchesAds: touchesAds, committedAt: committedAt, change: change, body)
                    notify(connection, sequence: version)
                    return (value, version)
                }
            }
        } catch {
            throw Self.mapped(error)
        }
        cachedChangeVersion.raise(to: version)
        return value
    }

    /// Bumps the change version (the row lock on store_meta orders this write after every
    /// earlier one), runs `body` and appends `change(value)` to the change log under the new
    /// version, inside the caller's transaction or savepoint. The entry is queued: it goes out
    /// with the next statement (the `COMMIT`), which does not run if it fails.
    func appendingChange<T>(
        _ connection: PostgresConnection, touchesAds: Bool, committedAt: Int64, change: (T) -> PendingChange,
        _ body: (PostgresTransaction) throws -> T
    ) throws -> (T, Int64) {
        let bumped = try connection.execute(
            "UPDATE store_meta SET change_version = change_version + 1, ad_epoch = ad_epoch + $1 WHERE id = 1 RETURNING change_version",
            [touchesAds ? "1" : "0"])
        guard let version = bumped.firstValue.flatMap({ Int64($0) }) else {
            throw FeedStoreError.storage(code: .corrupt, message: "store_meta row is missing")
        }
        let value = try body(PostgresTransaction(connection: connection))
        let entry = change(value)
        connection.queue(
            "INSERT INTO change_log (seq, kind, key, other_key, committed_at) VALUES ($1, $2, $3, $4, $5)",
            [String(version), entry.kind.rawValue, String(entry.key), entry.otherKey.map { String($0) }, String(committedAt)],
            operation: "execute")
        return (value, version)
    }

    /// Tells the other replicas (``channel``) that the log reaches `sequence`; PostgreSQL
    /// delivers it at commit, and not at all on rollback. Queued, like the log entry.
    func notify(_ connection: PostgresConnection, sequence: Int64) {
        connection.queue("SELECT pg_notify($1, $2)", [channel, String(sequence)], operation: "execute")
    }

    /// Runs `body` in one transaction that leaves the change version alone (snapshots, pruning).
    /// With `commitsItself`, `body` sends the COMMIT (see `PostgresConnection.inTransaction`).
    func writeWithoutVersion<T>(commitsItself: Bool = false, _ body: (PostgresConnection) throws -> T) throws(FeedStoreError) -> T {
        do {
            return try pool.withConnection { connection in
                try connection.inTransaction("BEGIN", commitsItself: commitsItself) { try body(connection) }
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    @discardableResult
    public func pruneChangeLog(keeping keep: Int64) throws(FeedStoreError) -> Int {
        try writeWithoutVersion { connection in
            try connection.execute(
                "DELETE FROM change_log WHERE seq <= (SELECT change_version FROM store_meta WHERE id = 1) - $1", [String(max(0, keep))]
            ).affected
        }
    }

    // MARK: - Seeding

    /// Fills an empty store with the demo through `COPY … FROM STDIN`, one table after the other,
    /// in one transaction; the follow-count trigger is off during the load (the generator sets
    /// the counts) and the id sequences are moved past the loaded ids before the commit.
    @discardableResult
    public func seed(_ demo: DemoSeed, progress: ((_ done: Int, _ total: Int) -> Void)?) throws(FeedStoreError) -> StoreCounts {
        var load = try DemoLoad(demo, progress: progress)
        try write(touchesAds: true, change: { _ in PendingChange(kind: .reset, key: 0) }) { transaction in
            let connection = transaction.connection
            guard try PostgresReader(connection: connection).isEmpty() else { throw FeedStoreError.notEmptyForSeeding }
            try connection.execute("ALTER TABLE follows DISABLE TRIGGER follows_count")
            var copying = false
            try load.run { table in
                if copying { try connection.endCopy() }
                try connection.startCopy("COPY \(table.name) (\(table.columns.joined(separator: ", "))) FROM STDIN")
                copying = true
            } row: { values in
                try connection.copyRow(values.map { PostgresConnection.copyText($0.parameter) }.joined(separator: "\t") + "\n")
            } finish: {
                if copying { try connection.endCopy() }
                try connection.execute("ALTER TABLE follows ENABLE TRIGGER follows_count")
                for table in [User.table, Video.table, Ad.table] {
                    try connection.execute(
                        "SELECT setval(pg_get_serial_sequence($1, 'id'), (SELECT COALESCE(max(id), 0) + 1 FROM \(table)), false)", [table])
                }
                // Only the loaded tables: a bare ANALYZE takes a lock on every table of the
                // database, which deadlocked (40P01) with other schemas' work in the test suites.
                try connection.execute("ANALYZE \([User.table, Video.table, Ad.table, Follow.table].joined(separator: ", "))")
            }
        }
        return try counts()
    }

    // MARK: - Errors

    /// The ``FeedStoreError`` for anything the store's work threw: a lost or refused connection
    /// is ``FeedStoreError/unavailable(reason:)``; a constraint violation is the error SQLite's
    /// store reports for the same rule (writers are serialised by the `store_meta` lock and check
    /// first, so these are a last line of defence); the rest is a storage error naming the
    /// SQLSTATE. No value of a statement appears in any of them.
    static func mapped(_ error: any Error) -> FeedStoreError {
        switch error {
        case let error as FeedStoreError:
            return error
        case let error as PostgresError:
            if error.isConnectionFailure { return .unavailable(reason: error.description) }
            let constraint = error.constraint ?? "a constraint"
            switch error.sqlState {
            case "23505":
                let field = ["users_handle_key": "handle", "follows_pkey": "followee_id"][constraint] ?? "database"
                return .conflict(field: field, reason: "\(constraint) would be violated")
            case "23503" where constraint == "videos_author_id_fkey":
                return .invalid(field: "author_id", reason: "no such user")
            case "23503":
                return .notFound(entity: .user, id: "referenced by \(constraint)")
            case let state? where state.hasPrefix("23"):
                return .conflict(field: "database", reason: "\(constraint) would be violated")
            default:
                return .storage(code: failure(sqlState: error.sqlState), message: error.description)
            }
        default:
            return .storage(code: .other, message: String(describing: error))
        }
    }

    /// The backend-neutral kind of a failure, from its SQLSTATE class or code.
    static func failure(sqlState: String?) -> StorageFailure {
        switch sqlState {
        case "55P03", "57014", "40P01": return .busy  // lock not available, statement timeout, deadlock
        case "53100": return .full  // disk full
        case "58030": return .io  // I/O error
        case "XX001", "XX002": return .corrupt  // data or index corrupted
        default: return .other
        }
    }
}

extension PostgresConnection {
    /// Runs `body` between `begin` and `COMMIT`; rolls back (if the connection still works) and
    /// rethrows when it throws.
    ///
    /// `begin` is queued, so it travels with `body`'s first statement (or the `COMMIT`): no
    /// round trip of its own. When it is `begin` that failed (an idle connection PostgreSQL
    /// dropped meanwhile), that error is thrown, whatever `body` made of it, with the operation
    /// "begin": nothing else ran, so the pool may run `body` again elsewhere.
    ///
    /// With `commitsItself`, `body` sends the `COMMIT` (with statements of its own, in one
    /// round trip) before it returns.
    func inTransaction<T>(_ begin: String, commitsItself: Bool = false, _ body: () throws -> T) throws -> T {
        queue(begin, operation: "begin")
        do {
            let value = try body()
            if !commitsItself { try execute("COMMIT") }
            return value
        } catch {
            let queuedFailure = takeQueuedFailure()
            discardQueued()
            // Simple protocol: a statement to prepare would be refused in an aborted transaction.
            if isOpen { _ = try? executeScript("ROLLBACK") }
            if let queuedFailure, queuedFailure.operation == "begin" { throw queuedFailure }
            throw error
        }
    }
}

extension ColumnValue {
    /// `\x` and the bytes in hex, two digits each, written straight into the string's storage:
    /// every snapshot a replica hands out goes through here (byte by byte through `Data`'s
    /// iterator and an array it was 12 % of the hand-off thread's store pass).
    static func hex(_ data: Data) -> String {
        let digits: StaticString = "0123456789abcdef"
        return data.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: 2 + 2 * bytes.count) { text in
                text[0] = UInt8(ascii: "\\")
                text[1] = UInt8(ascii: "x")
                var index = 2
                for byte in bytes {
                    text[index] = digits.utf8Start[Int(byte >> 4)]
                    text[index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    index += 2
                }
                return index
            }
        }
    }

    /// The value as a text parameter: integers in decimal, blobs as `\x` hex (`bytea`'s text
    /// form), NULL as nil.
    var parameter: String? {
        switch self {
        case .null: return nil
        case .integer(let integer): return String(integer)
        case .text(let text): return text
        case .blob(let data): return Self.hex(data)
        }
    }
}
