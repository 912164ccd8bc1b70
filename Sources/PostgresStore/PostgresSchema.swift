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
/// - `snapshots` is unlogged and has no per-viewer time index (v6): SQLite keeps snapshots in
///   its snapshot log instead;
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
        ("v6: snapshots unlogged, pruned through their primary key", v6),
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

extension PostgresSchema {
    /// `snapshots` writes no WAL, and loses the index that only per-viewer pruning read.
    ///
    /// Why. Every answer that hands out a snapshot stores one row (about 540 B) before it leaves,
    /// and retention deletes it again seconds to minutes later; in the polling mix at 50 writes/s
    /// (5,600 snapshots a second) that churn cost about 1 KB of WAL per snapshot (twice that on
    /// disk while new WAL segments are zero-filled) and made `snapshots` the largest writer of
    /// the database. A snapshot is what a client can always fetch again (a 410, then the feed),
    /// so it need not survive what WAL protects against:
    /// - an unlogged table survives a clean stop of PostgreSQL (its pages are written at the
    ///   shutdown checkpoint), so every replica still reads every snapshot after a clean restart;
    /// - after a crash of PostgreSQL (or on a standby promoted in its place) `snapshots` is
    ///   empty: the replicas store the snapshots they hold in memory again when they reconnect
    ///   (`FeedService.storeSnapshotsAgain()`); a client whose snapshot none of them held gets
    ///   one 410 and fetches its feed again.
    ///
    /// `snapshot_bases` stays logged: replicas remember which bases the store holds and encode
    /// new snapshots against them, so bases lost in a crash would make those snapshots unreadable
    /// on every other replica until the viewer's next base (hours). Bases are written about once
    /// per viewer per many snapshots, a small share of the WAL. Content, the change log and
    /// everything else stay logged.
    ///
    /// Per-viewer pruning (by count, and by age on save) reads the primary key's range
    /// `viewer_id = $1` and ranks those few rows in SQL, so `snapshots_by_viewer_time` only cost
    /// an index entry per snapshot. `snapshots_by_time` stays for the global expiry, which would
    /// otherwise read the whole table once a minute.
    ///
    /// `SET UNLOGGED` rewrites the table once, under an exclusive lock, while the replica that
    /// migrates starts.
    static let v6 = """
        DROP INDEX snapshots_by_viewer_time;
        ALTER TABLE snapshots SET UNLOGGED;
        """
}
