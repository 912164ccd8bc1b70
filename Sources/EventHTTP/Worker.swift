import CLibevent
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One event loop thread: its own `event_base`, `evhttp` and SO_REUSEPORT listener.
///
/// Everything here runs on the worker's thread except ``requestStop()``, which only activates
/// an event (thread-safe because `evthread_use_pthreads` is on before any base exists).
/// libevent calls back into C functions below with an unretained pointer to the worker; the
/// ``HTTPServer`` keeps every worker alive until its thread has returned.
final class Worker: @unchecked Sendable {
    // @unchecked: all mutable state is touched only on the worker thread, inside libevent
    // callbacks or `run()`; `requestStop()` touches only `stopEvent`, which is immutable after init.
    let index: Int
    let base: OpaquePointer
    let http: OpaquePointer
    private var bound: OpaquePointer?
    private let router: Router
    private let configuration: HTTPServerConfiguration
    private var logger: Logger
    private let metrics: RequestMetrics
    private var requestIDs: RequestIDGenerator
    private var deadlines: ConnectionDeadlines<OpaquePointer>
    /// Connections whose close callback is installed (we know their evhttp_connection).
    private var hooked: Set<OpaquePointer> = []
    private var sweepEvent: OpaquePointer?
    private var stopEvent: OpaquePointer?
    private(set) var draining = false
    private var drainDeadline: UInt64 = 0
    /// When a drain closes the connections that are still idle. Until then a request arriving
    /// on a kept-alive connection is answered (with `Connection: close`) instead of being cut
    /// off by a close that crossed it on the wire.
    private var idleCloseAt: UInt64 = 0
    private var idleClosed = false
    /// How long a drain lets idle keep-alive connections send one last request.
    static let idleLinger: UInt64 = 200_000_000
    /// Requests whose answer is being computed on a ``BlockingPool``, by ticket.
    private var awaiting: [UInt64: Exchange] = [:]
    private var nextTicket: UInt64 = 0
    /// Where pools post the answers of deferred requests; wakes the loop.
    private let mailbox = Mailbox()

    init(index: Int, listenerFD: Int32, router: Router, configuration: HTTPServerConfiguration, processNonce: UInt32) throws {
        HTTPServer.enableLibeventThreads()
        guard let base = event_base_new() else { throw SystemError(call: "event_base_new", errno: ENOMEM) }
        guard let http = evhttp_new(base) else {
            event_base_free(base)
            throw SystemError(call: "evhttp_new", errno: ENOMEM)
        }
        self.index = index
        self.base = base
        self.http = http
        self.router = router
        self.configuration = configuration
        var logger = configuration.logger
        logger[metadataKey: "worker"] = "\(index)"
        self.logger = logger
        self.metrics = RequestMetrics(factory: configuration.metricsFactory)
        self.requestIDs = RequestIDGenerator(worker: index, processNonce: processNonce)
        self.deadlines = ConnectionDeadlines(requestTimeout: configuration.requestTimeout.nanoseconds)

        let timeout = configuration.requestTimeout.nanoseconds
        var ioTimeout = timeval(tv_sec: Int(timeout / 1_000_000_000), tv_usec: Int(timeout % 1_000_000_000 / 1000))
        evhttp_set_timeout_tv(http, &ioTimeout)
        evhttp_set_max_body_size(http, Int(configuration.maxBodySize))
        evhttp_set_max_headers_size(http, Int(configuration.maxHeadersSize))
        let methods = EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_HEAD.rawValue
            | EVHTTP_REQ_PUT.rawValue | EVHTTP_REQ_DELETE.rawValue | EVHTTP_REQ_OPTIONS.rawValue
            | EVHTTP_REQ_PATCH.rawValue | EVHTTP_REQ_TRACE.rawValue
        evhttp_set_allowed_methods(http, UInt16(methods))

        let context = Unmanaged.passUnretained(self).toOpaque()
        evhttp_set_gencb(http, workerHandleRequest, context)
        evhttp_set_bevcb(http, workerMakeBufferevent, context)

        guard let bound = evhttp_accept_socket_with_handle(http, listenerFD) else {
            close(listenerFD)
            evhttp_free(http)
            event_base_free(base)
            throw SystemError(call: "evhttp_accept_socket", errno: errno)
        }
        self.bound = bound

        let sweepInterval = min(timeout / 4, 250_000_000)
        sweepEvent = event_new(base, -1, Int16(EV_PERSIST), workerSweep, context)
        var sweepTime = timeval(tv_sec: 0, tv_usec: Int(max(sweepInterval, 10_000_000) / 1000))
        event_add(sweepEvent, &sweepTime)
        stopEvent = event_new(base, -1, 0, workerStop, context)
        mailbox.attach(event_new(base, -1, 0, workerMailbox, context))
    }

