public import FeedWire
public import Foundation
import JSONBytes
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension DeltaFeedClient {
    /// How a live sequence connects, waits and reconnects.
    public struct LiveOptions: Hashable, Sendable {
        /// Seconds a connection may take to open before the attempt fails (default 10).
        public var connectTimeout: TimeInterval
        /// Seconds without a byte (the server sends a heartbeat every 15 s) after which the
        /// connection is taken for dead and opened again (default 45).
        public var idleTimeout: TimeInterval
        /// Seconds before reconnecting until the server's first `retry:` says otherwise
        /// (default 3).
        public var retry: TimeInterval
        /// The longest wait between two attempts when attempts keep failing (the wait doubles
        /// from the server's `retry:` up to this; default 30 s).
        public var maximumRetry: TimeInterval
        /// How many connection attempts in a row may fail (refused, timed out, cut before an
        /// answer) before the sequence throws ``DeltaFeedClientError/transport(_:)``; nil
        /// (the default) tries for as long as it is iterated.
        public var maximumFailures: Int?
        /// The largest event accepted, in bytes (default 64 MiB).
        public var maximumEventSize: Int

        /// Options with the defaults.
        public init(
            connectTimeout: TimeInterval = 10, idleTimeout: TimeInterval = 45, retry: TimeInterval = 3, maximumRetry: TimeInterval = 30,
            maximumFailures: Int? = nil, maximumEventSize: Int = 64 << 20
        ) {
            self.connectTimeout = connectTimeout
            self.idleTimeout = idleTimeout
            self.retry = retry
            self.maximumRetry = maximumRetry
            self.maximumFailures = maximumFailures
            self.maximumEventSize = maximumEventSize
        }
    }

    /// One event of a live feed, applied.
    public struct LiveUpdate: Hashable, Sendable {
        /// What the server sent.
        public enum Change: Hashable, Sendable {
            /// The whole page (`event: reset`): reload without animating.
            case reset
            /// This delta (`event: delta`), in the client's format: animate it.
            case delta(FeedDelta)
        }

        /// What the server sent.
        public var change: Change
        /// The feed page after it: equal to what a fresh fetch returns.
        public var document: FeedDocument

        /// Creates an update.
        public init(change: Change, document: FeedDocument) {
            self.change = change
            self.document = document
        }
    }

    /// The viewer's feed page, live: each element is the page after the server's next event
    /// (`GET /v1/users/{viewer}/feed/live`, Server-Sent Events), so a screen renders as it
    /// iterates:
    ///
    ///     for try await document in client.live() {
    ///         render(document)
    ///     }
    ///
    /// It resumes from ``document`` when the client holds one (`since` and `Last-Event-ID`):
    /// the first element then comes with the first change. Otherwise, or when the server no
    /// longer knows that snapshot, the first element is the whole page. A delta is applied in
    /// the client's ``format``; ``bearerToken`` goes with every connection.
    ///
    /// The sequence keeps one connection open on a thread of its own, and opens it again from
    /// the last page it received when the connection drops, goes silent past
    /// ``LiveOptions/idleTimeout``, or the server shuts down (`event: shutdown`): after the
    /// server's `retry:` (with up to a fifth more at random, so a server's clients do not all
    /// come back at once), doubling while attempts fail. A 503 `shutting_down` is retried too.
    ///
    /// A renderer slower than the server gets the latest page, not every one in between. Use
    /// ``liveUpdates(options:)`` for each event with its delta, to animate.
    ///
    /// Cancelling the iterating task (or leaving the loop) closes the connection. The client's
    /// own ``document`` is left as it was: ``adopt(_:)`` the last element to resume from it
    /// later.
    ///
    /// The connection is a plain `http://` socket of its own, whatever ``transport`` is.
    ///
    /// - Parameter options: timeouts and reconnection.
    /// - Returns: The pages, as they change. The sequence throws a ``DeltaFeedClientError``:
    ///   ``DeltaFeedClientError/unexpectedStatus(_:code:message:)`` for an answer other than
    ///   200 (401 and 403 for a missing or refused token, 404 for an unknown viewer, 400, 503
    ///   `overloaded` when the server or viewer has as many streams as it allows);
    ///   ``DeltaFeedClientError/gone(_:)`` when the viewer is deleted;
    ///   ``DeltaFeedClientError/apply(_:delta:)`` or
    ///   ``DeltaFeedClientError/invalidResponse(_:)`` for an event it cannot apply;
    ///   ``DeltaFeedClientError/transport(_:)`` for an `https://` server, or after
    ///   ``LiveOptions/maximumFailures`` failed attempts.
    public func live(options: LiveOptions = LiveOptions()) -> AsyncThrowingStream<FeedDocument, any Error> {
        let session = liveSession(options: options)
        return AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            continuation.onTermination = { _ in session.cancellation.cancel() }
            session.start(emit: { continuation.yield($0.document) }, finish: { continuation.finish(throwing: $0) })
        }
    }

    /// As ``live(options:)``, with what each event was: a reset, or the delta that was applied
    /// (for a screen that animates it). Nothing is dropped: the elements wait for the consumer.
    public func liveUpdates(options: LiveOptions = LiveOptions()) -> AsyncThrowingStream<LiveUpdate, any Error> {
        let session = liveSession(options: options)
        return AsyncThrowingStream(bufferingPolicy: .unbounded) { continuation in
            continuation.onTermination = { _ in session.cancellation.cancel() }
            session.start(emit: { continuation.yield($0) }, finish: { continuation.finish(throwing: $0) })
        }
    }

    private func liveSession(options: LiveOptions) -> LiveSession {
        let items = [URLQueryItem(name: "format", value: format.rawValue)] + query.items
        return LiveSession(url: url("feed/live", items), bearerToken: bearerToken, format: format, document: document, options: options)
    }
}

