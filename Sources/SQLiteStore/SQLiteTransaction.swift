public import FeedStore
import Foundation
package import GRDB

/// The SQLite side of the content writes (``FeedStorage`` writes them once over these): each
/// statement is built from the record's columns and cached by GRDB, inside the transaction of
/// ``SQLiteFeedStore/write(touchesAds:change:_:)``.
public struct SQLiteTransaction: StorageTransaction {
    package let db: Database

    public func insert<Record: StoredRecord>(_ record: Record) throws -> Int64 {
        try db.cachedStatement(sql: RecordSQL(Record.self, marker: "?").insert).execute(
            arguments: StatementArguments(record.insertedColumnValues.map(\.databaseValue)))
        return Record.assignsID ? db.lastInsertedRowID : 0
    }

    public func fetch<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws -> Record? {
        try Record.fetchFirst(db.cachedStatement(sql: RecordSQL(Record.self, marker: "?").selectByID), arguments: [id])
    }

    public func update<Record: StoredRecord & Identifiable<Int64>>(_ record: Record) throws {
        try db.cachedStatement(sql: RecordSQL(Record.self, marker: "?").updateByID)
            .execute(arguments: StatementArguments([record.id.databaseValue] + record.insertedColumnValues.map(\.databaseValue)))
    }

    public func delete<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws -> Bool {
        try db.cachedStatement(sql: RecordSQL(Record.self, marker: "?").deleteByID).execute(arguments: [id])
        return db.changesCount > 0
    }

    public func handleTaken(_ handle: String) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM users WHERE handle = ?1)"), arguments: [handle]) ?? false
    }

    public func insertFollow(_ follow: Follow) throws -> Bool {
        try db.cachedStatement(
            sql: "INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING"
        ).execute(arguments: [follow.followerID, follow.followeeID, follow.createdAt])
        return db.changesCount > 0
    }

    public func deleteFollow(follower: Int64, followee: Int64) throws -> Bool {
        try db.cachedStatement(sql: "DELETE FROM follows WHERE follower_id = ?1 AND followee_id = ?2")
            .execute(arguments: [follower, followee])
        return db.changesCount > 0
    }

    public func insertLike(video: Int64, user: Int64, createdAt: Int64) throws -> Bool {
        try db.cachedStatement(sql: "INSERT INTO likes (video_id, user_id, created_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")
            .execute(arguments: [video, user, createdAt])
        return db.changesCount > 0
    }

    public func deleteLike(video: Int64, user: Int64) throws -> Bool {
        try db.cachedStatement(sql: "DELETE FROM likes WHERE video_id = ?1 AND user_id = ?2").execute(arguments: [video, user])
        return db.changesCount > 0
    }
}
