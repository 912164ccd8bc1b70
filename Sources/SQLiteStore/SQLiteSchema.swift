import FeedStore
package import GRDB

/// The SQLite database schema, as an ordered list of GRDB migrations.
///
/// Rules for future changes: never edit a registered migration; append a new one. Every migration
/// runs in its own transaction and is recorded in GRDB's `grdb_migrations` table. The tables,
/// constraints and indexes are ``StoreSchema``'s, shared with the PostgreSQL store; this type adds
/// only what SQLite alone has, the follower-count triggers.
package enum Schema {
    /// The migrator that brings any database created by this module up to date.
    package static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: users, videos, ads, follows, snapshots, store_meta") { db in
            try db.execute(sql: v1)
        }
        migrator.registerMigration("v2: change_log") { db in
            try db.execute(sql: v2)
        }
        migrator.registerMigration("v3: snapshot bases") { db in
            try db.execute(sql: v3)
        }
        migrator.registerMigration("v4: likes") { db in
            try db.execute(sql: v4)
        }
        migrator.registerMigration("v5: snapshot log") { db in
            try db.execute(sql: v5)
            try SnapshotLog.convertTables(db)
            try db.execute(sql: "DROP TABLE snapshots; DROP TABLE snapshot_bases;")
        }
        return migrator
    }

    /// Version 1: ``StoreSchema/v1(_:countTriggers:)`` with SQLite's follower-count triggers.
    static let v1 = StoreSchema.v1(.sqlite, countTriggers: countTriggers)

    /// Version 2: the change log, ``StoreSchema/v2(_:)``.
    static let v2 = StoreSchema.v2(.sqlite)

    /// Version 3: the bases of snapshots stored as deltas, ``StoreSchema/snapshotBases(_:)``.
    static let v3 = StoreSchema.snapshotBases(.sqlite)

    /// Version 4: who liked which video, ``StoreSchema/likes(_:)``.
    static let v4 = StoreSchema.likes(.sqlite)

    /// Version 5: snapshots and bases move to the snapshot log (``SnapshotLog``); the rows of
    /// `snapshots` and `snapshot_bases` are copied into it, 64 to a row, and the tables dropped.
    /// SQLite only: PostgreSQL keeps them (its replicas look snapshots up by key).
    static let v5 = """
        CREATE TABLE snapshot_log (
            seq INTEGER PRIMARY KEY,
            created_at INTEGER NOT NULL,
            directory BLOB NOT NULL,
            body BLOB NOT NULL
        );
        """

    /// One trigger per direction: a SQLite trigger has no `TG_OP` to branch on.
    static let countTriggers = """
        CREATE TRIGGER follows_count_insert AFTER INSERT ON follows BEGIN
            UPDATE users SET follower_count = follower_count + 1 WHERE id = NEW.followee_id;
            UPDATE users SET following_count = following_count + 1 WHERE id = NEW.follower_id;
        END;
        CREATE TRIGGER follows_count_delete AFTER DELETE ON follows BEGIN
            UPDATE users SET follower_count = follower_count - 1 WHERE id = OLD.followee_id;
            UPDATE users SET following_count = following_count - 1 WHERE id = OLD.follower_id;
        END;
        """
}
