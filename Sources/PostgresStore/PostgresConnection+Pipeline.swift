import CLibpq
import Synchronization

// Queued statements and the pipeline that sends them. A statement whose answer is only "done"
// (BEGIN, SAVEPOINT, RELEASE, the group's change-log append before its COMMIT) need not cost a
// round trip of its own: it waits in the connection's queue and goes out with the next
// statement that needs an answer, all of them in one write and one read (libpq's pipeline
// mode, one sync point at the end).
//
// The server runs them in order and, once one fails, skips the rest up to the sync point
// (PGRES_PIPELINE_ABORTED), so a statement never runs after a queued one failed: that is what
// lets a write's savepoint travel with the write's first statement.

/// A statement waiting in a connection's queue, and what to call it when it fails.
struct QueuedStatement {
    var sql: String
    var parameters: [String?]
    /// The ``PostgresError/operation`` of its failure ("begin", "savepoint"…).
    var operation: String
    /// Whether it may wait for whatever statement comes next, even past the end of the write
    /// that queued it (BEGIN, savepoints); false for a write's own statements, whose failure
    /// is that write's (see ``PostgresConnection/settle()``).
    var mayWait: Bool
    /// Called with its rows when it succeeds (a group's lock, whose answer is read later).
    var answered: ((PostgresRows) -> Void)? = nil
}

extension PostgresConnection {
    /// Queues `sql` to run ahead of the next ``execute(_:_:)``, in the same round trip.
    ///
    /// Nothing is sent now. When a queued statement fails, that `execute` throws its error,
    /// whose ``PostgresError/operation`` is `operation`; the statements after it, `execute`'s
    /// own included, do not run; and ``takeQueuedFailure()`` returns the error until taken.
    /// ``discardQueued(keepingThoseThatMayWait:)`` drops what waits (before a rollback).
    ///
    /// - Parameters:
    ///   - mayWait: false for a statement whose failure must be known before the write that
    ///     queued it ends: ``settle()`` sends it then.
    ///   - answered: called with the statement's rows once it ran, on this thread, before the
    ///     statement it went out with returns.
    package func queue(
        _ sql: String, _ parameters: [String?] = [], operation: String, mayWait: Bool = true, answered: ((PostgresRows) -> Void)? = nil
    ) {
        queued.append(QueuedStatement(sql: sql, parameters: parameters, operation: operation, mayWait: mayWait, answered: answered))
    }

    /// Drops the queued statements unsent: all of them, or those that may not wait.
    package func discardQueued(keepingThoseThatMayWait: Bool = false) {
        if keepingThoseThatMayWait {
            queued.removeAll { !$0.mayWait }
        } else {
            queued.removeAll()
        }
    }

    /// The failure of a queued statement since the last call, and forgets it.
    package func takeQueuedFailure() -> PostgresError? {
        defer { queuedFailure = nil }
        return queuedFailure
    }

    /// Runs `statements` after the queued ones, all in one round trip, and returns each one's
    /// rows, in order.
    ///
    /// - Throws: ``PostgresError``: the first failure (see ``queue(_:_:operation:mayWait:answered:)``);
    ///   the statements after it do not run.
    package func execute(_ statements: [(sql: String, parameters: [String?])]) throws -> [PostgresRows] {
        try executePipelined(statements.map { QueuedStatement(sql: $0.sql, parameters: $0.parameters, operation: "execute", mayWait: false) })
    }

    /// Sends the queued statements now unless every one of them may wait: what a write queued
    /// is answered before the write ends, so its failure is the write's.
    ///
    /// - Throws: ``PostgresError``: the first failure.
    package func settle() throws {
        if queued.contains(where: { !$0.mayWait }) { _ = try executePipelined([]) }
    }

    /// Runs `statements` after the queued ones, all in one round trip, and returns what became
    /// of each: its rows, its failure, or nil when it did not run (a statement before it
    /// failed). A caller that reads several answers at once decides what each failure means.
    ///
    /// - Throws: ``PostgresError``: the failure of a queued statement (then none of
    ///   `statements` ran), or of the connection.
    package func executeEach(_ statements: [(sql: String, parameters: [String?])]) throws -> [Result<PostgresRows, PostgresError>?] {
        try pipelineOutcomes(statements.map { QueuedStatement(sql: $0.sql, parameters: $0.parameters, operation: "execute", mayWait: false) })
    }

    /// Sends the queued statements and `wanted` in pipeline mode with one sync point, and reads
    /// every answer.
    ///
    /// - Returns: the rows of each of `wanted`.
    /// - Throws: the first failure.
    func executePipelined(_ wanted: [QueuedStatement]) throws -> [PostgresRows] {
        try pipelineOutcomes(wanted).map { outcome in
            // A statement that did not run follows one that failed, which comes first.
            guard let outcome else { throw PostgresError(sqlState: nil, constraint: nil, operation: "execute") }
            return try outcome.get()
        }
    }

