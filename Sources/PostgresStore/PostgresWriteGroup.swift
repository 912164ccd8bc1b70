public import FeedStore

// Group commit on PostgreSQL: one transaction on one pooled connection holds many content
// writes, each in a savepoint (see `FeedStorage.writeGroup(_:)`). The group takes the store_meta
// row lock once, first (queued: it goes out with the group's first statement, and its answer,
// the version the group numbers from, comes back with that statement's); holding it, it numbers its writes itself, so a write costs its own
// statements, and the group ends with one statement that appends every change-log entry, moves
// the change version and sends the NOTIFY. Everything without an answer to wait for (BEGIN, the
// savepoints, that last statement) is queued on the connection and travels with the next
// statement that has one: a write's savepoint with its first statement, the append with the
// COMMIT. Staged writes next to each other share one savepoint and one round trip
// (`performTogether(_:)`): a group of staged writes costs two round trips, whatever its size.

/// An open group's transaction: its connection, and what the group appends when it commits.
final class PostgresGroupTransaction {
    let connection: PostgresConnection
    /// What the group's lock statement answered: the change version it found under the
    /// store_meta lock (its writes take the next ones). Nil until a statement after it ran.
    var locked: PostgresRows?
    /// The change-log entries of the writes that stayed, in order: the n-th is version
    /// `baseVersion + n`.
    var entries: [(change: PendingChange, committedAt: Int64, touchesAds: Bool)] = []
    /// Whether a write's savepoint is open, for the next write to release as it takes its own.
    var savepointOpen = false

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// The change version the group locked.
    ///
    /// - Throws: when the lock's answer has not come, or holds no version.
    func baseVersion() throws(FeedStoreError) -> Int64 {
        guard let base = locked?.firstValue.flatMap({ Int64($0) }) else {
            throw FeedStoreError.storage(code: .corrupt, message: "store_meta row is missing")
        }
        return base
    }

    /// Queues a new savepoint, releasing the open one: both go out with the next statement.
    func queueSavepoint() {
        if savepointOpen { connection.queue("RELEASE SAVEPOINT grouped_write", operation: "savepoint") }
        connection.queue("SAVEPOINT grouped_write", operation: "savepoint")
        savepointOpen = true
    }

}

extension PostgresFeedStore {
    /// The group this store has open on this thread, if any.
    var currentGroup: OpenWriteGroup<PostgresGroupTransaction>? { OpenWriteGroup.current(of: self) }

    public func writeGroup(_ body: () -> Void) throws(FeedStoreError) {
        if currentGroup != nil {  // already inside one: the writes join it
            body()
            return
        }
        let group: OpenWriteGroup<PostgresGroupTransaction>
        do {
            group = try pool.withConnection { connection in
                try connection.inTransaction("BEGIN") {
                    // The lock every write takes first, taken once for the whole group, ahead of
                    // the group's first statement and in its round trip.
                    let transaction = PostgresGroupTransaction(connection: connection)
                    connection.queue("SELECT change_version FROM store_meta WHERE id = 1 FOR UPDATE", operation: "lock") { transaction.locked = $0 }
                    let group = OpenWriteGroup.run(store: self, connection: transaction) { _ in body() }
                    if let broken = group.broken { throw broken }
                    group.lastVersion = try appendEntries(of: transaction)
                    return group
                }
            }
        } catch {
            throw Self.mapped(error)
        }
        if let last = group.lastVersion { cachedChangeVersion.raise(to: last) }
    }

    /// A write inside the open group: its own savepoint, rolled back alone when `body` throws.
    /// When a savepoint statement fails (the connection is gone), the whole group fails.
    ///
    /// The savepoint statements cost no round trip of their own: the previous write's savepoint
    /// is released and this one's taken in the queue of the group's connection, sent with this
    /// write's first statement (which does not run if they fail); a rollback to it waits there
    /// for the next write's, or the commit. The last savepoint is released by the commit. What
    /// the write itself queued (an update whose answer it does not read) is sent before it
    /// returns, so a failure there is still this write's alone.
    func writeInGroup<T>(
        _ group: OpenWriteGroup<PostgresGroupTransaction>, touchesAds: Bool, change: (T) -> PendingChange,
        _ body: (PostgresTransaction) throws -> T
    ) throws(FeedStoreError) -> T {
        if let broken = group.broken { throw Self.mapped(broken) }
        let transaction = group.connection
        let connection = transaction.connection
        transaction.queueSavepoint()
        do {
            let value = try body(PostgresTransaction(connection: connection))
            try connection.settle()  // what the write queued (an update) answers before it ends
            transaction.entries.append((change(value), now, touchesAds))
            return value
        } catch {
            if let failure = connection.takeQueuedFailure(), failure.breaksGroup {
                group.broken = failure  // no lock, or no savepoint to go back to: the transaction is lost
            } else {
                connection.discardQueued(keepingThoseThatMayWait: true)  // undone anyway
                connection.queue("ROLLBACK TO SAVEPOINT grouped_write", operation: "savepoint")
            }
            throw Self.mapped(error)
        }
    }