    /// Runs the loop until a stop has drained the worker, then frees everything.
    func run() {
        event_base_dispatch(base)
        releaseResources()
    }

    /// Frees the evhttp instance, its listener and connections, the timers and the base. Called
    /// once: at the end of ``run()``, or instead of it for a worker that never ran (a later
    /// worker of the same server failed to start).
    func releaseResources() {
        // From now on answers posted by pools are dropped (their requests die with evhttp).
        if let event = mailbox.close() { event_free(event) }
        if !awaiting.isEmpty {
            logger.warning("stopped with \(awaiting.count) deferred requests unanswered")
            awaiting.removeAll()
        }
        // Frees every remaining connection (their close callbacks release our references).
        evhttp_free(http)
        for id in Array(deadlines.ids) {
            deadlines.closed(id)
            bufferevent_decref(id)
        }
        if let sweepEvent { event_free(sweepEvent) }
        if let stopEvent { event_free(stopEvent) }
        event_base_free(base)
    }

    /// Asks the worker, from any thread, to stop accepting and drain.
    func requestStop() {
        event_active(stopEvent, 0, 0)
    }

    // MARK: - Connection bookkeeping (worker thread)

    fileprivate func makeBufferevent() -> OpaquePointer? {
        guard let bev = bufferevent_socket_new(base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else { return nil }
        // Our own reference keeps the bufferevent's memory valid until we let go, even after
        // evhttp frees a connection without telling us (one that never sent a full request).
        bufferevent_incref(bev)
        deadlines.accepted(bev, now: monotonicNanoseconds())
        return bev
    }

    fileprivate func connectionClosed(_ connection: OpaquePointer) {
        guard let bev = evhttp_connection_get_bufferevent(connection) else { return }
        hooked.remove(bev)
        guard let last = deadlines.closed(bev) else { return }
        if last == .handling { metrics.inFlight.decrement() }
        bufferevent_decref(bev)
    }

    fileprivate func responseCompleted(_ request: OpaquePointer) {
        guard let connection = evhttp_request_get_connection(request),
              let bev = evhttp_connection_get_bufferevent(connection) else { return }
        if deadlines.responseCompleted(bev, now: monotonicNanoseconds()) {
            metrics.inFlight.decrement()
        }
    }

    fileprivate func sweep() {
        let now = monotonicNanoseconds()
        // Connections evhttp freed without a close callback: their callbacks were cleared.
        for bev in Array(deadlines.ids) where !hooked.contains(bev) {
            var eventCallback: bufferevent_event_cb? = nil
            bufferevent_getcb(bev, nil, nil, &eventCallback, nil)
            if eventCallback == nil {
                deadlines.closed(bev)
                bufferevent_decref(bev)
            }
        }
        for bev in deadlines.expired(now: now) {
            logger.debug("closing a connection that sent no complete request in time")
            shutdownSocket(bufferevent_getfd(bev))
        }
        if draining && !idleClosed && now >= idleCloseAt {
            idleClosed = true
            for bev in deadlines.closeIdle() {
                shutdownSocket(bufferevent_getfd(bev))
            }
        }
        if draining && ((idleClosed && deadlines.inFlight == 0) || now >= drainDeadline) {
            if deadlines.inFlight > 0 {
                logger.warning("shutdown grace period over with \(deadlines.inFlight) requests in flight")
            }
            event_base_loopexit(base, nil)
        }
    }

    fileprivate func beginDrain() {
        guard !draining else { return }
        draining = true
        let now = monotonicNanoseconds()
        drainDeadline = now &+ configuration.shutdownGracePeriod.nanoseconds
        idleCloseAt = now &+ min(Worker.idleLinger, configuration.shutdownGracePeriod.nanoseconds)
        if let bound {
            evhttp_del_accept_socket(http, bound)
            self.bound = nil
        }
        // Check for the end of the drain often from now on.
        if let sweepEvent {
            event_del(sweepEvent)
            var fast = timeval(tv_sec: 0, tv_usec: 10_000)
            event_add(sweepEvent, &fast)
        }
    }

    // MARK: - Requests (worker thread)

    fileprivate func handle(_ request: OpaquePointer) {
        let started = monotonicNanoseconds()
        if let connection = evhttp_request_get_connection(request),
           let bev = evhttp_connection_get_bufferevent(connection) {
            if deadlines.requestStarted(bev) { metrics.inFlight.increment() }
            if !hooked.contains(bev) {
                hooked.insert(bev)
                evhttp_connection_set_closecb(connection, workerConnectionClosed, Unmanaged.passUnretained(self).toOpaque())
            }
        }
        evhttp_request_set_on_complete_cb(request, workerResponseCompleted, Unmanaged.passUnretained(self).toOpaque())

        let command = evhttp_request_get_command(request)
        let isHead = command == EVHTTP_REQ_HEAD
        let method = HTTPMethod(command)
        let rawURI = evhttp_request_get_uri(request).map { String(cString: $0) } ?? "/"
        let (path, rawQuery) = splitTarget(rawURI)
        let headers = readHeaders(evhttp_request_get_input_headers(request))
        let requestID = requestIDs.next(clientID: headers["X-Request-Id"])

        var exchange = Exchange(
            request: request, requestID: requestID, path: path, route: "unmatched",
            methodName: isHead ? "HEAD" : (method?.rawValue ?? "OTHER"), isHead: isHead,
            // libevent reads no body for HEAD or TRACE: bytes sent as one are still in the
            // connection and would be parsed as the next request. Close instead of answering them.
            close: (isHead || command == EVHTTP_REQ_TRACE) && announcesBody(headers), started: started)
        let response: HTTPResponse
        if let method {
            switch router.match(method: method, path: path) {
            case .found(let handler, let pattern, let parameters):
                exchange.route = pattern
                var httpRequest = HTTPRequest(
                    method: method, path: path, query: QueryParameters(rawQuery), headers: headers,
                    body: readBody(evhttp_request_get_input_buffer(request)), requestID: requestID, isHead: isHead)
                httpRequest.pathParameters = parameters
                httpRequest.route = pattern
                response = respond(handler, httpRequest)
            case .methodNotAllowed(let allowed):
                response = HTTPError.methodNotAllowed(isHead ? "HEAD" : method.rawValue, allowed: allowed).response
            case .notFound:
                response = HTTPError.notFound("No route for \(path).").response
            }
        } else {
            response = HTTPError(status: 405, code: "method_not_allowed", message: "This method is not supported.").response
        }
        dispatch(response, for: exchange)
    }

    /// Sends `response`, or, when it is deferred, hands its work to its pool and sends the
    /// result when the pool posts it back (``completeDeferred()``).
    private func dispatch(_ response: HTTPResponse, for exchange: Exchange) {
        guard let deferred = response.deferred else {
            finish(response, for: exchange)
            return
        }
        let ticket = nextTicket
        nextTicket &+= 1
        let mailbox = self.mailbox
        let logger = self.logger
        let requestID = exchange.requestID
        let accepted = deferred.pool.trySubmit {
            let answer: HTTPResponse
            do {
                answer = try deferred.work()
            } catch let error as HTTPError {
                answer = error.response
            } catch {
                logger.error("handler failed: \(error)", metadata: ["request_id": .string(requestID)])
                answer = HTTPError.internalError.response
            }
            mailbox.post(ticket: ticket, response: answer)
        }
        if accepted {
            awaiting[ticket] = exchange
        } else {
            finish(HTTPError.overloaded(pool: deferred.pool.name).response, for: exchange)
        }
    }

    /// Sends the answers the pools posted back (worker thread, woken by the mailbox event).
    fileprivate func completeDeferred() {
        for (ticket, response) in mailbox.takeAll() {
            guard let exchange = awaiting.removeValue(forKey: ticket) else { continue }
            // Reading is off while a request is handled, so libevent cannot have freed the
            // connection meanwhile; if it had, evhttp_send_reply frees the orphan request.
            dispatch(response, for: exchange)
        }
    }

    private func finish(_ response: HTTPResponse, for exchange: Exchange) {
        send(response, to: exchange.request, requestID: exchange.requestID, isHead: exchange.isHead, close: exchange.close)
        let elapsed = monotonicNanoseconds() &- exchange.started
        metrics.record(route: exchange.route, method: exchange.methodName, status: response.status, nanoseconds: elapsed)
        logger.info(
            "\(exchange.methodName) \(exchange.path) \(response.status) \(response.body.count)B \(elapsed / 1000)µs",
            metadata: ["request_id": .string(exchange.requestID)])
    }

    private func respond(_ handler: @escaping HTTPHandler, _ request: HTTPRequest) -> HTTPResponse {
        do {
            return try handler(request)
        } catch let error as HTTPError {
            return error.response
        } catch {
            logger.error("handler failed: \(error)", metadata: ["request_id": .string(request.requestID)])
            return HTTPError.internalError.response
        }
    }

    private func send(_ response: HTTPResponse, to request: OpaquePointer, requestID: String, isHead: Bool, close: Bool) {
        let output = evhttp_request_get_output_headers(request)
        for (name, value) in response.headers {
            evhttp_add_header(output, name, value)
        }
        evhttp_add_header(output, "X-Request-Id", requestID)
        if draining || close {
            evhttp_add_header(output, "Connection", "close")
        }
        let hasBody = response.status != 204 && response.status != 304 && !(100..<200).contains(response.status)
        if hasBody {
            evhttp_add_header(output, "Content-Length", String(response.body.count))
        }
        if hasBody && !isHead && !response.body.isEmpty {
            let buffer = evhttp_request_get_output_buffer(request)
            response.body.withUnsafeBytes { raw in
                _ = evbuffer_add(buffer, raw.baseAddress, raw.count)
            }
        }
        evhttp_send_reply(request, Int32(response.status), reasonPhrase(response.status), nil)
    }

    private func readHeaders(_ list: UnsafeMutablePointer<evkeyvalq>?) -> HTTPHeaders {
        var headers = HTTPHeaders()
        var entry = cle_headers_first(list)
        while let header = entry {
            if let key = header.pointee.key, let value = header.pointee.value {
                headers.append(name: String(cString: key), value: String(cString: value))
            }
            entry = cle_headers_next(header)
        }
        return headers
    }

    private func readBody(_ buffer: OpaquePointer?) -> [UInt8] {
        let length = evbuffer_get_length(buffer)
        guard length > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: length) { raw, count in
            count = max(0, Int(evbuffer_copyout(buffer, raw.baseAddress, length)))
        }
    }
}

