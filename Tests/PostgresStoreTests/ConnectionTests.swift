import Foundation
import PostgresStore
import PostgresTestSupport
import Testing

/// The server scripts/test starts; these suites need one (scripts/test always sets it).

@Suite("PostgreSQL connection", needsPostgres)
struct ConnectionTests {
    @Test("Values travel as parameters and come back as text, NULL as nil")
    func parametersRoundTrip() throws {
        let connection = try PostgresConnection(url: postgresURL!)
        let rows = try connection.execute("SELECT $1::bigint + 1, $2::text, $3::text", ["41", "it's; DROP TABLE x", nil])
        #expect(rows.rows == [["42", "it's; DROP TABLE x", nil]])
    }

    @Test("A constraint violation names its SQLSTATE and constraint, never the values")
    func errorsCarryNoValues() throws {
        let connection = try PostgresConnection(url: postgresURL!)
        try connection.execute("CREATE TEMP TABLE t (id bigint CONSTRAINT t_pk PRIMARY KEY)")
        try connection.execute("INSERT INTO t VALUES ($1)", ["7"])
        let error = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO t VALUES ($1)", ["7"]) }
        #expect(error?.sqlState == "23505")
        #expect(error?.constraint == "t_pk")
        #expect(error?.description.contains("7") == false)
        #expect(error?.isConnectionFailure == false)
    }

    @Test("A statement is prepared once per connection and runs by name after that")
    func statementsArePreparedOnce() throws {
        let connection = try PostgresConnection(url: postgresURL!)
        let sql = "SELECT $1::bigint * 2"
        for value in 1...3 { #expect(try connection.execute(sql, [String(value)]).rows == [[String(value * 2)]]) }
        let prepared = try connection.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", [sql])
        #expect(prepared.rows == [["1"]])
    }

    @Test("A statement first prepared in a rolled-back transaction still runs; a bad one reports its own SQLSTATE")
    func preparedStatementsOutliveRollback() throws {
        let connection = try PostgresConnection(url: postgresURL!)
        try connection.execute("BEGIN")
        #expect(try connection.execute("SELECT $1::text || 'b'", ["a"]).rows == [["ab"]])
        try connection.execute("ROLLBACK")
        #expect(try connection.execute("SELECT $1::text || 'b'", ["c"]).rows == [["cb"]])
        let error = #expect(throws: PostgresError.self) { try connection.execute("SELEC $1::text", ["x"]) }
        #expect(error?.sqlState == "42601")  // syntax error, from the prepare
        #expect(try connection.execute("SELECT 1").rows == [["1"]])
    }

    @Test("A refused connection is a connection failure")
    func refusedConnection() {
        let error = #expect(throws: PostgresError.self) { try PostgresConnection(url: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2") }
        #expect(error?.isConnectionFailure == true)
    }
}