/// How long a live sequence waits before its next attempt.
package enum LiveBackoff {
    /// The wait: the server's `retry` after a stream ended, doubled for each attempt in a row
    /// that failed after the first, up to `maximum` (or `retry` when that is longer), then
    /// lengthened by up to a fifth (`jitter` from 0 to 1).
    package static func delay(retry: TimeInterval, failures: Int, maximum: TimeInterval, jitter: Double) -> TimeInterval {
        var base = max(0, retry)
        if failures > 0 {
            // Never a tight loop of refused connections, even with `retry: 0`.
            base = max(base, 0.05) * pow(2, Double(min(failures - 1, 30)))
            base = min(base, max(maximum, retry))
        }
        return base * (1 + 0.2 * min(max(jitter, 0), 1))
    }
}

/// One live sequence: its connection, the page it holds, and its thread.
final class LiveSession: @unchecked Sendable {
    // @unchecked: after `start`, everything but `cancellation` (itself thread-safe) belongs to
    // the session's thread.

    let cancellation = SocketCancellation()
    private let url: URL
    private let bearerToken: String?
    private let format: FeedDelta.Format
    private let options: DeltaFeedClient.LiveOptions
    private var document: FeedDocument?
    /// The reconnection delay: the options' until the server's `retry:`.
    private var retry: TimeInterval
    private var emit: @Sendable (DeltaFeedClient.LiveUpdate) -> Void = { _ in }

    init(url: URL, bearerToken: String?, format: FeedDelta.Format, document: FeedDocument?, options: DeltaFeedClient.LiveOptions) {
        self.url = url
        self.bearerToken = bearerToken
        self.format = format
        self.document = document
        self.options = options
        retry = options.retry
    }

    /// How one connection ended.
    private enum Ending {
        /// The consumer went away.
        case cancelled
        /// For good: the sequence throws this.
        case fatal(DeltaFeedClientError)
        /// The attempt failed before the stream opened; try again after a while.
        case failed(String, retryAfter: TimeInterval?)
        /// The stream was open and ended (the server closed it, asked to reconnect, went
        /// silent, or the connection broke).
        case ended
    }

    /// Starts the session's thread.
    func start(emit: @escaping @Sendable (DeltaFeedClient.LiveUpdate) -> Void, finish: @escaping @Sendable ((any Error)?) -> Void) {
        self.emit = emit
        let thread = Thread { [self] in
            finish(run())
        }
        thread.name = "deltafeed-live"
        thread.start()
    }

    /// Connects, reads and reconnects until cancelled or a fatal error.
    private func run() -> DeltaFeedClientError? {
        var failures = 0
        var random = SystemRandomNumberGenerator()
        while true {
            let delay: TimeInterval
            switch connectAndRead() {
            case .cancelled:
                return nil
            case .fatal(let error):
                return cancellation.isCancelled ? nil : error
            case .failed(let reason, let retryAfter):
                failures += 1
                if let maximum = options.maximumFailures, failures >= maximum {
                    return .transport("\(reason) (\(failures) attempts in a row failed)")
                }
                let backoff = LiveBackoff.delay(
                    retry: retry, failures: failures, maximum: options.maximumRetry, jitter: Double.random(in: 0...1, using: &random))
                delay = max(backoff, retryAfter ?? 0)
            case .ended:
                failures = 0
                delay = LiveBackoff.delay(retry: retry, failures: 0, maximum: options.maximumRetry, jitter: Double.random(in: 0...1, using: &random))
            }
            guard cancellation.sleep(delay) else { return nil }
        }
    }

