import FeedStore
import Foundation
import GRDB
import PostgresStore
import PostgresTestSupport
import SQLiteStore
import Testing

/// Both stores build their SQL from the records' `CodingKeys` and share `StoreSchema`'s tables;
/// these tests read the schemas back from the databases, so a migration added to one store only,
/// or a record column the tables lack, fails here rather than in a query on one backend.
@Suite("Schema parity")
struct SchemaParityTests {
    /// The content records. Snapshots are kept apart by each store: SQLite in its snapshot log
    /// (`SnapshotLog`, one appended row per batch), PostgreSQL in `snapshots` and
    /// `snapshot_bases` keyed by viewer and id, which any replica can look up.
    static let records: [any StoredRecord.Type] = [User.self, Video.self, Ad.self, Follow.self]

    // Compared as sets: every statement names its columns.
    @Test("Every record's columns are its SQLite table's columns, and its key is the primary key")
    func recordsMatchSQLiteTables() throws {
        let store = try makeStore()
        for record in Self.records {
            let (columns, key) = try store.pool.read { db in
                (try db.columns(in: record.table).map(\.name), try db.primaryKey(record.table).columns)
            }
            #expect(columns.sorted() == record.columnNames.sorted(), "\(record.table)")
            #expect(key == record.keyColumns, "\(record.table)")
        }
    }

    @Test(
        "A fresh PostgreSQL schema has the SQLite store's tables, columns, keys and indexes",
        needsPostgres)
    func postgresMatchesSQLite() throws {
        let store = try makeStore()
        let sqlite = try store.pool.read { db in try Self.describe(db) }
        let connection = try PostgresConnection(url: postgresURL!)
        let schema = freshSchemaName()
        try connection.execute("CREATE SCHEMA \(schema)")
        defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
        try connection.execute("SELECT set_config('search_path', $1, false)", [schema])
        try PostgresSchema.migrate(connection)
        let postgres = try Self.describe(connection)
        #expect(sqlite.count > 20)
        #expect(postgres == sqlite)
    }

    /// Column types as both stores mean them: SQLite's `INTEGER` is PostgreSQL's `bigint` or
    /// `integer`, `BLOB` is `bytea`.
    static func family(_ type: String) -> String {
        switch type.lowercased() {
        case "integer", "bigint": "integer"
        case "blob", "bytea": "bytes"
        default: type.lowercased()
        }
    }

    /// One line per table (its columns in order, with type family and nullability), primary key,
    /// unique constraint and index (its columns in order), sorted.
    static func describe(_ db: Database) throws -> [String] {
        let tables = try String.fetchAll(
            db,
            sql: """
                SELECT name FROM sqlite_master
                WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN ('grdb_migrations', 'snapshot_log')
                """)
        var lines: [String] = []
        for table in tables {
            let primaryKey = try db.primaryKey(table)
            // The rowid alias (`INTEGER PRIMARY KEY`) is never null, though not declared NOT NULL.
            let columns = try db.columns(in: table).map { column in
                let notNull = column.isNotNull || column.name == primaryKey.rowIDColumn
                return "\(column.name) \(family(column.type))\(notNull ? " not null" : "")"
            }
            lines.append("table \(table) (\(columns.joined(separator: ", ")))")
            lines.append("primary key \(table) (\(primaryKey.columns.joined(separator: ", ")))")
            for index in try db.indexes(on: table) {
                switch index.origin {
                case .createIndex: lines.append("index \(index.name) on \(table) (\(index.columns.joined(separator: ", ")))")
                case .uniqueConstraint: lines.append("unique \(table) (\(index.columns.joined(separator: ", ")))")
                default: break  // the primary key, above
                }
            }
        }
        return lines.sorted()
    }

    /// ``describe(_:)-(Database)`` of the current schema of `connection`, without the snapshot
    /// tables (SQLite keeps snapshots in its snapshot log instead).
    static func describe(_ connection: PostgresConnection) throws -> [String] {
        var columns: [String: [String]] = [:]
        let columnRows = try connection.execute(
            """
            SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name NOT IN ('schema_migrations', 'snapshots', 'snapshot_bases')
            ORDER BY table_name, ordinal_position
            """)
        for row in columnRows.rows {
            columns[row[0]!, default: []].append("\(row[1]!) \(family(row[2]!))\(row[3] == "NO" ? " not null" : "")")
        }
        var lines = columns.map { "table \($0.key) (\($0.value.joined(separator: ", ")))" }
        let indexRows = try connection.execute(
            """
            SELECT t.relname, i.relname, x.indisprimary,
                EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid),
                (SELECT string_agg(a.attname, ', ' ORDER BY k.n)
                    FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k (attnum, n)
                    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum)
            FROM pg_index x
            JOIN pg_class i ON i.oid = x.indexrelid
            JOIN pg_class t ON t.oid = x.indrelid
            WHERE t.relnamespace = current_schema()::regnamespace AND t.relname NOT IN ('schema_migrations', 'snapshots', 'snapshot_bases')
            """)
        for row in indexRows.rows {
            let (table, name, columns) = (row[0]!, row[1]!, row[4]!)
            if row[2] == "t" {
                lines.append("primary key \(table) (\(columns))")
            } else if row[3] == "t" {
                lines.append("unique \(table) (\(columns))")
            } else {
                lines.append("index \(name) on \(table) (\(columns))")
            }
        }
        return lines.sorted()
    }
}
