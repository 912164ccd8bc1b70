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