    /// The request's URL, with the held snapshot as `since`.
    private var requestURL: URL {
        guard let document else { return url }
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "since", value: document.snapshot)]
        return components.url!
    }

    /// One connection: the request, the answer's head, then the events until the stream ends.
    private func connectAndRead() -> Ending {
        let url = requestURL
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.scheme?.lowercased() == "http",
            let host = components.host, !host.isEmpty
        else { return .fatal(.transport("\(url): live streams speak plain http:// only")) }
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        var head = "GET \(target) HTTP/1.1\r\n"
        head += "Host: \(host.contains(":") ? "[\(host)]" : host)\(components.port.map { ":\($0)" } ?? "")\r\n"
        head += "Accept: text/event-stream\r\nAccept-Encoding: identity\r\nCache-Control: no-cache\r\nConnection: close\r\n"
        if let document { head += "Last-Event-ID: \(document.snapshot)\r\n" }
        if let bearerToken {
            guard !bearerToken.contains(where: { $0 == "\r" || $0 == "\n" }) else { return .fatal(.transport("the bearer token contains a line break")) }
            head += "Authorization: Bearer \(bearerToken)\r\n"
        }
        head += "\r\n"

        if cancellation.isCancelled { return .cancelled }
        let socket: Socket
        switch Socket.connect(host: host, port: components.port ?? 80, timeout: options.connectTimeout) {
        case .success(let connected): socket = connected
        case .failure(let error): return .failed(error.reason, retryAfter: nil)
        }
        guard cancellation.attach(socket) else {
            socket.close()
            return .cancelled
        }
        defer {
            cancellation.detach()
            socket.close()
        }
        if case .failure(let error) = socket.write(Array(head.utf8)) {
            return cancellation.isCancelled ? .cancelled : .failed(error.reason, retryAfter: nil)
        }
        socket.setReceiveTimeout(options.idleTimeout)

        var connection = Connection(socket: socket, idleTimeout: options.idleTimeout)
        let answer: HTTPResponseParser.Head
        switch connection.readHead() {
        case .success(let read): answer = read
        case .failure(let failure): return ending(failure, opened: false)
        }
        guard answer.status == 200 else { return refusal(answer, connection: &connection) }
        let contentType = answer.field("content-type")?.lowercased() ?? ""
        guard contentType.hasPrefix("text/event-stream") else {
            return .fatal(.invalidResponse("the live route answered 200 with Content-Type \(contentType), not text/event-stream"))
        }
        if let coding = answer.field("content-encoding")?.lowercased(), coding != "identity" {
            return .fatal(.invalidResponse("the live stream came with Content-Encoding \(coding)"))
        }
        let framing: HTTPResponseParser.BodyFraming
        do {
            framing = try HTTPResponseParser.bodyFraming(of: answer, method: "GET")
        } catch {
            return .fatal(.invalidResponse(error.reason))
        }
        var body = StreamingBody(framing: framing)
        var parser = ServerSentEventParser(maximumEventSize: options.maximumEventSize)
        var bytes = connection.leftover
        while true {
            do {
                let events = try parser.parse(try body.decode(bytes[...]))
                if let milliseconds = parser.retry { retry = TimeInterval(milliseconds) / 1000 }
                for event in events {
                    if let ending = handle(event) { return ending }
                }
            } catch let error as HTTPResponseParser.ParseError {
                return .fatal(.invalidResponse("the live stream's framing: \(error.reason)"))
            } catch {
                return .fatal(.invalidResponse("\(error)"))
            }
            if body.isComplete { return .ended }
            switch connection.receive() {
            case .success(let read): bytes = read
            case .failure(let failure): return ending(failure, opened: true)
            }
        }
    }

    /// What a read failure means, before or after the stream opened.
    private func ending(_ failure: Connection.Failure, opened: Bool) -> Ending {
        if cancellation.isCancelled { return .cancelled }
        switch failure {
        case .invalid(let reason): return .fatal(.invalidResponse(reason))
        case .closed(let reason): return opened ? .ended : .failed(reason, retryAfter: nil)
        }
    }

    /// An answer other than 200: its body read whole, as the error the sequence throws; a 503
    /// `shutting_down` (the server is stopping, another may take over) is retried instead.
    private func refusal(_ head: HTTPResponseParser.Head, connection: inout Connection) -> Ending {
        var body = StreamingBody(framing: (try? HTTPResponseParser.bodyFraming(of: head, method: "GET")) ?? .untilClose)
        var bytes = (try? body.decode(connection.leftover[...])) ?? []
        // The error's JSON, up to 1 MiB; what a broken answer leaves out only loses the message.
        while !body.isComplete, bytes.count < 1 << 20, case .success(let more) = connection.receive(), let data = try? body.decode(more[...]) {
            bytes += data
        }
        var headers: [String: String] = [:]
        for (name, _) in head.fields { headers[name.lowercased()] = head.field(name) }
        let response = FeedHTTPResponse(status: head.status, headers: headers, body: bytes)
        let error = DeltaFeedClientError.unexpected(response)
        if case .unexpectedStatus(503, "shutting_down", _) = error {
            return .failed("\(error)", retryAfter: response.header("retry-after").flatMap { TimeInterval($0) })
        }
        return .fatal(error)
    }

    /// Applies one event to the held page and hands the page on; returns how the connection
    /// ends when the event ends it.
    private func handle(_ event: ServerSentEvent) -> Ending? {
        switch event.type {
        case "reset":
            let page: FeedDocument
            do {
                page = try FeedDocument(parsing: Array(event.data.utf8))
            } catch {
                return .fatal(.invalidResponse("the reset event's page: \(error)"))
            }
            guard event.lastEventID == page.snapshot else {
                return .fatal(.invalidResponse("a reset event with id \(event.lastEventID) holds snapshot \(page.snapshot)"))
            }
            document = page
            emit(DeltaFeedClient.LiveUpdate(change: .reset, document: page))
        case "delta":
            guard let held = document else { return .fatal(.invalidResponse("a delta event before any page")) }
            let delta: FeedDelta
            do {
                delta = try FeedDelta(parsing: Array(event.data.utf8), format: format, since: held.snapshot)
            } catch {
                return .fatal(.invalidResponse("the delta event: \(error)"))
            }
            guard event.lastEventID == delta.header.snapshot else {
                return .fatal(.invalidResponse("a delta event with id \(event.lastEventID) leads to snapshot \(delta.header.snapshot)"))
            }
            let page: FeedDocument
            do {
                page = try held.applying(delta)
            } catch {
                return .fatal(.apply(error, delta: delta))
            }
            document = page
            emit(DeltaFeedClient.LiveUpdate(change: .delta(delta), document: page))
        case "shutdown":
            // The server is stopping: reconnect (to it once it is back, or to another replica).
            return .ended
        case "gone":
            var code = "gone"
            if case .string(let value)? = (try? JSONValue(parsing: Array(event.data.utf8)))?["error"] { code = value }
            return .fatal(.gone(code))
        default:
            // Events this client does not know are for others.
            break
        }
        return nil
    }
}