/// Whether request headers announce a body: any `Transfer-Encoding`, or a `Content-Length`
/// other than 0.
func announcesBody(_ headers: HTTPHeaders) -> Bool {
    if headers["Transfer-Encoding"] != nil { return true }
    guard let length = headers["Content-Length"] else { return false }
    return length.utf8.contains { $0 != UInt8(ascii: "0") && $0 != UInt8(ascii: " ") }
}

/// Splits a request target into the path and the raw query. An absolute-form target
/// (`http://host/path?q`) is reduced to its path.
func splitTarget(_ target: String) -> (path: String, query: Substring) {
    var rest = target[...]
    if !rest.hasPrefix("/") {
        // Absolute form: skip "scheme://authority".
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            let afterAuthority = rest[rest.index(colon, offsetBy: 3)...]
            rest = afterAuthority.firstIndex(of: "/").map { afterAuthority[$0...] } ?? "/"
        }
    }
    if let mark = rest.firstIndex(of: "?") {
        return (String(rest[..<mark]), rest[rest.index(after: mark)...])
    }
    return (String(rest), "")
}

extension HTTPMethod {
    /// The method for an evhttp command; HEAD maps to GET.
    init?(_ command: evhttp_cmd_type) {
        switch command {
        case EVHTTP_REQ_GET, EVHTTP_REQ_HEAD: self = .get
        case EVHTTP_REQ_POST: self = .post
        case EVHTTP_REQ_PUT: self = .put
        case EVHTTP_REQ_PATCH: self = .patch
        case EVHTTP_REQ_DELETE: self = .delete
        case EVHTTP_REQ_OPTIONS: self = .options
        case EVHTTP_REQ_TRACE: self = .trace
        default: return nil
        }
    }
}

