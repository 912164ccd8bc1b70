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

extension PostgresError {
    /// The SQLSTATE and constraint of a failed result (nil: libpq had no answer at all).
    init(_ result: OpaquePointer?, operation: String) {
        self.init(
            sqlState: result.flatMap { PQresultErrorField($0, clpq_diag_sqlstate) }.map { String(cString: $0) },
            constraint: result.flatMap { PQresultErrorField($0, clpq_diag_constraint_name) }.map { String(cString: $0) },
            operation: operation)
    }
}

/// The rows of one statement, as text (libpq's text format), nil for SQL NULL.
public struct PostgresRows: Sendable {
    public var rows: [[String?]]
    /// Rows the statement changed (INSERT, UPDATE, DELETE), from PQcmdTuples.
    public var affected: Int
}

/// One libpq connection, used by one thread at a time (libpq connections are not thread safe;
/// distinct connections on distinct threads are). Values travel apart from the SQL text and are
/// never spliced into it. A statement is prepared on the connection the first time it runs
/// (PQprepare) and executed by name after that (PQexecPrepared), so PostgreSQL parses and plans
/// it once per connection instead of once per call: a write sends half a dozen statements, and
/// their planning was a large part of the backend's time.
///
/// Statements whose only answer is success or failure (`BEGIN`, `SAVEPOINT`…) can be queued
/// (``queue(_:_:operation:mayWait:answered:)``) instead of run: they go out with the next ``execute(_:_:)``, in
/// the same round trip (libpq's pipeline mode), ahead of it.
public final class PostgresConnection {
    // Not Sendable: one thread at a time. The pool hands connections between threads.
    var handle: OpaquePointer?
    private var copyBuffer: [UInt8] = []
    /// Statements waiting for the next ``execute(_:_:)`` (see ``queue(_:_:operation:mayWait:answered:)``).
    var queued: [QueuedStatement] = []
    /// The failure of a queued statement, kept until ``takeQueuedFailure()``.
    var queuedFailure: PostgresError?
    /// The statements prepared on this connection, by SQL text. Bounded: statements built per
    /// call (multi-row inserts of varying size) past the bound run unnamed, as PQexecParams.
    var prepared: [String: String] = [:]
    static let preparedLimit = 256
    /// Each record type's statements (``statements(for:)``), by type.
    var recordStatements: [ObjectIdentifier: RecordStatements] = [:]
    /// Counts the round trips this connection makes (shared by a store's connections).
    package let roundTrips: RoundTripCounter

    /// Connects to `url` (postgres://USER@HOST:PORT/DB, anything libpq's conninfo accepts).
    public convenience init(url: String) throws {
        try self.init(url: url, counting: RoundTripCounter())
    }

    /// Connects to `url`, counting round trips in `roundTrips`.
    init(url: String, counting roundTrips: RoundTripCounter) throws {
        self.roundTrips = roundTrips
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

    /// Whether the connection is outside any transaction (a failed body left none open) and
    /// has nothing queued.
    public var isIdle: Bool {
        guard let handle else { return false }
        return queued.isEmpty && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Runs several statements without parameters (a migration) through PQexec, after the
    /// queued ones (sent first, so nothing runs out of the order it was asked for).
    public func executeScript(_ sql: String) throws {
        if !queued.isEmpty { _ = try executePipelined([]) }
        guard let handle else { throw PostgresError(sqlState: nil, constraint: nil, operation: "execute") }
        roundTrips.count()
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw PostgresError(result, operation: "execute") }
    }

    /// Runs one statement with `parameters` bound to $1, $2… and returns its rows; the queued
    /// statements go first, in the same round trip.
    ///
    /// - Throws: ``PostgresError``: the first failure, of a queued statement (then with the
    ///   operation it was queued with, and `sql` does not run) or of `sql` itself.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
        if !queued.isEmpty {
            return try executePipelined([QueuedStatement(sql: sql, parameters: parameters, operation: "execute", mayWait: false)])[0]
        }
        guard let handle else { throw PostgresError(sqlState: nil, constraint: nil, operation: "execute") }
        let name = try preparedName(of: sql, parameterCount: parameters.count)
        roundTrips.count()
        let result = withCStrings(parameters) { values in
            if let name {
                PQexecPrepared(handle, name, Int32(parameters.count), values, nil, nil, 0)
            } else {
                PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
            }
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw PostgresError(result, operation: "execute") }
        return Self.rows(of: result)
    }

