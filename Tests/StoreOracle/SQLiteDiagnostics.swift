import FeedStore
public import GRDB
public import SQLiteStore

// What tests look at in the SQLite store beyond what the store offers: its journal mode,
// migrations, schema objects and query plans. Nothing outside these tests reads them.

extension SQLiteFeedStore {
    /// SQLite's journal mode of the store's connections (`"wal"` for every store of this module).
    public func journalMode() throws -> String {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// The identifiers of the migrations applied to the database, in order.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try Schema.migrator.appliedMigrations(db) }
    }

    /// The `EXPLAIN QUERY PLAN` lines of `sql` run with `arguments` (the `detail` column, one line
    /// per plan step), to check that a query uses an index.
    public func queryPlan(_ sql: String, arguments: StatementArguments = []) throws -> [String] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { row in
                row["detail"]
            }
        }
    }

    /// The names of the tables, indexes and triggers of the schema, sorted.
    public func schemaObjects() throws -> [String] {
        try pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT type || ' ' || name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY 1
                    """)
        }
    }
}
