import JSONBytes

/// An error a client sees: an HTTP status, a stable machine-readable code and a human message.
///
/// Rendered as `{"error":{"code":"…","message":"…"}}`. Handlers throw it to answer with an
/// error; anything else a handler throws becomes a 500 `internal` whose body reveals nothing.
public struct HTTPError: Error, Sendable, Equatable {
    /// The HTTP status code, 400…599.
    public var status: Int
    /// A stable code clients can switch on, in snake case (`not_found`, `payload_too_large`).
    public var code: String
    /// A sentence for the human reading the response.
    public var message: String
    /// Extra response headers (for example `Allow` on a 405).
    public var headers: [(String, String)]

    /// Creates an error response.
    public init(status: Int, code: String, message: String, headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message
            && lhs.headers.elementsEqual(rhs.headers, by: { $0 == $1 })
    }

    /// The JSON body, `{"error":{"code":"…","message":"…"}}`.
    public var jsonBody: [UInt8] {
        var out = JSONWriter()
        out.raw("{\"error\":{\"code\":")
        out.string(code)
        out.raw(",\"message\":")
        out.string(message)
        out.raw("}}")
        return out.bytes
    }

    /// The error as a response.
    public var response: HTTPResponse {
        var response = HTTPResponse(status: status, contentType: "application/json", body: jsonBody)
        response.headers.append(contentsOf: headers)
        return response
    }
}

extension HTTPError {
    /// 404: nothing at this path or with this id.
    public static func notFound(_ message: String = "No such resource.") -> HTTPError {
        HTTPError(status: 404, code: "not_found", message: message)
    }

    /// 503: the pool that would run this request is full; retry after a second.
    public static func overloaded(pool: String) -> HTTPError {
        HTTPError(
            status: 503, code: "overloaded",
            message: "The server is busy (\(pool) queue full); retry shortly.",
            headers: [("Retry-After", "1")])
    }

    /// 400 `malformed_request`: the request cannot be framed safely (RFC 9112 §6.3) or its head
    /// breaks the syntax; the connection is closed after the answer.
    public static func malformedRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "malformed_request", message: message)
    }

    /// 413 `body_too_large`: the declared body is over the server's limit.
    public static func bodyTooLarge(limit: Int) -> HTTPError {
        HTTPError(status: 413, code: "body_too_large", message: "The request body is over the limit of \(limit) bytes.")
    }

    /// 503 `overloaded`: the bytes of request bodies already buffered reached the server's
    /// limit; retry after a second.
    public static let bodyBuffersFull = HTTPError(
        status: 503, code: "overloaded",
        message: "The server is buffering too many request bodies; retry shortly.",
        headers: [("Retry-After", "1")])

    /// 503 `overloaded`: the server holds as many connections as it allows; retry after a second.
    public static let tooManyConnections = HTTPError(
        status: 503, code: "overloaded",
        message: "The server has too many open connections; retry shortly.",
        headers: [("Retry-After", "1")])

    /// 405: the path exists but not for this method; `allowed` becomes the `Allow` header.
    public static func methodNotAllowed(_ method: String, allowed: [String]) -> HTTPError {
        HTTPError(
            status: 405, code: "method_not_allowed",
            message: "\(method) is not allowed here; use \(allowed.joined(separator: ", ")).",
            headers: [("Allow", allowed.joined(separator: ", "))])
    }

    /// 500: something failed inside the server; the message says nothing about internals.
    public static let internalError = HTTPError(
        status: 500, code: "internal", message: "The server failed to answer this request.")
}