    /// Sends the queued statements and `wanted` in pipeline mode with one sync point, and reads
    /// every answer.
    ///
    /// - Returns: what became of each of `wanted` (nil: it did not run).
    /// - Throws: a queued statement's failure, or the connection's. A connection that fails
    ///   mid-way is closed (``isOpen`` is false then), since its answers can no longer be
    ///   matched to the statements.
    private func pipelineOutcomes(_ wanted: [QueuedStatement]) throws -> [Result<PostgresRows, PostgresError>?] {
        let batch = queued + wanted
        let firstWanted = queued.count
        guard !batch.isEmpty else { return [] }
        guard let handle else {
            queued.removeAll()
            throw PostgresError(sqlState: nil, constraint: nil, operation: batch[0].operation)
        }
        queued.removeAll()
        // A statement new to the connection is prepared inside the pipeline, just before it
        // runs (PQsendPrepare): a PREPARE sent ahead of the pipeline would run before the
        // queued statements, in a transaction a failed write left aborted until its queued
        // ROLLBACK TO SAVEPOINT. Its name is kept once the server has answered the prepare.
        var newNames: [String: String] = [:]
        var plans: [(name: String?, preparesFirst: Bool)] = []
        plans.reserveCapacity(batch.count)
        for statement in batch {
            if let name = prepared[statement.sql] ?? newNames[statement.sql] {
                plans.append((name, false))
            } else if prepared.count + newNames.count < Self.preparedLimit {
                let name = "deltafeed_\(prepared.count + newNames.count)"
                newNames[statement.sql] = name
                plans.append((name, true))
            } else {
                plans.append((nil, false))
            }
        }
        roundTrips.count()
        guard PQenterPipelineMode(handle) == 1 else { throw abandoned(operation: batch[0].operation) }
        for (statement, plan) in zip(batch, plans) {
            if plan.preparesFirst, let name = plan.name {
                guard PQsendPrepare(handle, name, statement.sql, Int32(statement.parameters.count), nil) == 1 else {
                    throw abandoned(operation: batch[0].operation)
                }
            }
            let sent = withCStrings(statement.parameters) { values in
                if let name = plan.name {
                    PQsendQueryPrepared(handle, name, Int32(statement.parameters.count), values, nil, nil, 0)
                } else {
                    PQsendQueryParams(handle, statement.sql, Int32(statement.parameters.count), nil, values, nil, nil, 0)
                }
            }
            guard sent == 1 else { throw abandoned(operation: batch[0].operation) }
        }
        guard PQpipelineSync(handle) == 1 else { throw abandoned(operation: batch[0].operation) }

        var failure: PostgresError?
        var failedQueued: PostgresError?
        var outcomes: [Result<PostgresRows, PostgresError>?] = []
        outcomes.reserveCapacity(wanted.count)
        for (index, (statement, plan)) in zip(batch, plans).enumerated() {
            // A prepare's answer first (its failure is the statement's), then the statement's.
            var outcome: Result<PostgresRows, PostgresError>?
            for step in plan.preparesFirst ? [true, false] : [false] {
                guard let result = PQgetResult(handle) else { throw abandoned(operation: statement.operation, failure: failure) }
                let status = PQresultStatus(result)
                if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                    if step, let name = plan.name {
                        prepared[statement.sql] = name
                    } else if !step, index >= firstWanted {
                        outcome = .success(Self.rows(of: result))
                    } else if !step, let answered = statement.answered {
                        answered(Self.rows(of: result))
                    }
                } else if status != PGRES_PIPELINE_ABORTED, failure == nil {
                    let error = PostgresError(result, operation: statement.operation)
                    failure = error
                    outcome = .failure(error)
                    if index < firstWanted {
                        queuedFailure = error
                        failedQueued = error
                    }
                }
                PQclear(result)
                if PQstatus(handle) != CONNECTION_OK { throw abandoned(operation: statement.operation, failure: failure) }
                // Each command's answers end with a NULL.
                while let extra = PQgetResult(handle) { PQclear(extra) }
            }
            if index >= firstWanted { outcomes.append(outcome) }
        }
        guard let sync = PQgetResult(handle) else { throw abandoned(operation: batch[batch.count - 1].operation, failure: failure) }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(handle) == 1 else { throw abandoned(operation: batch[batch.count - 1].operation, failure: failure) }
        if let failedQueued { throw failedQueued }
        return outcomes
    }

    /// Gives up a connection whose pipeline can no longer be followed: closes it and returns
    /// the error to throw, `failure` or a connection failure named `operation` (which counts as
    /// a queued statement's failure too: nothing after it ran).
    private func abandoned(operation: String, failure: PostgresError? = nil) -> PostgresError {
        if let handle { PQfinish(handle) }
        handle = nil
        let error = failure ?? PostgresError(sqlState: nil, constraint: nil, operation: operation)
        if failure == nil { queuedFailure = queuedFailure ?? error }
        return error
    }
}

/// How many times a set of connections waited for the server's answer: a statement run alone,
/// a `PREPARE`, or a pipeline of queued statements and the one after them. Tests read it
/// through ``PostgresFeedStore/roundTrips`` to hold the store to its round trips per write.
package final class RoundTripCounter: Sendable {
    private let value = Atomic(0)

    package func count() { value.add(1, ordering: .relaxed) }

    package var total: Int { value.load(ordering: .relaxed) }
}
