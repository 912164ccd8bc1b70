public import FeedStore
import GRDB

extension SQLiteFeedStore {
    /// Fills an empty store with the deterministic demo described by `demo`, in one transaction
    /// (all or nothing), with prepared statements reused for every row.
    ///
    /// Rows get explicit ids starting at 1 in each table, so the result does not depend on what
    /// the file held before. Bumps the change version and the ad epoch once.
    ///
    /// For speed, the secondary indexes and the follow-count triggers of the content tables are
    /// dropped during the load and recreated from their stored definitions before the commit
    /// (follower counts are computed by the generator); readers never see the intermediate state.
    ///
    /// - Parameters:
    ///   - demo: the sizes, seed and base time.
    ///   - progress: called with the rows written so far and the total (users + follows +
    ///     videos + ads), every 1000 rows, and with (total, total) once everything is written and
    ///     indexed (just before the commit). It runs on the store's writer thread while the caller
    ///     waits; it must not call the store.
    /// - Returns: the row counts after seeding.
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` for impossible sizes;
    ///   ``FeedStoreError/conflict(field:reason:)`` on `database` when the store is not empty
    ///   (see ``isEmpty()``); ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O((u + f + v + a) log n). Measured in release on the project's 2-core
    ///   machine: about 0.6 s for 2000 / 50,000 / 40 and 4.5 s for 2000 / 500,000 / 40
    ///   (`FeedStoreBenchmarks` in the tests).
    @discardableResult
    public func seed(
        _ demo: DemoSeed = DemoSeed(), progress: ((_ done: Int, _ total: Int) -> Void)? = nil
    ) throws(FeedStoreError) -> StoreCounts {
        var load = try DemoLoad(demo, progress: progress)
        try writeDatabase(touchesAds: true, change: { _ in PendingChange(kind: .reset, key: 0) }) { db in
            guard try SQLiteReader(db, log: log).isEmpty() else { throw FeedStoreError.notEmptyForSeeding }
            // Bulk load: drop the secondary indexes and the triggers of the content tables, insert,
            // then recreate them from their stored definitions, all in this one transaction.
            // Building an index from sorted data is several times faster than maintaining it
            // through 50,000 random inserts. Unique constraints stay in force throughout.
            let deferredSchema = try Self.dropBulkLoadSchema(db)
            var statement: Statement?
            try load.run { table in
                statement = try db.cachedStatement(
                    sql:
                        "INSERT INTO \(table.name) (\(table.columns.joined(separator: ", "))) VALUES (\(table.columns.map { _ in "?" }.joined(separator: ", ")))"
                )
            } row: { values in
                statement!.setUncheckedArguments(StatementArguments(values.map(\.databaseValue)))
                try statement!.execute()
            } finish: {
                for definition in deferredSchema {
                    try db.execute(sql: definition)
                }
            }
        }
        // The load went through the WAL; fold it into the database file and truncate the WAL now
        // rather than leave a large -wal file behind. Best effort: busy readers only delay it.
        _ = try? pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        return try counts()
    }

    /// Drops the secondary indexes and triggers of `users`, `videos` and `follows` and returns
    /// their `CREATE` statements (from `sqlite_master`), indexes first, to run after loading.
    static func dropBulkLoadSchema(_ db: Database) throws -> [String] {
        let objects = try Row.fetchAll(
            db,
            sql: """
                SELECT type, name, sql FROM sqlite_master
                WHERE type IN ('index', 'trigger') AND tbl_name IN ('users', 'videos', 'follows')
                  AND sql IS NOT NULL
                ORDER BY type = 'trigger', name
                """)
        var definitions: [String] = []
        for object in objects {
            let type: String = object["type"]
            let name: String = object["name"]
            let statement = type == "index" ? "DROP INDEX " : "DROP TRIGGER "
            try db.execute(sql: statement + name.quotedDatabaseIdentifier)
            definitions.append(object["sql"])
        }
        return definitions
    }
}
