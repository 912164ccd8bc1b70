import Foundation
import PostgresStore
import PostgresTestSupport
import Testing

@Suite("PostgreSQL schema", needsPostgres)
struct PostgresSchemaTests {
    /// A connection whose search path is a new, empty schema of its own.
    func freshSchema() throws -> (PostgresConnection, String) {
        let connection = try PostgresConnection(url: postgresURL!)
        let name = "test_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute("CREATE SCHEMA \(name)")
        try connection.execute("SELECT set_config('search_path', $1, false)", [name])
        return (connection, name)
    }

    @Test("Migrating twice applies each migration once; the counter row starts at version 0")
    func migrateIsIdempotent() throws {
        let (connection, schema) = try freshSchema()
        defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
        try PostgresSchema.migrate(connection)
        try PostgresSchema.migrate(connection)
        #expect(try connection.execute("SELECT count(*) FROM schema_migrations").rows == [["\(PostgresSchema.migrations.count)"]])
        #expect(try connection.execute("SELECT change_version, ad_epoch FROM store_meta").rows == [["0", "0"]])
    }

    @Test("Follower counts follow the graph through the trigger, cascades included")
    func followCountsFollowTheGraph() throws {
        let (connection, schema) = try freshSchema()
        defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
        try PostgresSchema.migrate(connection)
        try connection.execute("INSERT INTO users (handle, display_name, created_at) VALUES ('a', 'A', 0), ('b', 'B', 0), ('c', 'C', 0)")
        try connection.execute("INSERT INTO follows (follower_id, followee_id, created_at) VALUES (2, 1, 0), (3, 1, 0)")
        #expect(try connection.execute("SELECT follower_count, following_count FROM users ORDER BY id").rows == [["2", "0"], ["0", "1"], ["0", "1"]])
        try connection.execute("DELETE FROM users WHERE id = 3")
        #expect(try connection.execute("SELECT follower_count FROM users WHERE id = 1").rows == [["1"]])
        let error = #expect(throws: PostgresError.self) {
            try connection.execute("INSERT INTO follows (follower_id, followee_id, created_at) VALUES (1, 1, 0)")
        }
        #expect(error?.sqlState == "23514")
    }
}

extension PostgresSchemaTests {
    /// Migration v6: a snapshot is what a client can fetch again, so `snapshots` writes no WAL
    /// (about 1 KB of it per snapshot handed out before) and keeps only the indexes its
    /// statements read. Bases stay logged: replicas encode new snapshots against the bases they
    /// know the store holds.
    @Test("Snapshots are unlogged, bases and content stay logged; snapshots keep their primary key and the time index of the global expiry only")
    func snapshotTablesAreUnlogged() throws {
        let (connection, schema) = try freshSchema()
        defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
        try PostgresSchema.migrate(connection)
        let persistence = try connection.execute(
            """
            SELECT relname, relpersistence FROM pg_class
            WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' AND relname <> 'schema_migrations' ORDER BY relname
            """
        ).rows
        #expect(persistence.filter { $0[1] != "p" } == [["snapshots", "u"]])
        #expect(persistence.count > 5)
        let indexes = try connection.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'snapshots' ORDER BY indexname"
        ).rows
        #expect(indexes == [["snapshots_by_time"], ["snapshots_pkey"]])
    }
}

@Suite("When the store vacuums its snapshot tables")
struct SnapshotVacuumPolicyTests {
    @Test("A vacuum starts once enough rows were deleted, one at a time, and never sooner than the interval after the last")
    func vacuumFollowsDeletions() {
        var policy = SnapshotVacuumPolicy(rows: 100, interval: 1_000)
        /// Whether a vacuum starts after `count` deletions at `now`.
        func starts(_ count: Int, at now: Int64) -> Bool { policy.deleted(count, now: now) }
        #expect(!starts(60, at: 0))
        #expect(starts(40, at: 10), "100 rows: the first vacuum starts")
        #expect(!starts(500, at: 2_000), "one at a time: the first is still running")
        policy.finished()
        #expect(starts(0, at: 2_000), "the rows deleted meanwhile count")
        policy.finished()
        #expect(!starts(100, at: 2_500), "within the interval of the last start")
        #expect(starts(0, at: 3_000))
        policy.finished()
        #expect(!starts(-5, at: 9_000), "nothing deleted, nothing to vacuum")
    }
}
