public import FeedStore

// Group commit on PostgreSQL: one transaction on one pooled connection holds many content
// writes, each in a savepoint, with the store_meta lock taken once and one NOTIFY at the end
// (see `FeedStorage.writeGroup(_:)`).

extension PostgresFeedStore {
    /// The group this store has open on this thread, if any.
    var currentGroup: OpenWriteGroup<PostgresConnection>? { OpenWriteGroup.current(of: self) }

    public func writeGroup(_ body: () -> Void) throws(FeedStoreError) {
        if currentGroup != nil {  // already inside one: the writes join it
            body()
            return
        }
        let group: OpenWriteGroup<PostgresConnection>
        do {
            group = try pool.withConnection { connection in
                try connection.inTransaction("BEGIN") {
                    // The lock every write takes first, taken once for the whole group.
                    try connection.execute("SELECT change_version FROM store_meta WHERE id = 1 FOR UPDATE")
                    let group = OpenWriteGroup.run(store: self, connection: connection) { _ in body() }
                    if let broken = group.broken { throw broken }
                    if let last = group.lastVersion { try notify(connection, sequence: last) }
                    return group
                }
            }
        } catch {
            throw Self.mapped(error)
        }
        if let last = group.lastVersion { cachedChangeVersion.raise(to: last) }
    }

    /// A write inside the open group: its own savepoint, rolled back alone when `body` throws.
    /// When even the rollback fails (the connection is gone), the whole group fails.
    func writeInGroup<T>(
        _ group: OpenWriteGroup<PostgresConnection>, touchesAds: Bool, change: (T) -> PendingChange, _ body: (PostgresTransaction) throws -> T
    ) throws(FeedStoreError) -> T {
        if let broken = group.broken { throw Self.mapped(broken) }
        let connection = group.connection
        do {
            try connection.execute("SAVEPOINT grouped_write")
            let (value, version) = try appendingChange(connection, touchesAds: touchesAds, committedAt: now, change: change, body)
            try connection.execute("RELEASE SAVEPOINT grouped_write")
            group.lastVersion = version
            return value
        } catch {
            do {
                try connection.execute("ROLLBACK TO SAVEPOINT grouped_write")
                try connection.execute("RELEASE SAVEPOINT grouped_write")
            } catch let rollbackFailure {
                group.broken = rollbackFailure
            }
            throw Self.mapped(error)
        }
    }
}