    /// Appends the group's change-log entries (numbered after the version the group locked),
    /// moves store_meta's change version to the last and its ad epoch by the writes that touched
    /// ads, and notifies the other replicas: one statement, whatever the group's size, queued to
    /// go out with the `COMMIT` (which does not run if it fails). Returns the last version, nil
    /// when no write stayed.
    private func appendEntries(of transaction: PostgresGroupTransaction) throws(FeedStoreError) -> Int64? {
        let entries = transaction.entries
        guard !entries.isEmpty else { return nil }
        let base = try transaction.baseVersion()
        let last = base + Int64(entries.count)
        transaction.connection.queue(
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
                arrayLiteral(entries.indices.map { base + Int64($0) + 1 }),
                arrayLiteral(entries.map { $0.change.kind.rawValue }),
                arrayLiteral(entries.map { $0.change.key }),
                arrayLiteral(entries.map { $0.change.otherKey }),
                arrayLiteral(entries.map { $0.committedAt }),
                // $6 is compared as a bigint and $9 sent as text: one parameter cannot be both.
                String(last), String(entries.count(where: { $0.touchesAds })), channel, String(last),
            ], operation: "execute")
        return last
    }
}

extension PostgresFeedStore {
    /// Inside a group, every write's step goes out in one pipeline, after a savepoint of their
    /// own, and the writes are decided from the answers in order: one round trip for all of
    /// them, however many. A refused step changed nothing, so a refusal needs no rollback
    /// (see ``FeedStore/WriteStep``), and a later step sees what the earlier ones did. When a
    /// statement fails outright, those after it did not run and the transaction is aborted:
    /// the steps are rolled back to the savepoint and the writes carried out one by one, each
    /// in a savepoint of its own, so that failure is its write's alone. When the savepoint or
    /// the connection fails, the group is lost and every write gets that error. Outside a
    /// group, each write is carried out alone.
    public func performTogether(_ writes: [GroupedWrite]) {
        guard let group = currentGroup else {
            for write in writes { write.performAlone(on: self) }
            return
        }
        guard !writes.isEmpty else { return }
        if let broken = group.broken {
            for write in writes { write.fail(Self.mapped(broken)) }
            return
        }
        let transaction = group.connection
        let connection = transaction.connection
        transaction.queueSavepoint()
        let outcomes: [Result<PostgresRows, PostgresError>?]
        do {
            outcomes = try connection.executeEach(writes.map { $0.step.statement() })
        } catch {
            group.broken = error  // the savepoint or the connection: nothing to go back to
            for write in writes { write.fail(Self.mapped(error)) }
            return
        }
        var answers: [StepAnswer] = []
        answers.reserveCapacity(writes.count)
        for (write, outcome) in zip(writes, outcomes) {
            guard case .success(let rows)? = outcome, let answer = try? write.step.answer(from: rows, on: connection) else {
                connection.queue("ROLLBACK TO SAVEPOINT grouped_write", operation: "savepoint")
                for write in writes { write.performAlone(on: self) }
                return
            }
            answers.append(answer)
        }
        for (write, answer) in zip(writes, answers) {
            if let change = write.decide(answer) { transaction.entries.append((change, now, false)) }
        }
    }
}

extension PostgresError {
    /// Whether this failure of a queued statement leaves a group's transaction unusable: its
    /// BEGIN, its lock or a savepoint failed, so no write's rollback can set it right.
    var breaksGroup: Bool { operation == "begin" || operation == "lock" || operation == "savepoint" }
}
