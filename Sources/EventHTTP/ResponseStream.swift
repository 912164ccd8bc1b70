import Synchronization

extension HTTPResponse {
    /// An answer whose body is written in parts over time, for as long as the producer wants
    /// (Server-Sent Events). The status and `headers` go out at once, without `Content-Length`:
    /// HTTP/1.1 clients get the body chunked, HTTP/1.0 clients until the connection closes. A
    /// HEAD request gets the headers and no body, and `start` never runs.
    ///
    /// On the event loop, `start` hands the ``ResponseStream`` to its producer and returns true;
    /// it returns false to refuse (the producer is full): the client gets 503 `overloaded`
    /// naming `queue`, with `Retry-After`, and the stream must not be used. While the stream is
    /// open no deadline runs against the client (the server owes the next part); a client that
    /// takes none of a part for the request timeout is disconnected.
    ///
    /// The body is not compressed.
    public static func stream(
        from queue: String, status: Int = 200, headers: [(String, String)], _ start: @escaping @Sendable (ResponseStream) -> Bool
    ) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: headers)
        response.streamStart = StreamStart(queue: queue, start: start)
        return response
    }
}

/// A streamed answer's producer side, handed out by ``HTTPResponse/stream(from:status:headers:_:)``.
/// Callable from any thread.
///
/// It never queues more than the producer chose to send: ``isWritable`` says whether everything
/// sent so far has been handed to the kernel, and ``onEvent(_:)`` says when that becomes true
/// again (``Event/drained``) and when the client went away (``Event/closed``). A producer that
/// sends only when writable holds at most one part per slow client, and sends a slow client
/// whatever is newest when it catches up.
public final class ResponseStream: Sendable {
    /// What happened to the stream, told to the handler set with ``onEvent(_:)``.
    public enum Event: Sendable {
        /// Everything sent so far has been written to the socket.
        case drained
        /// The client closed the connection, the server stopped, or ``finish(_:)`` ran: nothing
        /// more can be sent.
        case closed
    }

    private struct State {
        /// Parts posted, and parts the loop has seen written to the socket.
        var sent: UInt64 = 0
        var written: UInt64 = 0
        var closed = false
        var handler: (@Sendable (Event) -> Void)?
    }

    let mailbox: Mailbox
    let ticket: UInt64
    private let state = Mutex(State())

    init(mailbox: Mailbox, ticket: UInt64) {
        self.mailbox = mailbox
        self.ticket = ticket
    }

    /// Sets what is told of the stream's events (from the event loop's thread: it must not
    /// block). Set it before the first ``send(_:)``; an event that happened before it was set is
    /// told at once.
    public func onEvent(_ handler: @escaping @Sendable (Event) -> Void) {
        let closed = state.withLock { state in
            state.handler = handler
            return state.closed
        }
        if closed { handler(.closed) }
    }

    /// Whether the stream is open and everything sent has reached the socket.
    public var isWritable: Bool {
        state.withLock { !$0.closed && $0.sent == $0.written }
    }

    /// Whether the stream has closed.
    public var isClosed: Bool {
        state.withLock { $0.closed }
    }

    /// Queues `bytes` as the next part of the body. Returns false when the stream is closed (the
    /// bytes are dropped).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return !isClosed }
        guard reserveSend() else { return false }
        if !mailbox.post(ticket: ticket, .chunk(bytes)) {
            closed()
            return false
        }
        return true
    }

    /// Counts one more part sent, unless the stream is closed.
    func reserveSend() -> Bool {
        state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.sent &+= 1
            return true
        }
    }

    /// Sends `bytes` (if any) and ends the body; the connection is then kept for the client's
    /// next request. Later sends are dropped.
    public func finish(_ bytes: [UInt8] = []) {
        let first = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            return true
        }
        guard first else { return }
        mailbox.post(ticket: ticket, .end(bytes))
        state.withLock { $0.handler }?(.closed)
    }

    /// The loop saw everything it wrote so far reach the socket: `count` parts in all.
    func written(_ count: UInt64) {
        let handler = state.withLock { state -> (@Sendable (Event) -> Void)? in
            state.written = count
            return state.closed || state.sent != count ? nil : state.handler
        }
        handler?(.drained)
    }

    /// The connection is gone (or the worker stopped).
    func closed() {
        let handler = state.withLock { state -> (@Sendable (Event) -> Void)? in
            guard !state.closed else { return nil }
            state.closed = true
            return state.handler
        }
        handler?(.closed)
    }
}

/// How a streamed answer starts: who produces it (for the 503 when they refuse), and how to hand
/// it to them.
struct StreamStart: Sendable {
    let queue: String
    let start: @Sendable (ResponseStream) -> Bool
}

/// Parts for many streams, handed to their event loops together: one lock and one wake-up per
/// loop for the whole batch, where ``ResponseStream/send(_:)`` takes them for every part. For a
/// producer that sends to thousands of streams at once (a change many live viewers see).
public struct ResponseStreamBatch {
    private var byMailbox: [ObjectIdentifier: (mailbox: Mailbox, parts: [(ticket: UInt64, delivery: Delivery)], streams: [ResponseStream])] = [:]
    /// Parts queued since the last ``flush()``.
    public private(set) var count = 0

    public init() {}

    /// Queues `bytes` as the next part of `stream`; it goes out at ``flush()``. Returns false
    /// when the stream is closed (the bytes are dropped).
    @discardableResult
    public mutating func send(_ bytes: [UInt8], on stream: ResponseStream) -> Bool {
        guard !bytes.isEmpty else { return !stream.isClosed }
        guard stream.reserveSend() else { return false }
        let key = ObjectIdentifier(stream.mailbox)
        if byMailbox[key] == nil { byMailbox[key] = (stream.mailbox, [], []) }
        byMailbox[key]!.parts.append((stream.ticket, .chunk(bytes)))
        byMailbox[key]!.streams.append(stream)
        count += 1
        return true
    }

    /// Hands every queued part to its loop.
    public mutating func flush() {
        for entry in byMailbox.values where !entry.mailbox.post(entry.parts) {
            for stream in entry.streams { stream.closed() }
        }
        byMailbox.removeAll(keepingCapacity: true)
        count = 0
    }
}
