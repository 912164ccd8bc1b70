public import FeedStore

// Group commit on PostgreSQL: one transaction on one pooled connection holds many content
// writes (see `FeedStorage.writeGroup(_:)`). The group takes the store_meta row lock once,
// first (queued: it goes out with the group's first statement), and the lock statement sets a
// transaction-local counter, `deltafeed.seq`, to the change version it found. Each write that
// stays appends its own change-log entry numbered from that counter, on the server: a staged
// write's step does it in its own statement, only when the step changed the store; a write of
// another kind queues its entry when it succeeded. A savepoint rolled back undoes the counter's
// moves with the rest, so the log stays gap-free and in order. The group ends with one
// statement that moves the change version to the counter and sends the NOTIFY, and the COMMIT.
//
// Nothing waits for an answer it does not need: BEGIN, the lock, savepoints, the entries and
// that last statement are queued on the connection and travel with the next statement that has
// one, and staged writes (`performTogether(_:)`) are held until the connection is next needed,
// so a group of staged writes is one round trip, whatever its size: BEGIN, the lock, a
// savepoint, every step with its entry, the version and NOTIFY, and COMMIT in one pipeline.
// The lock is held for the server's own work and the commit's WAL flush only.

/// An open group's transaction: its connection, and what the group sends when it commits.
final class PostgresGroupTransaction {
    let connection: PostgresConnection
    /// How many of the group's writes that stayed touched ads: the ad epoch moves by as many.
    var adWrites = 0
    /// Whether a write's savepoint is open, for the next write to release as it takes its own.
    var savepointOpen = false
    /// Staged writes whose steps are not sent yet: they go with the commit, or before anything
    /// else uses the connection (``PostgresFeedStore/connection(settling:)``).
    var held: [GroupedWrite] = []

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// The held staged writes, no longer held.
    func takeHeld() -> [GroupedWrite] {
        defer { held = [] }
        return held
    }

    /// Queues a new savepoint, releasing the open one: both go out with the next statement.
    func queueSavepoint() {
        if savepointOpen { connection.queue("RELEASE SAVEPOINT grouped_write", operation: "savepoint") }
        connection.queue("SAVEPOINT grouped_write", operation: "savepoint")
        savepointOpen = true
    }
}

/// The statements that lock, number and close a group.
enum GroupStatements {
    /// Takes the store_meta row lock and sets the group's counter to the version it found
    /// (the CTE is materialised: the counter is set from the row the lock returned, after any
    /// wait for another replica's group).
    static let lock = """
        WITH locked AS MATERIALIZED (SELECT change_version FROM store_meta WHERE id = 1 FOR UPDATE)
        SELECT set_config('deltafeed.seq', change_version::text, true) FROM locked
        """

    /// The next sequence number of the open group: its counter, moved by one.
    static let nextSequence = "set_config('deltafeed.seq', (current_setting('deltafeed.seq')::bigint + 1)::text, true)::bigint"

    /// Appends an entry numbered from the counter: kind $1, key $2, other key $3, at $4.
    static let append = """
        INSERT INTO change_log (seq, kind, key, other_key, committed_at) VALUES (\(nextSequence), $1, $2, $3, $4)
        """

    /// Moves the change version to the counter and the ad epoch by $2, and notifies channel $1
    /// with the version, when a write stayed; answers the version then, no row otherwise.
    static let close = """
        WITH moved AS (
            UPDATE store_meta SET change_version = current_setting('deltafeed.seq')::bigint, ad_epoch = ad_epoch + $2::bigint
            WHERE id = 1 AND change_version < current_setting('deltafeed.seq')::bigint RETURNING change_version
        )
        SELECT change_version, pg_notify($1, change_version::text) FROM moved
        """
}

extension PostgresFeedStore {
    /// The group this store has open on this thread, if any.
    var currentGroup: OpenWriteGroup<PostgresGroupTransaction>? { OpenWriteGroup.current(of: self) }

