public import FeedStore

// Group commit on PostgreSQL: one transaction on one pooled connection holds many content
// writes, each in a savepoint (see `FeedStorage.writeGroup(_:)`). The group takes the store_meta
// row lock once, first; holding it, it numbers its writes itself, so a write costs its own
// statements and one round trip for its savepoint, and the group ends with one statement that
// appends every change-log entry, moves the change version and sends the NOTIFY.

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
                    let locked = try connection.execute("SELECT change_version FROM store_meta WHERE id = 1 FOR UPDATE")
                    guard let base = locked.firstValue.flatMap({ Int64($0) }) else {
                        throw FeedStoreError.storage(code: .corrupt, message: "store_meta row is missing")
                    }
                    let group = OpenWriteGroup.run(store: self, connection: connection) { group in
                        group.baseVersion = base
                        body()
                    }
                    if let broken = group.broken { throw broken }
                    try appendDeferredChanges(of: group)
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
    ///
    /// The previous write's savepoint is released and this one's taken in one round trip; the
    /// last one is released by the commit.
    func writeInGroup<T>(
        _ group: OpenWriteGroup<PostgresConnection>, touchesAds: Bool, change: (T) -> PendingChange, _ body: (PostgresTransaction) throws -> T
    ) throws(FeedStoreError) -> T {
        if let broken = group.broken { throw Self.mapped(broken) }
        let connection = group.connection
        do {
            try connection.executeScript(
                group.savepointOpen ? "RELEASE SAVEPOINT grouped_write; SAVEPOINT grouped_write" : "SAVEPOINT grouped_write")
            group.savepointOpen = true
        } catch {
            group.broken = error
            throw Self.mapped(error)
        }
        do {
            let value = try body(PostgresTransaction(connection: connection))
            let version = (group.lastVersion ?? group.baseVersion) + 1
            group.deferredChanges.append(DeferredChange(version: version, change: change(value), committedAt: now, touchesAds: touchesAds))
            group.lastVersion = version
            return value
        } catch {
            do {
                try connection.execute("ROLLBACK TO SAVEPOINT grouped_write")
            } catch let rollbackFailure {
                group.broken = rollbackFailure
            }
            throw Self.mapped(error)
        }
    }

    /// Appends the group's change-log entries (their numbers follow the version the group
    /// locked), moves store_meta's change version to the last and its ad epoch by the writes that
    /// touched ads, and notifies the other replicas: one statement, whatever the group's size.
    private func appendDeferredChanges(of group: OpenWriteGroup<PostgresConnection>) throws {
        let changes = group.deferredChanges
        guard let last = changes.last?.version else { return }
        func array(_ values: [String?]) -> String { "{" + values.map { $0 ?? "NULL" }.joined(separator: ",") + "}" }
        try group.connection.execute(
            """
            WITH appended AS (
                INSERT INTO change_log (seq, kind, key, other_key, committed_at)
                SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[])
            ), moved AS (
                UPDATE store_meta SET change_version = $6, ad_epoch = ad_epoch + $7 WHERE id = 1
            )
            SELECT pg_notify($8, $9)
            """,
            [
                array(changes.map { String($0.version) }),
                array(changes.map { $0.change.kind.rawValue }),
                array(changes.map { String($0.change.key) }),
                array(changes.map { $0.change.otherKey.map { String($0) } }),
                array(changes.map { String($0.committedAt) }),
                String(last), String(changes.count(where: { $0.touchesAds })), channel, String(last),
            ])
    }
}
