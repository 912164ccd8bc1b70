import PostgresStore
import PostgresTestSupport
import Testing

@Suite("PostgreSQL array literals", needsPostgres)
struct ArrayLiteralTests {
    @Test("Text arrays reach PostgreSQL element for element, quotes and backslashes included")
    func textRoundTrips() throws {
        let connection = try PostgresConnection(url: postgresURL!)
        let values = ["plain", "", "with \"quotes\"", "back\\slash", "\\\"", "comma, brace } { NULL", "NULL", "ünïcødé 🎞"]
        let rows = try connection.execute("SELECT value FROM unnest($1::text[]) WITH ORDINALITY AS t(value, n) ORDER BY n", [arrayLiteral(values)]).rows
        #expect(rows == values.map { [String?.some($0)] })
        #expect(try connection.execute("SELECT cardinality($1::text[])", [arrayLiteral([])]).rows == [["0"]])
    }

    @Test("Integer arrays keep their values and NULLs")
    func integersRoundTrip() throws {
        let connection = try PostgresConnection(url: postgresURL!)
        let values: [Int64?] = [1, nil, -7, Int64.max, Int64.min]
        let rows = try connection.execute("SELECT value FROM unnest($1::bigint[]) WITH ORDINALITY AS t(value, n) ORDER BY n", [arrayLiteral(values)]).rows
        #expect(rows == values.map { [$0.map { String($0) }] })
    }
}