    public func writeGroup(_ body: () -> Void) throws(FeedStoreError) {
        if currentGroup != nil {  // already inside one: the writes join it
            body()
            return
        }
        let last: Int64?
        do {
            last = try pool.withConnection { connection in
                try connection.inTransaction("BEGIN", commitsItself: true) {
                    // The lock every write takes first, taken once for the whole group, ahead of
                    // the group's first statement and in its round trip.
                    connection.queue(GroupStatements.lock, operation: "lock")
                    let transaction = PostgresGroupTransaction(connection: connection)
                    let group = try OpenWriteGroup.run(store: self, connection: transaction) { group in
                        body()
                        try commit(group)
                    }
                    return group.lastVersion
                }
            }
        } catch {
            throw Self.mapped(error)
        }
        if let last { cachedChangeVersion.raise(to: last) }
    }

    /// The group's connection, once the staged writes it holds are carried out: what uses it
    /// next sees what they did.
    func connection(settling group: OpenWriteGroup<PostgresGroupTransaction>) -> PostgresConnection {
        let held = group.connection.takeHeld()
        if !held.isEmpty { carryOut(held, in: group, closing: false) }
        return group.connection.connection
    }

    /// A write inside the open group: its own savepoint, rolled back alone when `body` throws.
    /// When a savepoint statement fails (the connection is gone), the whole group fails.
    ///
    /// The savepoint statements cost no round trip of their own: the previous write's savepoint
    /// is released and this one's taken in the queue of the group's connection, sent with this
    /// write's first statement (which does not run if they fail); a rollback to it waits there
    /// for the next write's, or the commit. The last savepoint is released by the commit. What
    /// the write itself queued (an update whose answer it does not read) is sent before it
    /// returns, so a failure there is still this write's alone; its change-log entry waits for
    /// the next statement (a failure there breaks the group: the write was answered).
    func writeInGroup<T>(
        _ group: OpenWriteGroup<PostgresGroupTransaction>, touchesAds: Bool, change: (T) -> PendingChange,
        _ body: (PostgresTransaction) throws -> T
    ) throws(FeedStoreError) -> T {
        let connection = connection(settling: group)
        if let broken = group.broken { throw Self.mapped(broken) }
        let transaction = group.connection
        transaction.queueSavepoint()
        do {
            let value = try body(PostgresTransaction(connection: connection))
            try connection.settle()  // what the write queued (an update) answers before it ends
            let entry = change(value)
            connection.queue(
                GroupStatements.append, [entry.kind.rawValue, String(entry.key), entry.otherKey.map { String($0) }, String(now)], operation: "log")
            if touchesAds { transaction.adWrites += 1 }
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

    /// Sends what the group holds (its staged writes' steps, after a savepoint), the statement
    /// that moves the change version and notifies, and the COMMIT, in one round trip, then
    /// decides the held writes from their steps' answers. When a step failed outright, nothing
    /// after it ran: the steps are rolled back to their savepoint, the writes carried out one by
    /// one, and the group closed and committed after them.
    ///
    /// - Throws: when the group is broken, or its last statement or COMMIT failed (nothing of
    ///   the group is stored then).
    private func commit(_ group: OpenWriteGroup<PostgresGroupTransaction>) throws {
        if let broken = group.broken { throw broken }
        let transaction = group.connection
        let held = transaction.takeHeld()
        if !held.isEmpty, carryOut(held, in: group, closing: true) { return }
        if let broken = group.broken { throw broken }
        let answers = try transaction.connection.execute([closeStatement(transaction), ("COMMIT", [])])
        group.lastVersion = answers[0].firstValue.flatMap { Int64($0) }
    }

    /// The group's last statement (``GroupStatements/close``).
    private func closeStatement(_ transaction: PostgresGroupTransaction) -> (sql: String, parameters: [String?]) {
        (GroupStatements.close, [channel, String(transaction.adWrites)])
    }

    /// Sends the steps of `writes` after a savepoint of their own, in one pipeline (`closing`:
    /// with the group's last statement and COMMIT), and decides each write from its answer.
    /// Returns whether the group committed. A step that failed outright: see ``commit(_:)``.
    /// When the savepoint or the connection fails, the group is broken and every write gets
    /// its error.
    @discardableResult
    private func carryOut(_ writes: [GroupedWrite], in group: OpenWriteGroup<PostgresGroupTransaction>, closing: Bool) -> Bool {
        let transaction = group.connection
        let connection = transaction.connection
        transaction.queueSavepoint()
        let committedAt = String(now)
        var statements = writes.map { $0.step.loggedStatement(committedAt: committedAt) }
        if closing { statements += [closeStatement(transaction), ("COMMIT", [])] }
        let outcomes: [Result<PostgresRows, PostgresError>?]
        do {
            outcomes = try connection.executeEach(statements)
        } catch {
            group.broken = error  // the lock, the savepoint or the connection: nothing to go back to
            for write in writes { write.fail(Self.mapped(error)) }
            return false
        }
        guard outcomes.prefix(writes.count).allSatisfy({ if case .success? = $0 { true } else { false } }) else {
            connection.queue("ROLLBACK TO SAVEPOINT grouped_write", operation: "savepoint")
            for write in writes { write.performAlone(on: self) }
            return false
        }
        if closing {
            switch (outcomes[writes.count], outcomes[writes.count + 1]) {
            case (.success(let closed)?, .success?):
                group.lastVersion = closed.firstValue.flatMap { Int64($0) }
            case (.failure(let error)?, _), (_, .failure(let error)?):
                group.broken = error  // nothing of the group is stored
                for write in writes { write.fail(Self.mapped(error)) }
                return false
            default:
                group.broken = PostgresError(sqlState: nil, constraint: nil, operation: "execute")
                return false
            }
        }
        for (write, outcome) in zip(writes, outcomes) {
            guard case .success(let rows)? = outcome else { continue }
            do throws(FeedStoreError) {
                // The step logged its entry exactly when it changed the store, which is when the
                // write decides to stay (see ``FeedStore/WriteStep``).
                _ = write.decide(try write.step.answer(from: rows, on: connection))
            } catch {
                write.fail(error)  // stored and logged, but its answer does not decode
            }
        }
        return closing
    }
}

extension PostgresFeedStore {
    /// Inside a group, the writes' steps are held and sent together in one pipeline, after a
    /// savepoint of their own, with whatever needs the connection next (the commit, or the next
    /// write of another kind, which sees what they did), without waiting for any answer; the
    /// writes are decided from the answers in order. A refused step changed nothing and logged
    /// nothing, so a refusal needs no rollback (see ``FeedStore/WriteStep``), and a later step
    /// sees what the earlier ones did. When a statement fails outright, those after it did not
    /// run and the transaction is aborted: the steps are rolled back to the savepoint and the
    /// writes carried out one by one, each in a savepoint of its own, so that failure is its
    /// write's alone. When the savepoint or the connection fails, the group is lost and every
    /// write gets that error. Outside a group, each write is carried out alone.
    public func performTogether(_ writes: [GroupedWrite]) {
        guard let group = currentGroup else {
            for write in writes { write.performAlone(on: self) }
            return
        }
        guard !writes.isEmpty else { return }
        _ = connection(settling: group)
        if let broken = group.broken {
            for write in writes { write.fail(Self.mapped(broken)) }
            return
        }
        group.connection.held = writes
    }
}

extension PostgresError {
    /// Whether this failure of a queued statement leaves a group's transaction unusable: its
    /// BEGIN, its lock or a savepoint failed, so no write's rollback can set it right, or the
    /// change-log entry of a write already answered.
    var breaksGroup: Bool { operation == "begin" || operation == "lock" || operation == "savepoint" || operation == "log" }
}
