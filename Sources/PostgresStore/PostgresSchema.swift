import FeedStore

/// The PostgreSQL schema: the same tables, constraints and indexes as the SQLite store's
/// `Schema` (both run FeedStore's `StoreSchema`), as an ordered list of migrations recorded in
/// `schema_migrations`.
///
/// Rules: never edit a registered migration; append one. Replicas may start together: `migrate`
/// takes a transaction-level advisory lock first, so exactly one of them applies each migration
/// and the others find it recorded.
///
/// Differences from SQLite, each for the same behaviour:
/// - the column types and table options of `SQLDialect.postgres`: `BIGINT`, identity ids (never
///   reused after a deletion, as AUTOINCREMENT), `BYTEA` snapshot structures;
/// - the follower counts are kept by one PL/pgSQL trigger function;
/// - snapshots number the order they were saved in (v3), where SQLite has the rowid;
/// - the `store_meta` row is the change-version counter that every write updates in its own
///   transaction. Its row lock orders writers from every replica, so change-log sequence numbers
///   commit in sequence order and a reader of "entries after N" cannot see N+2 before N+1.
public enum PostgresSchema {
    /// The migrations, oldest first: (identifier, SQL).
    public static let migrations: [(String, String)] = [
        ("v1: users, videos, ads, follows, snapshots, store_meta", v1),
        ("v2: change_log", v2),
        ("v3: snapshot save order", v3),
        ("v4: snapshot bases", StoreSchema.snapshotBases(.postgres)),
        ("v5: likes", StoreSchema.likes(.postgres)),
    ]

    /// An arbitrary constant naming the migration lock among advisory locks.
    static let migrationLockKey = "7316029581"

    /// Applies the migrations `connection`'s database lacks, each in its own transaction.
    public static func migrate(_ connection: PostgresConnection) throws {
        try connection.execute("CREATE TABLE IF NOT EXISTS schema_migrations (identifier TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)")
        for (identifier, sql) in migrations {
            try connection.execute("BEGIN")
            do {
                try connection.execute("SELECT pg_advisory_xact_lock($1::bigint)", [migrationLockKey])
                let applied = try connection.execute("SELECT 1 FROM schema_migrations WHERE identifier = $1", [identifier])
                if applied.rows.isEmpty {
                    try connection.executeScript(sql)
                    try connection.execute(
                        "INSERT INTO schema_migrations (identifier, applied_at) VALUES ($1, (extract(epoch FROM now()) * 1000)::bigint)",
                        [identifier])
                }
                try connection.execute("COMMIT")
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Version 1: ``StoreSchema/v1(_:countTriggers:)`` with PostgreSQL's follower-count trigger.
    static let v1 = StoreSchema.v1(.postgres, countTriggers: countTrigger)

    /// Version 2: the change log, ``StoreSchema/v2(_:)``.
    static let v2 = StoreSchema.v2(.postgres)

    /// One trigger for both directions, through a PL/pgSQL function that branches on `TG_OP`.
    static let countTrigger = """
        CREATE FUNCTION follows_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                UPDATE users SET follower_count = follower_count + 1 WHERE id = NEW.followee_id;
                UPDATE users SET following_count = following_count + 1 WHERE id = NEW.follower_id;
            ELSE
                UPDATE users SET follower_count = follower_count - 1 WHERE id = OLD.followee_id;
                UPDATE users SET following_count = following_count - 1 WHERE id = OLD.follower_id;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER follows_count AFTER INSERT OR DELETE ON follows
            FOR EACH ROW EXECUTE FUNCTION follows_count();
        """
}

extension PostgresSchema {
    /// Snapshots remember the order they were first saved in (SQLite's rowid does it there), so
    /// count pruning keeps the newest of snapshots saved in the same millisecond. Existing rows
    /// are numbered in key order.
    static let v3 = """
        CREATE SEQUENCE snapshots_saved;
        ALTER TABLE snapshots ADD COLUMN saved BIGINT NOT NULL DEFAULT nextval('snapshots_saved');
        DROP INDEX snapshots_by_viewer_time;
        CREATE INDEX snapshots_by_viewer_time ON snapshots (viewer_id, created_at, saved);
        """
}