    /// The rows and affected count of a successful result.
    static func rows(of result: OpaquePointer?) -> PostgresRows {
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

extension PostgresConnection {
    /// The name `sql` is prepared under on this connection, preparing it first if it is new; nil
    /// when the cache is full (the statement then runs unnamed). Throws what the server says of a
    /// statement it cannot prepare.
    func preparedName(of sql: String, parameterCount: Int) throws -> String? {
        if let name = prepared[sql] { return name }
        guard let handle, prepared.count < Self.preparedLimit else { return nil }
        let name = "deltafeed_\(prepared.count)"
        // A protocol-level prepared statement outlives the transaction it was made in, even a
        // rolled-back one, so it stays valid for the connection's life.
        roundTrips.count()
        let result = PQprepare(handle, name, sql, Int32(parameterCount), nil)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw PostgresError(result, operation: "prepare") }
        prepared[sql] = name
        return name
    }

    /// Starts `COPY … FROM STDIN` (text format); then send rows with ``copyRow(_:)`` and end
    /// with ``endCopy()``. Nothing else may run on the connection in between.
    public func startCopy(_ sql: String) throws {
        guard let handle else { throw PostgresError(sqlState: nil, constraint: nil, operation: "copy") }
        let start = PQexec(handle, sql)
        defer { PQclear(start) }
        guard PQresultStatus(start) == PGRES_COPY_IN else { throw PostgresError(start, operation: "copy") }
        copyBuffer.removeAll(keepingCapacity: true)
    }

    /// Buffers one row already in COPY's text format (values escaped with ``copyText(_:)``,
    /// separated by tabs, ending with a new line), sending every 64 KiB.
    public func copyRow(_ row: String) throws {
        copyBuffer.append(contentsOf: row.utf8)
        if copyBuffer.count >= 1 << 16 { try flushCopy() }
    }

    /// Sends what is buffered and ends the COPY.
    ///
    /// - Returns: the rows the server reports copied.
    @discardableResult
    public func endCopy() throws -> Int {
        guard let handle else { throw PostgresError(sqlState: nil, constraint: nil, operation: "copy") }
        try flushCopy()
        guard PQputCopyEnd(handle, nil) == 1 else { throw PostgresError(sqlState: nil, constraint: nil, operation: "copy") }
        var failure: PostgresError?
        var copied = 0
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) != PGRES_COMMAND_OK {
                failure = failure ?? PostgresError(result, operation: "copy")
            } else {
                copied = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
            }
            PQclear(result)
        }
        if let failure { throw failure }
        return copied
    }

    private func flushCopy() throws {
        guard let handle, !copyBuffer.isEmpty else { return }
        let sent = copyBuffer.withUnsafeBufferPointer { bytes in
            bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { PQputCopyData(handle, $0, Int32(bytes.count)) }
        }
        copyBuffer.removeAll(keepingCapacity: true)
        guard sent == 1 else { throw PostgresError(sqlState: nil, constraint: nil, operation: "copy") }
    }

    /// One value in COPY's text format: `\N` for nil, backslash, tab, new line and carriage
    /// return escaped.
    public static func copyText(_ value: String?) -> String {
        guard let value else { return "\\N" }
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else { return value }
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count + 8)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\t": escaped += "\\t"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// The file descriptor of the connection's socket (to wait for notifications), or -1.
    public var socket: Int32 {
        guard let handle else { return -1 }
        return PQsocket(handle)
    }

    /// Waits up to `timeout` for notifications of the channels this connection `LISTEN`s to, and
    /// returns their payloads (empty on timeout).
    ///
    /// - Throws: ``PostgresError`` (a connection failure) when the connection is lost.
    public func notifications(waitingUpTo timeout: Duration) throws -> [String] {
        guard let handle else { throw PostgresError(sqlState: nil, constraint: nil, operation: "listen") }
        var payloads = drainNotifications(handle)
        if !payloads.isEmpty { return payloads }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready > 0 {
            guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else {
                throw PostgresError(sqlState: nil, constraint: nil, operation: "listen")
            }
            payloads = drainNotifications(handle)
        }
        return payloads
    }

    private func drainNotifications(_ handle: OpaquePointer) -> [String] {
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }
}

/// Calls `body` with C strings for `strings` (NULL for nil) that live until it returns.
func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } ?? nil }
    defer { for pointer in pointers { free(pointer) } }
    return body(pointers.map { $0.map { UnsafePointer($0) } })
}

extension PostgresRows {
    /// The first column of the first row, nil when there is none or it is NULL.
    public var firstValue: String? { rows.first?.first ?? nil }
}
