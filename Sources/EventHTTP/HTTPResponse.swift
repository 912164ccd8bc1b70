/// What a handler answers: a status, headers and a body.
///
/// `Content-Length` is added by the server; `Content-Type` comes from `headers` (the
/// convenience initialisers set it).
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Response headers in order. Names are sent as given.
    public var headers: [(String, String)]
    /// The body; for HEAD requests only its length is sent.
    public var body: [UInt8]
    /// ``body`` gzipped already, for bytes answered many times (a feed page): sent instead of
    /// compressing ``body`` again when the client accepts gzip (see ``ResponseCompression``).
    public var gzippedBody: [UInt8]?
    /// Work that produces the real answer on a ``BlockingPool``; see ``deferred(to:_:)``.
    var deferred: DeferredWork?

    /// Creates a response with a body of the given content type.
    public init(status: Int = 200, contentType: String? = nil, body: [UInt8] = [], headers: [(String, String)] = []) {
        self.status = status
        self.headers = headers
        if let contentType {
            self.headers.append(("Content-Type", contentType))
        }
        self.body = body
    }

    /// A JSON response from already-encoded bytes.
    public static func json(_ body: [UInt8], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: body)
    }

    /// A plain-text response.
    public static func text(_ text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// A response with no body (204, 304).
    public static func empty(status: Int, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers)
    }

    /// An answer computed on `pool` instead of the event loop: the loop goes on serving other
    /// connections, runs `work` on one of the pool's threads, and sends what it returns (or the
    /// ``HTTPError`` it throws; anything else becomes a 500). When the pool's queue is full the
    /// client gets 503 `overloaded` with `Retry-After` at once and `work` never runs.
    public static func deferred(to pool: BlockingPool, _ work: @escaping @Sendable () throws -> HTTPResponse) -> HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.deferred = DeferredWork(pool: pool, work: work)
        return response
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first(where: { asciiCaseInsensitiveEquals($0.0, name) })?.1
    }
}

/// A handler's work moved off the event loop.
struct DeferredWork: Sendable {
    let pool: BlockingPool
    let work: @Sendable () throws -> HTTPResponse
}

/// The reason phrase for a status code, as sent on the status line.
func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 200: "OK"
    case 201: "Created"
    case 204: "No Content"
    case 304: "Not Modified"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 409: "Conflict"
    case 410: "Gone"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 417: "Expectation Failed"
    case 422: "Unprocessable Content"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 503: "Service Unavailable"
    default: "Status \(status)"
    }
}

/// ASCII case-insensitive equality, for header names.
@inline(__always)
func asciiCaseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
    var left = a.utf8.makeIterator()
    var right = b.utf8.makeIterator()
    while true {
        switch (left.next(), right.next()) {
        case (nil, nil): return true
        case let (l?, r?):
            if l == r { continue }
            if l | 0x20 != r | 0x20 || !((l | 0x20) >= 0x61 && (l | 0x20) <= 0x7A) { return false }
        default: return false
        }
    }
}
