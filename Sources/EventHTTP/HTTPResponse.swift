import Logging

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
    /// Work that produces the real answer later; see ``deferred(to:_:)`` and ``later(from:_:)``.
    var deferred: DeferredWork?
    /// How a streamed answer starts; see ``stream(from:status:headers:_:)``.
    var streamStart: StreamStart?

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
        later(from: pool.name) { responder in
            pool.trySubmit { responder.respond(work) }
        }
    }

    /// An answer that another component produces when it is ready, for work that is queued and
    /// batched rather than run one request to a thread (a group commit). On the event loop,
    /// `start` hands the request's ``Responder`` to that component and returns true; the
    /// component calls ``Responder/respond(_:)`` once, from any thread, and the loop sends the
    /// answer. `start` returns false to refuse (its queue is full): the client gets 503
    /// `overloaded` naming `queue`, with `Retry-After`, and the responder must not be used.
    public static func later(from queue: String, _ start: @escaping @Sendable (Responder) -> Bool) -> HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.deferred = DeferredWork(queue: queue, start: start)
        return response
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first(where: { asciiCaseInsensitiveEquals($0.0, name) })?.1
    }
}

/// A handler's work moved off the event loop: who does it (for the 503 when they refuse), and
/// how to hand it to them.
struct DeferredWork: Sendable {
    let queue: String
    let start: @Sendable (Responder) -> Bool
}

/// Sends the answer of a request whose work runs off the event loop (see
/// ``HTTPResponse/later(from:_:)``). Callable from any thread; only the first answer counts.
public struct Responder: Sendable {
    let mailbox: Mailbox
    let ticket: UInt64
    let requestID: String
    let logger: Logger

    /// Sends what `make` returns, or the ``HTTPError`` it throws; any other error is logged and
    /// answered 500.
    public func respond(_ make: () throws -> HTTPResponse) {
        let answer: HTTPResponse
        do {
            answer = try make()
        } catch let error as HTTPError {
            answer = error.response
        } catch {
            logger.error("handler failed: \(error)", metadata: ["request_id": .string(requestID)])
            answer = HTTPError.internalError.response
        }
        mailbox.post(ticket: ticket, .answer(answer))
    }
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
    // Different lengths never match (a native String knows its count without reading it).
    guard a.utf8.count == b.utf8.count else { return false }
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