/// The reading side of a live stream's connection.
private struct Connection {
    enum Failure: Error {
        /// The connection closed, broke or went silent.
        case closed(String)
        /// The bytes are not an HTTP response.
        case invalid(String)
    }

    let socket: Socket
    let idleTimeout: TimeInterval
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)
    /// Bytes read past the head.
    private(set) var leftover: [UInt8] = []

    init(socket: Socket, idleTimeout: TimeInterval) {
        self.socket = socket
        self.idleTimeout = idleTimeout
    }

    /// The next bytes the server sends.
    mutating func receive() -> Result<[UInt8], Failure> {
        switch socket.receive(into: &buffer) {
        case .success(0):
            return .failure(.closed("the server closed the connection"))
        case .success(let count):
            return .success(Array(buffer[0..<count]))
        case .failure(let error) where error.code == EAGAIN || error.code == EWOULDBLOCK:
            return .failure(.closed("nothing from the server for \(idleTimeout) s"))
        case .failure(let error):
            return .failure(.closed("recv: \(error)"))
        }
    }

    /// Reads until the answer's head (interim 1xx answers skipped); what follows is ``leftover``.
    mutating func readHead() -> Result<HTTPResponseParser.Head, Failure> {
        var received: [UInt8] = []
        var start = 0
        while true {
            do {
                while let head = try HTTPResponseParser.head(in: received, from: start) {
                    if (100...199).contains(head.status) {
                        start = head.bodyStart
                        continue
                    }
                    leftover = Array(received[head.bodyStart...])
                    return .success(head)
                }
            } catch {
                return .failure(.invalid(error.reason))
            }
            guard received.count - start <= 64 << 10 else { return .failure(.invalid("an answer head larger than 64 KiB")) }
            switch receive() {
            case .success(let bytes): received += bytes
            case .failure(.closed(let reason)):
                return .failure(.closed(received.isEmpty ? "\(reason) before answering" : "\(reason) in the middle of the answer's head"))
            case .failure(let failure): return .failure(failure)
            }
        }
    }
}
