/// Every failure a store (``FeedStorage``) reports, whichever backend it runs on.
///
/// Field names in ``invalid(field:reason:)`` and ``conflict(field:reason:)`` are the snake_case
/// column names of the records (`"title"`, `"thumbnail_url"`, `"author_id"`…), which are also the
/// records' `Codable` keys, so an HTTP layer that encodes records directly can point at the same
/// key in its error body.
///
/// A method that throws has changed nothing: every write runs in one transaction that is rolled
/// back on failure.
public enum FeedStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of stored things a ``FeedStoreError/notFound(entity:id:)`` can name.
    public enum Entity: String, Sendable, Equatable, CaseIterable {
        /// A row of the `users` table.
        case user
        /// A row of the `videos` table.
        case video
        /// A row of the `ads` table.
        case ad
        /// A row of the `follows` table (its id is written `"follower->followee"`).
        case follow
        /// A row of the `snapshots` table.
        case snapshot
        /// A row of the `likes` table (its id is written `"user->video"`).
        case like
    }

    /// An input value was rejected before anything was written.
    ///
    /// - Parameters:
    ///   - field: the snake_case column name of the offending value, e.g. `"title"`.
    ///   - reason: a short human-readable explanation, e.g. `"must not be empty"`.
    case invalid(field: String, reason: String)

    /// The row the operation addresses does not exist.
    ///
    /// - Parameters:
    ///   - entity: what was looked up.
    ///   - id: its identifier, as text (`"42"`, `"3->7"` for a follow).
    case notFound(entity: Entity, id: String)

    /// The write would break a uniqueness rule: a handle already taken, a follow that already
    /// exists, seeding a store that is not empty.
    ///
    /// - Parameters:
    ///   - field: the snake_case column (or `"database"` for whole-store conflicts).
    ///   - reason: a short human-readable explanation.
    case conflict(field: String, reason: String)

    /// The storage itself failed (I/O error, disk full, a lock another writer held past the busy
    /// timeout, a corrupt file or row…). Not caused by the caller's input; an HTTP layer should
    /// answer 500 or 503.
    ///
    /// - Parameters:
    ///   - code: what kind of failure, the same on every backend.
    ///   - message: the backend's own account, with its own code (`SQLITE_BUSY`, a SQLSTATE).
    case storage(code: StorageFailure, message: String)

    /// The store cannot be reached (a PostgreSQL server that refuses connections, or a
    /// connection lost mid-write): nothing was written, or a commit's outcome is unknown only
    /// when the connection dropped during `COMMIT`. The store reconnects on its own; an HTTP
    /// layer answers 503 with `Retry-After`.
    ///
    /// - Parameter reason: what failed, without any value of the statement.
    case unavailable(reason: String)

    /// A one-line description, suitable for logs and error bodies.
    public var description: String {
        switch self {
        case let .invalid(field, reason):
            return "invalid \(field): \(reason)"
        case let .notFound(entity, id):
            return "\(entity.rawValue) \(id) not found"
        case let .conflict(field, reason):
            return "conflict on \(field): \(reason)"
        case let .storage(code, message):
            return "storage error (\(code.rawValue)): \(message)"
        case let .unavailable(reason):
            return "storage unavailable: \(reason)"
        }
    }
}

/// What kind of storage failure a ``FeedStoreError/storage(code:message:)`` is, named the same way
/// whichever backend reports it.
public enum StorageFailure: String, Sendable, Equatable, CaseIterable {
    /// Another writer held a lock past the busy timeout (SQLite `SQLITE_BUSY`/`SQLITE_LOCKED`,
    /// PostgreSQL's lock or statement timeout, a deadlock).
    case busy
    /// The disk or a quota is full.
    case full
    /// The medium failed to read or write.
    case io
    /// The file, a row or the schema is not what the store expects.
    case corrupt
    /// Anything else.
    case other
}
