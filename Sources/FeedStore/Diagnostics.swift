import GRDB

extension FeedStore {
    /// SQLite's journal mode of the store's connections (`"wal"` for every store of this module).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    public func journalMode() throws(FeedStoreError) -> String {
        try reading { reader throws(FeedStoreError) in
            try mappingErrors { try String.fetchOne(reader.db, sql: "PRAGMA journal_mode") ?? "" }
        }
    }

    /// The identifiers of the migrations applied to the database, in order.
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    public func appliedMigrations() throws(FeedStoreError) -> [String] {
        try mappingErrors { try pool.read { db in try Schema.migrator.appliedMigrations(db) } }
    }

    /// The `EXPLAIN QUERY PLAN` lines of `sql` run with `arguments` (the `detail` column, one line
    /// per plan step). For tests and for checking that a query uses an index.
    func queryPlan(_ sql: String, arguments: StatementArguments = []) throws -> [String] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { row in
                row["detail"]
            }
        }
    }

    /// The names of the tables, indexes and triggers of the schema, sorted.
    func schemaObjects() throws -> [String] {
        try pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT type || ' ' || name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY 1
                    """)
        }
    }

    /// The row count of the meta table and the raw meta values, for tests.
    func rawMeta() throws -> (changeVersion: Int64, adEpoch: Int64) {
        try pool.read { db in try FeedReader(db).meta() }
    }
}
