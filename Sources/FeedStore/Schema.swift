import GRDB

/// The database schema, as an ordered list of GRDB migrations.
///
/// Rules for future changes: never edit a registered migration; append a new one. Every migration
/// runs in its own transaction and is recorded in GRDB's `grdb_migrations` table.
enum Schema {
    /// The migrator that brings any database created by this module up to date.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: users, videos, ads, follows, snapshots, store_meta") { db in
            try db.execute(sql: v1)
        }
        migrator.registerMigration("v2: change_log") { db in
            try db.execute(sql: v2)
        }
        return migrator
    }

    /// Version 1.
    ///
    /// Times are INTEGER Unix milliseconds. Content tables use AUTOINCREMENT so an id is never
    /// reused after a deletion: ids are the diff identities the clients see, and a recycled id
    /// would turn "delete A, insert B" into a bogus "update A".
    ///
    /// Index ↔ query map:
    /// - `videos_by_author_time (author_id, created_at, id)`: followed feed. One backward range
    ///   scan per followed author, covering (no table access) — see `FeedQueries.followedPage…`.
    /// - `videos_by_popularity (like_count, id)`: popular feed, read backward, stops at the limit.
    /// - `follows` primary key `(follower_id, followee_id)`: followees of a viewer, 2-hop
    ///   suggestions. `follows_by_followee (followee_id, follower_id)`: followers of a user and the
    ///   foreign-key check when a user is deleted.
    /// - `users_by_popularity (follower_count DESC, id)`: suggestion fill-in by follower count.
    /// - `ads_active (active, id)`: active ads by id.
    /// - `snapshots_by_viewer_time (viewer_id, created_at)`: per-viewer pruning by count and age.
    ///   `snapshots_by_time (created_at)`: global expiry.
    static let v1 = """
        CREATE TABLE store_meta (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            change_version INTEGER NOT NULL,
            ad_epoch INTEGER NOT NULL
        );
        INSERT INTO store_meta (id, change_version, ad_epoch) VALUES (1, 0, 0);

        CREATE TABLE users (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            handle TEXT NOT NULL UNIQUE,
            display_name TEXT NOT NULL,
            avatar_url TEXT,
            follower_count INTEGER NOT NULL DEFAULT 0 CHECK (follower_count >= 0),
            following_count INTEGER NOT NULL DEFAULT 0 CHECK (following_count >= 0),
            created_at INTEGER NOT NULL
        );
        CREATE INDEX users_by_popularity ON users (follower_count DESC, id);

        CREATE TABLE videos (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            author_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            title TEXT NOT NULL,
            thumbnail_url TEXT NOT NULL,
            duration_seconds INTEGER NOT NULL CHECK (duration_seconds BETWEEN 1 AND 36000),
            like_count INTEGER NOT NULL DEFAULT 0 CHECK (like_count >= 0),
            view_count INTEGER NOT NULL DEFAULT 0 CHECK (view_count >= 0),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX videos_by_author_time ON videos (author_id, created_at, id);
        CREATE INDEX videos_by_popularity ON videos (like_count, id);

        CREATE TABLE ads (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            advertiser TEXT NOT NULL,
            title TEXT NOT NULL,
            image_url TEXT NOT NULL,
            target_url TEXT NOT NULL,
            weight INTEGER NOT NULL CHECK (weight BETWEEN 1 AND 1000),
            active INTEGER NOT NULL CHECK (active IN (0, 1)),
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX ads_active ON ads (active, id);

        CREATE TABLE follows (
            follower_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            followee_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (follower_id, followee_id),
            CHECK (follower_id <> followee_id)
        ) WITHOUT ROWID;
        CREATE INDEX follows_by_followee ON follows (followee_id, follower_id);

        -- Follower/following counts follow the graph, whoever writes it (including cascades).
        CREATE TRIGGER follows_count_insert AFTER INSERT ON follows BEGIN
            UPDATE users SET follower_count = follower_count + 1 WHERE id = NEW.followee_id;
            UPDATE users SET following_count = following_count + 1 WHERE id = NEW.follower_id;
        END;
        CREATE TRIGGER follows_count_delete AFTER DELETE ON follows BEGIN
            UPDATE users SET follower_count = follower_count - 1 WHERE id = OLD.followee_id;
            UPDATE users SET following_count = following_count - 1 WHERE id = OLD.follower_id;
        END;

        -- A rowid table (structures can be several KB, too big for WITHOUT ROWID); the rowid
        -- breaks created_at ties in insertion order.
        CREATE TABLE snapshots (
            viewer_id INTEGER NOT NULL,
            id TEXT NOT NULL CHECK (length(id) BETWEEN 1 AND 128),
            created_at INTEGER NOT NULL,
            structure BLOB NOT NULL,
            PRIMARY KEY (viewer_id, id)
        );
        CREATE INDEX snapshots_by_viewer_time ON snapshots (viewer_id, created_at);
        CREATE INDEX snapshots_by_time ON snapshots (created_at);
        """

    /// Version 2: the change log. One row per committed content write, in the write's own
    /// transaction; `seq` equals `store_meta.change_version` after that write. See `ChangeEntry`.
    static let v2 = """
        CREATE TABLE change_log (
            seq INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            key INTEGER NOT NULL,
            other_key INTEGER,
            committed_at INTEGER NOT NULL
        );
        """
}