// MARK: - C callbacks: each recovers the worker from its context pointer.

private func worker(_ context: UnsafeMutableRawPointer?) -> Worker {
    Unmanaged<Worker>.fromOpaque(context!).takeUnretainedValue()
}

private func workerHandleRequest(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request else { return }
    worker(context).handle(request)
}

private func workerMakeBufferevent(_ base: OpaquePointer?, _ context: UnsafeMutableRawPointer?) -> OpaquePointer? {
    worker(context).makeBufferevent()
}

private func workerConnectionClosed(_ connection: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let connection else { return }
    worker(context).connectionClosed(connection)
}

private func workerResponseCompleted(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request else { return }
    worker(context).responseCompleted(request)
}

private func workerSweep(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    worker(context).sweep()
}

private func workerMailbox(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    worker(context).completeDeferred()
}

private func workerStop(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    worker(context).beginDrain()
}

/// One request between its arrival and its answer: what the answer and the access log need.
struct Exchange {
    let request: OpaquePointer
    let requestID: String
    let path: String
    var route: String
    let methodName: String
    let isHead: Bool
    let close: Bool
    let started: UInt64
}

/// Where pool threads leave the answers of deferred requests for a worker's loop.
///
/// Posting wakes the loop through an event (`event_active` is thread-safe with libevent's
/// pthread locking on). Once the worker closes it, posts are dropped, so a pool finishing late
/// never touches a freed event.
final class Mailbox: Sendable {
    private struct State {
        var answers: [(ticket: UInt64, response: HTTPResponse)] = []
        var event: EventHandle?
        var closed = false
    }

    /// A libevent event, used only under the mailbox's lock or by the loop that owns it.
    private struct EventHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let state = Mutex(State())

    /// Gives the mailbox the (not yet added) event that wakes the loop.
    func attach(_ event: OpaquePointer?) {
        let handle = event.map(EventHandle.init(pointer:))
        state.withLock { $0.event = handle }
    }

    /// Leaves an answer; called from any thread.
    func post(ticket: UInt64, response: HTTPResponse) {
        state.withLock { state in
            guard !state.closed, let event = state.event else { return }
            state.answers.append((ticket, response))
            if state.answers.count == 1 { event_active(event.pointer, 0, 0) }
        }
    }

    /// Every answer left so far (loop thread).
    func takeAll() -> [(ticket: UInt64, response: HTTPResponse)] {
        state.withLock { state in
            defer { state.answers.removeAll() }
            return state.answers
        }
    }

    /// Drops every later post; returns the event for the caller to free.
    func close() -> OpaquePointer? {
        state.withLock { state in
            state.closed = true
            state.answers.removeAll()
            defer { state.event = nil }
            return state.event
        }?.pointer
    }
}
