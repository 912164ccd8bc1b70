import ArgumentParser
import FeedStore
import PostgresStore
import SQLiteStore

/// Where the data lives, for `serve` and `seed`: `--store postgres://…` (or `postgresql://…`)
/// selects the PostgreSQL store, shared by several replicas; anything else is the embedded
/// SQLite file of `--db`, the default.
struct StoreOptions: ParsableArguments {
    @Option(
        help: "The store: postgres://USER@HOST:PORT/DB (or postgresql://) for PostgreSQL, shared by several replicas; otherwise the SQLite file of --db",
        .env("DELTAFEED_STORE"))
    var store: Setting<String>

    @Option(help: "SQLite database file, created and migrated if missing", .env("DELTAFEED_DB", default: SQLiteFeedStore.defaultPath))
    var db: Setting<String>

    /// The PostgreSQL URL when one is selected, else nil.
    func postgresURL() throws -> String? {
        guard let url = try store.valueIfSet, !url.isEmpty else { return nil }
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw ValidationError("--store (DELTAFEED_STORE) takes a postgres:// or postgresql:// URL; a SQLite file is given with --db.")
        }
        return url
    }

    /// Opens the selected store (migrating it if needed).
    func open(options: StorageOptions = StorageOptions()) throws -> any FeedStorage {
        if let url = try postgresURL() {
            return try PostgresFeedStore(url: url, options: options)
        }
        return try SQLiteFeedStore(path: try db.value, options: options)
    }
}
