import CLibpq

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure reported by PostgreSQL or by libpq.
///
/// It carries the SQLSTATE and, for constraint violations, the constraint's name: never the
/// server's message text or detail, which can quote the values of a statement, so an error can
/// be logged as is.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// The five-character SQLSTATE ("23505" unique violation, "08006" connection failure…), or
    /// nil when the connection failed before the server answered.
    public var sqlState: String?
    /// The violated constraint, when the server names one.
    public var constraint: String?
    /// What was being done: "connect", "execute" (never the SQL's values).
    public var operation: String

    public var description: String {
        var text = "PostgreSQL \(operation) failed"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let constraint { text += " on constraint \(constraint)" }
        return text
    }

    /// Whether the connection itself is gone (class 08, or no answer at all): reconnect and retry.
    public var isConnectionFailure: Bool {
        guard let sqlState else { return true }
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("57P")
    }
}

/// The rows of one statement, as text (libpq's text format), nil for SQL NULL.
public struct PostgresRows: Sendable {
    public var rows: [[String?]]
    /// Rows the statement changed (INSERT, UPDATE, DELETE), from PQcmdTuples.
    public var affected: Int
}

/// One libpq connection, used by one thread at a time (libpq connections are not thread safe;
/// distinct connections on distinct threads are). Statements are sent with PQexecParams, so
/// values travel apart from the SQL text and are never spliced into it.
public final class PostgresConnection {
    private var handle: OpaquePointer?

    /// Connects to `url` (postgres://USER@HOST:PORT/DB, anything libpq's conninfo accepts).
    public init(url: String) throws {
        let connection = PQconnectdb(url)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            if let connection { PQfinish(connection) }
            throw PostgresError(sqlState: nil, constraint: nil, operation: "connect")
        }
        handle = connection
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Whether libpq still considers the connection usable.
    public var isOpen: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Runs several statements without parameters (a migration) through PQexec.
    public func executeScript(_ sql: String) throws {
        guard let handle else { throw PostgresError(sqlState: nil, constraint: nil, operation: "execute") }
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw PostgresError(
                sqlState: result.flatMap { PQresultErrorField($0, clpq_diag_sqlstate) }.map { String(cString: $0) },
                constraint: nil, operation: "execute")
        }
    }

    /// Runs one statement with `parameters` bound to $1, $2… and returns its rows.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
        guard let handle else { throw PostgresError(sqlState: nil, constraint: nil, operation: "execute") }
        let result = withCStrings(parameters) { values in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw PostgresError(
                sqlState: result.flatMap { PQresultErrorField($0, clpq_diag_sqlstate) }.map { String(cString: $0) },
                constraint: result.flatMap { PQresultErrorField($0, clpq_diag_constraint_name) }.map { String(cString: $0) },
                operation: "execute")
        }
        var rows: [[String?]] = []
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                values.append(PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column)))
            }
            rows.append(values)
        }
        let affected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        return PostgresRows(rows: rows, affected: affected)
    }
}

/// Calls `body` with C strings for `strings` (NULL for nil) that live until it returns.
private func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } ?? nil }
    defer { for pointer in pointers { free(pointer) } }
    return body(pointers.map { $0.map { UnsafePointer($0) } })
}
