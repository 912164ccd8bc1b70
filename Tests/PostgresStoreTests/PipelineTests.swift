import Foundation
import PostgresStore
import PostgresTestSupport
import Testing

@Suite("PostgreSQL queued statements", needsPostgres)
struct PipelineTests {
    /// A connection with a temporary table `t (id bigint primary key)` holding `rows`, and its
    /// insert prepared (the first use of a statement prepares it, a round trip of its own).
    func connection(rows: [Int]) throws -> PostgresConnection {
        let connection = try PostgresConnection(url: postgresURL!)
        try connection.execute("CREATE TEMP TABLE t (id bigint CONSTRAINT t_pk PRIMARY KEY)")
        for row in rows { try connection.execute("INSERT INTO t VALUES ($1)", [String(row)]) }
        try connection.execute("SELECT count(*) FROM t")
        return connection
    }

    @Test("Queued statements run ahead of the next statement, in order, in the same round trip")
    func queuedStatementsTravelWithTheNext() throws {
        let connection = try connection(rows: [1])
        let before = connection.roundTrips.total
        connection.queue("INSERT INTO t VALUES ($1)", ["2"], operation: "execute")
        connection.queue("INSERT INTO t VALUES ($1)", ["3"], operation: "execute")
        #expect(connection.roundTrips.total == before)  // nothing sent yet
        #expect(try connection.execute("SELECT count(*) FROM t").rows == [["3"]])
        #expect(connection.roundTrips.total == before + 1)
        #expect(connection.isIdle)
    }

    @Test("A script runs after the statements queued before it")
    func scriptsRunAfterQueuedStatements() throws {
        let connection = try connection(rows: [1])
        connection.queue("INSERT INTO t VALUES ($1)", ["2"], operation: "execute")
        // Run ahead of the queue, the script would find one row and insert 3 and then 2 fail.
        try connection.executeScript("INSERT INTO t SELECT count(*) + 1 FROM t")
        #expect(try connection.execute("SELECT id FROM t ORDER BY id").rows == [["1"], ["2"], ["3"]])
        #expect(connection.isIdle)
    }

    @Test("A queued statement that fails throws with its operation; nothing after it runs, and the connection goes on")
    func aFailingQueuedStatementStopsTheRest() throws {
        let connection = try connection(rows: [1])
        try connection.execute("BEGIN")
        connection.queue("INSERT INTO t VALUES ($1)", ["1"], operation: "savepoint")  // taken
        connection.queue("INSERT INTO t VALUES ($1)", ["2"], operation: "execute")
        let error = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO t VALUES ($1)", ["3"]) }
        #expect(error?.sqlState == "23505")
        #expect(error?.operation == "savepoint")
        #expect(connection.takeQueuedFailure()?.constraint == "t_pk")
        #expect(connection.takeQueuedFailure() == nil)
        try connection.execute("ROLLBACK")
        #expect(try connection.execute("SELECT id FROM t ORDER BY id").rows == [["1"]])
        #expect(connection.isIdle)
    }

    @Test("The statement's own failure is not a queued statement's")
    func theLastStatementsFailureIsItsOwn() throws {
        let connection = try connection(rows: [1])
        try connection.execute("BEGIN")
        connection.queue("INSERT INTO t VALUES ($1)", ["2"], operation: "savepoint")
        let error = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO t VALUES ($1)", ["1"]) }
        #expect(error?.operation == "execute")
        #expect(connection.takeQueuedFailure() == nil)
        try connection.execute("ROLLBACK")
    }

    @Test("A statement new to the connection is prepared in the pipeline, after the queued ones: a rollback queued ahead of it lets it run")
    func newStatementsArePreparedAfterTheQueue() throws {
        let connection = try connection(rows: [1])
        try connection.execute("BEGIN")
        try connection.execute("SAVEPOINT s")
        #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO t VALUES ($1)", ["1"]) }  // aborts the transaction
        connection.queue("ROLLBACK TO SAVEPOINT s", operation: "savepoint")
        // Never run on this connection: a PREPARE of its own, ahead of the queue, would be
        // refused (25P02, the transaction is aborted).
        #expect(try connection.execute("SELECT count(*) + $1::bigint FROM t", ["10"]).rows == [["11"]])
        #expect(try connection.execute("SELECT count(*) + $1::bigint FROM t", ["20"]).rows == [["21"]])
        try connection.execute("COMMIT")
    }

    @Test("A statement the server cannot prepare fails as itself, after the queued ones ran")
    func anUnpreparableStatementFailsAsItself() throws {
        let connection = try connection(rows: [])
        try connection.execute("BEGIN")
        connection.queue("INSERT INTO t VALUES ($1)", ["5"], operation: "savepoint")
        let error = #expect(throws: PostgresError.self) { try connection.execute("SELEC 1") }
        #expect(error?.sqlState == "42601")
        #expect(error?.operation == "execute")
        #expect(connection.takeQueuedFailure() == nil)
        try connection.execute("ROLLBACK")
        #expect(connection.isIdle)
    }

    @Test("Discarded statements never run")
    func discardedStatementsNeverRun() throws {
        let connection = try connection(rows: [])
        connection.queue("INSERT INTO t VALUES ($1)", ["5"], operation: "execute")
        connection.discardQueued()
        #expect(try connection.execute("SELECT count(*) FROM t").rows == [["0"]])
    }
}
