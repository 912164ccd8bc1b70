import CLibevent
import CoreMetrics
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
///
/// A request passes three hooks before its handler runs:
///
/// 1. bytes arriving on a connection (a callback on the bufferevent's input buffer, run before
///    evhttp parses them): ``RequestHeadScanner`` reads the raw head, and the request evhttp is
///    reading gets our header callback and our request callback (``requestArrived(_:)``);
/// 2. the header callback (after the headers, before the body): the framing is checked and the
///    body's bytes are reserved against ``HTTPServerConfiguration/maxBufferedBodyBytes``; a
///    refused request has its body framing removed so evhttp reads no body and delivers it at once;
/// 3. the request callback, for a complete request and for one evhttp refuses while reading it
///    (which evhttp would answer with an HTML page): refusals are answered with the JSON error
///    body and `Connection: close`, anything else goes through evhttp's own callback to
///    ``handle(_:)`` and the router.
///
/// libevent 2.1 has no call to reach a server request before its headers are parsed; the shim
/// finds it through libevent 2.1.12's struct layouts, checked against public getters on every
/// use. If they do not match, the hooks are skipped, the checks run when the request is
/// delivered, and libevent answers its own refusals.
final class Worker: @unchecked Sendable {
    // @unchecked: all mutable state is touched only on the worker thread, inside libevent
    // callbacks or `run()`; `requestStop()` touches only `stopEvent`, behind its lock.
    let index: Int
    let base: OpaquePointer
    let http: OpaquePointer
    private var bound: OpaquePointer?
    private let router: Router
    private let configuration: HTTPServerConfiguration
    private let limits: ServerLimits
    private var logger: Logger
    private let metrics: RequestMetrics
    private var requestIDs: RequestIDGenerator
    private var deadlines: ConnectionDeadlines<OpaquePointer>
    /// Every open connection's bookkeeping, by bufferevent.
    private var connections: [OpaquePointer: Connection] = [:]
    private var sweepEvent: OpaquePointer?
    /// How often the sweep runs now, and when it last ran (to see that the loop was blocked).
    private var sweepInterval: UInt64
    private var lastSweep: UInt64 = 0
    /// The event that stops the worker; nil once freed, so a late ``requestStop()`` is a no-op.
    private let stopEvent = Mutex<EventHandle?>(nil)
    /// Runs, on the next turn of the loop, what cannot be done inside the callback that asked for it.
    private var soonEvent: OpaquePointer?
    /// Connections accepted past ``HTTPServerConfiguration/maxConnections``: answered 503 and closed soon.
    private var overCapacity: [OpaquePointer] = []
    /// Connections holding the start of a pipelined request when their previous answer was
    /// written: their next request gets its header callback soon, before evhttp parses it.
    private var pipelined: [OpaquePointer] = []
    private var refusedSinceLog = 0
    private var lastRefusalLog: UInt64 = 0
    private var headerHookUnavailableLogged = false
    /// evhttp's request callback, which our hook passes complete requests on to.
    private var originalRequestCallback: cle_request_callback?
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

    init(index: Int, listenerFD: Int32, router: Router, configuration: HTTPServerConfiguration, limits: ServerLimits, processNonce: UInt32) throws {
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
        self.limits = limits
        var logger = configuration.logger
        logger[metadataKey: "worker"] = "\(index)"
        self.logger = logger
        self.metrics = RequestMetrics(factory: configuration.metricsFactory)
        self.requestIDs = RequestIDGenerator(worker: index, processNonce: processNonce)
        self.deadlines = ConnectionDeadlines(requestTimeout: configuration.requestTimeout.nanoseconds)
        self.sweepInterval = max(min(configuration.requestTimeout.nanoseconds / 4, 250_000_000), 10_000_000)

        // No libevent read/write timeouts: they count time the loop spends blocked against the
        // client (a timer that expired while a handler ran fires before the socket is read) and
        // cut off complete requests and answers. ConnectionDeadlines applies the timeouts instead.
        evhttp_set_max_body_size(http, Int(configuration.maxBodySize))
        evhttp_set_max_headers_size(http, Int(configuration.maxHeadersSize))
        // Every method evhttp knows reaches the router, and so do the ones it does not know
        // (EVHTTP_REQ_UNKNOWN_, 1 << 15, in 2.1): QUERY gets 405 with Allow like any method a
        // path lacks, instead of libevent's 501 HTML page.
        let methods =
            EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_HEAD.rawValue
            | EVHTTP_REQ_PUT.rawValue | EVHTTP_REQ_DELETE.rawValue | EVHTTP_REQ_OPTIONS.rawValue
            | EVHTTP_REQ_PATCH.rawValue | EVHTTP_REQ_TRACE.rawValue | EVHTTP_REQ_CONNECT.rawValue
            | unknownMethodCommand
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

        sweepEvent = event_new(base, -1, Int16(EV_PERSIST), workerSweep, context)
        var sweepTime = timeval(tv_sec: 0, tv_usec: Int(sweepInterval / 1000))
        event_add(sweepEvent, &sweepTime)
        lastSweep = monotonicNanoseconds()
        soonEvent = event_new(base, -1, 0, workerSoon, context)
        stopEvent.withLock { $0 = event_new(base, -1, 0, workerStop, context).map(EventHandle.init(pointer:)) }
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
        // From now on a stop request is a no-op instead of touching a freed event.
        let stop = stopEvent.withLock { handle -> EventHandle? in
            defer { handle = nil }
            return handle
        }
        // From now on answers posted by pools are dropped (their requests die with evhttp).
        if let event = mailbox.close() { event_free(event) }
        if !awaiting.isEmpty {
            logger.warning("stopped with \(awaiting.count) deferred requests unanswered")
            awaiting.removeAll()
        }
        // Frees every remaining connection (their close callbacks release our references).
        evhttp_free(http)
        for bev in Array(connections.keys) { forget(bev) }
        if let sweepEvent { event_free(sweepEvent) }
        if let soonEvent { event_free(soonEvent) }
        if let stop { event_free(stop.pointer) }
        event_base_free(base)
    }

    /// Asks the worker, from any thread, to stop accepting and drain. Does nothing once the
    /// worker has stopped.
    func requestStop() {
        stopEvent.withLock { handle in
            if let handle { event_active(handle.pointer, 0, 0) }
        }
    }

    // MARK: - Connection bookkeeping (worker thread)

    fileprivate func makeBufferevent() -> OpaquePointer? {
        guard let bev = bufferevent_socket_new(base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else { return nil }
        // Our own reference keeps the bufferevent's memory valid until we let go, even after
        // evhttp frees a connection without telling us (one that never sent a full request).
        bufferevent_incref(bev)
        deadlines.accepted(bev, now: monotonicNanoseconds())
        let connection = Connection(
            bev: bev, worker: self, admitted: limits.admitConnection(),
            scanner: RequestHeadScanner(limit: 2 * configuration.maxHeadersSize + 64))
        connection.inputCallback = evbuffer_add_cb(
            bufferevent_get_input(bev), workerInputAdded, Unmanaged.passUnretained(connection).toOpaque())
        connections[bev] = connection
        if !connection.admitted {
            // evhttp sets the socket after this returns: answer and close it on the next turn.
            overCapacity.append(bev)
            event_active(soonEvent, 0, 0)
        }
        return bev
    }

    /// Bytes arrived on a connection (before evhttp parses them).
    fileprivate func inputAdded(_ connection: Connection, buffer: OpaquePointer, added: Int) {
        guard added > 0 else { return }
        if connection.hookedRequest == nil { hookRequest(of: connection) }
        if connection.scanner.inHead {
            let length = evbuffer_get_length(buffer)
            scan(buffer, from: length - min(added, length), into: connection)
        }
    }

    /// Gives the request evhttp is reading on `connection` our header callback, and the
    /// connection our close callback.
    private func hookRequest(of connection: Connection) {
        guard let argument = cle_bufferevent_callback_argument(connection.bev) else { return }
        let evcon = OpaquePointer(argument)
        if !connection.closeHooked {
            connection.closeHooked = true
            evhttp_connection_set_closecb(evcon, workerConnectionClosed, Unmanaged.passUnretained(self).toOpaque())
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let request = cle_connection_current_request(evcon),
            let previous = cle_request_hook(request, workerRequestArrived, context, workerHeadersParsed)
        else {
            if !headerHookUnavailableLogged {
                headerHookUnavailableLogged = true
                logger.warning(
                    "libevent \(String(cString: event_get_version())) does not have the layout EventHTTP reads: framing checks and body reservations run only after bodies are read, and libevent answers its own refusals with HTML"
                )
            }
            return
        }
        // evhttp's own request callback (evhttp_handle_request), the same for every request.
        let ours: cle_request_callback = workerRequestArrived
        if originalRequestCallback == nil && unsafeBitCast(previous, to: UnsafeRawPointer.self) != unsafeBitCast(ours, to: UnsafeRawPointer.self) {
            originalRequestCallback = previous
        }
        connection.hookedRequest = request
    }

    /// Feeds the scanner the bytes of `buffer` from `start` on, until the head ends.
    private func scan(_ buffer: OpaquePointer, from start: Int, into connection: Connection) {
        var position = evbuffer_ptr()
        guard evbuffer_ptr_set(buffer, &position, start, EVBUFFER_PTR_SET) == 0 else { return }
        var remaining = evbuffer_get_length(buffer) - start
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { scratch in
            while remaining > 0 && connection.scanner.inHead {
                let count = Int(evbuffer_copyout_from(buffer, &position, scratch.baseAddress, min(remaining, scratch.count)))
                guard count > 0 else { return }
                connection.scanner.scan(UnsafeRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(scratch)[..<count]))
                remaining -= count
                guard evbuffer_ptr_set(buffer, &position, count, EVBUFFER_PTR_ADD) == 0 else { return }
            }
        }
    }

    /// The headers of `request` are parsed and its body not read yet.
    fileprivate func headersParsed(_ request: OpaquePointer) {
        guard let bev = bufferevent(of: request), let connection = connections[bev] else { return }
        connection.checkedRequest = request
        let command = evhttp_request_get_command(request)
        let headers = readHeaders(evhttp_request_get_input_headers(request))
        connection.checkedHeaders = headers
        switch checkFraming(headers, findings: connection.scanner.findings, maxBodySize: configuration.maxBodySize) {
        case .failure(let error):
            refuse(request, on: connection, with: error)
        case .success(let framing):
            let declared: Int
            switch framing {
            case .none: declared = 0
            case .length(let length): declared = length
            case .chunked: declared = configuration.maxBodySize
            }
            guard declared > 0, libeventReadsBody(command) else { return }
            if limits.reserveBody(declared) {
                connection.reservedBodyBytes += declared
            } else {
                refuse(request, on: connection, with: .bodyBuffersFull)
            }
        }
    }

    /// Makes evhttp read no body for `request` (so it is delivered at once) and answers it with
    /// `error` when it is.
    private func refuse(_ request: OpaquePointer, on connection: Connection, with error: HTTPError) {
        let headers = evhttp_request_get_input_headers(request)
        while evhttp_remove_header(headers, "Content-Length") == 0 {}
        while evhttp_remove_header(headers, "Transfer-Encoding") == 0 {}
        cle_request_forget_chunked(request)
        connection.refusal = (request, error)
    }

    fileprivate func connectionClosed(_ connection: OpaquePointer) {
        guard let bev = evhttp_connection_get_bufferevent(connection) else { return }
        forget(bev)
    }

    /// Releases everything held for a connection evhttp has freed (or is freeing), once.
    private func forget(_ bev: OpaquePointer) {
        guard let connection = connections.removeValue(forKey: bev) else { return }
        if let last = deadlines.closed(bev), last.isInFlight { metrics.inFlight.decrement() }
        limits.releaseBody(connection.reservedBodyBytes)
        if connection.admitted { limits.releaseConnection() }
        if let entry = connection.inputCallback {
            evbuffer_remove_cb_entry(bufferevent_get_input(bev), entry)
        }
        bufferevent_decref(bev)
    }

    fileprivate func responseCompleted(_ request: OpaquePointer) {
        guard let bev = bufferevent(of: request) else { return }
        if deadlines.responseCompleted(bev, now: monotonicNanoseconds()) {
            metrics.inFlight.decrement()
        }
        guard let connection = connections[bev] else { return }
        limits.releaseBody(connection.reservedBodyBytes)
        connection.reservedBodyBytes = 0
        // The next request is a new one even if libevent reuses the address.
        connection.hookedRequest = nil
        if connection.closeAfterResponse {
            deadlines.close(bev)
            shutdownSocket(bufferevent_getfd(bev))
        } else if evbuffer_get_length(bufferevent_get_input(bev)) > 0 {
            // evhttp parses the rest on the next turn (a deferred callback it schedules after
            // this returns); ours, activated first, runs before it and hooks that request.
            pipelined.append(bev)
            event_active(soonEvent, 0, 0)
        }
    }

    /// What callbacks asked to do on the next turn of the loop.
    fileprivate func runSoon() {
        let refused = overCapacity
        overCapacity.removeAll()
        for bev in refused where connections[bev] != nil {
            refuseOverCapacity(bev)
        }
        let waiting = pipelined
        pipelined.removeAll()
        for bev in waiting {
            if let connection = connections[bev], connection.hookedRequest == nil {
                hookRequest(of: connection)
            }
        }
    }

    /// Answers a connection accepted past the connection limit with 503 and closes it, without
    /// reading anything from it.
    private func refuseOverCapacity(_ bev: OpaquePointer) {
        let fd = bufferevent_getfd(bev)
        deadlines.close(bev)
        guard fd >= 0 else { return }
        let error = HTTPError.tooManyConnections
        var head = "HTTP/1.1 503 \(reasonPhrase(503))\r\nContent-Type: application/json\r\n"
        for (name, value) in error.headers { head += "\(name): \(value)\r\n" }
        head += "X-Request-Id: \(requestIDs.next(clientID: nil))\r\nConnection: close\r\nContent-Length: \(error.jsonBody.count)\r\n\r\n"
        let bytes = Array(head.utf8) + error.jsonBody
        // A fresh socket's send buffer takes this whole; if not, the client gets a close.
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        shutdownSocket(fd)
        refusedSinceLog += 1
        let now = monotonicNanoseconds()
        if now &- lastRefusalLog >= 1_000_000_000 {
            logger.warning("refused \(refusedSinceLog) connections over the limit of \(limits.maxConnections)")
            refusedSinceLog = 0
            lastRefusalLog = now
        }
    }

    fileprivate func sweep() {
        let now = monotonicNanoseconds()
        // A sweep that runs late means the loop was blocked (a handler ran long on it): that
        // time is the server's, not the clients'.
        let gap = now &- lastSweep
        lastSweep = now
        if gap > sweepInterval + sweepInterval / 2 {
            deadlines.loopStalled(for: gap - sweepInterval)
        }
        // Connections evhttp freed without a close callback: their callbacks were cleared.
        for (bev, connection) in connections where !connection.closeHooked {
            var eventCallback: bufferevent_event_cb? = nil
            bufferevent_getcb(bev, nil, nil, &eventCallback, nil)
            if eventCallback == nil { forget(bev) }
        }
        // How much of each answer being written its client has taken.
        for (bev, state) in deadlines.states {
            if case .writing = state {
                deadlines.outputPending(bev, evbuffer_get_length(bufferevent_get_output(bev)), now: now)
            }
        }
        let late = deadlines.expired(now: now) { bev in cle_unread_bytes(bufferevent_getfd(bev)) > 0 }
        for bev in late {
            logger.debug("closing a connection whose client was too slow to send a request or read an answer")
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
            sweepInterval = 10_000_000
            lastSweep = now
            var fast = timeval(tv_sec: 0, tv_usec: Int(sweepInterval / 1000))
            event_add(sweepEvent, &fast)
        }
    }

    // MARK: - Requests (worker thread)

    fileprivate func handle(_ request: OpaquePointer) {
        let started = monotonicNanoseconds()
        let bev = bufferevent(of: request)
        let connection = bev.flatMap { connections[$0] }
        if let bev, deadlines.requestStarted(bev) { metrics.inFlight.increment() }
        if let connection, !connection.closeHooked, let evcon = evhttp_request_get_connection(request) {
            connection.closeHooked = true
            evhttp_connection_set_closecb(evcon, workerConnectionClosed, Unmanaged.passUnretained(self).toOpaque())
        }
        evhttp_request_set_on_complete_cb(request, workerResponseCompleted, Unmanaged.passUnretained(self).toOpaque())

        // What the hooks learnt about this request; then the scanner moves on to the next one,
        // whose first bytes may already be buffered (pipelining).
        let findings = connection?.scanner.findings ?? RequestHeadScanner.Findings()
        let headBytes = connection?.scanner.scanned ?? 0
        let checkedEarly = connection?.checkedRequest == request
        // The header callback read them already (the request body does not change them).
        let checkedHeaders = checkedEarly ? connection?.checkedHeaders : nil
        var refusal: HTTPError?
        if let connection {
            if let pending = connection.refusal, pending.request == request { refusal = pending.error }
            connection.refusal = nil
            connection.checkedRequest = nil
            connection.checkedHeaders = nil
            connection.hookedRequest = nil
            connection.scanner.startNextHead()
            scan(bufferevent_get_input(connection.bev), from: 0, into: connection)
        }

        let command = evhttp_request_get_command(request)
        let isHead = command == EVHTTP_REQ_HEAD
        let method = HTTPMethod(command)
        let methodName = isHead ? "HEAD" : (method?.rawValue ?? unknownMethodName(command, findings: findings))
        // evhttp clears the URI of a request it refuses before passing it on (requestArrived).
        let rawURI = evhttp_request_get_uri(request).map { String(cString: $0) }
        let (path, rawQuery) = rawURI.map(splitTarget) ?? ("-", "")
        let headers = checkedHeaders ?? readHeaders(evhttp_request_get_input_headers(request))
        let requestID = requestIDs.next(clientID: headers["X-Request-Id"])

        var exchange = Exchange(
            request: request, connection: connection, requestID: requestID, path: path, route: "unmatched",
            methodName: methodName, isHead: isHead,
            // libevent reads no body for HEAD, TRACE or a method it does not know: bytes sent as
            // one are still in the connection and would be parsed as the next request. Close
            // instead of answering them.
            close: !libeventReadsBody(command) && announcesBody(headers), started: started)
        if rawURI == nil {
            cle_request_answer_as_http11_if_unparsed(request)
            refusal = libeventRefusal(headers: headers, findings: findings, headBytes: headBytes, headersChecked: checkedEarly)
        } else if refusal == nil && !checkedEarly {
            // No header callback ran (libevent's layout did not match): check now, after the body.
            if case .failure(let error) = checkFraming(headers, findings: findings, maxBodySize: configuration.maxBodySize) {
                refusal = error
            } else if let connection, let length = Int(exactly: evbuffer_get_length(evhttp_request_get_input_buffer(request))), length > 0 {
                if limits.reserveBody(length) { connection.reservedBodyBytes += length } else { refusal = .bodyBuffersFull }
            }
        }
        let response: HTTPResponse
        if let refusal {
            exchange.close = true
            response = refusal.response
        } else if let method {
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
                response = HTTPError.methodNotAllowed(methodName, allowed: allowed).response
            case .notFound:
                response = HTTPError.notFound("No route for \(path).").response
            }
        } else {
            // QUERY, CONNECT or any other method no route can have.
            if command == EVHTTP_REQ_CONNECT {
                // evhttp keeps a CONNECT connection open whatever the answer says.
                exchange.close = true
                connection?.closeAfterResponse = true
                response = HTTPError(status: 501, code: "not_implemented", message: "CONNECT is not supported: this server is not a proxy.").response
            } else {
                let allowed = router.allowedMethods(path: path)
                response =
                    allowed.isEmpty
                    ? HTTPError.notFound("No route for \(path).").response
                    : HTTPError.methodNotAllowed(methodName, allowed: allowed).response
            }
        }
        dispatch(response, for: exchange)
    }

    /// The JSON answer to a request evhttp refused while reading it (it would have sent its own
    /// HTML page): which part it refused is known from whether the header callback ran.
    private func libeventRefusal(headers: HTTPHeaders, findings: RequestHeadScanner.Findings, headBytes: Int, headersChecked: Bool) -> HTTPError {
        if headersChecked {
            // Refused while reading the body: a Content-Length body is checked before it is read,
            // so this is a chunked one whose framing broke or that grew past the limit.
            return .malformedRequest("The chunked body is malformed or larger than \(configuration.maxBodySize) bytes.")
        }
        if findings.overlong || headBytes > configuration.maxHeadersSize {
            return HTTPError(
                status: 431, code: "headers_too_large", message: "The request line and headers are larger than \(configuration.maxHeadersSize) bytes.")
        }
        // Some 2.1.12 builds refuse ambiguous framing (Transfer-Encoding with Content-Length)
        // before the header callback: say which rule the headers broke when they are all there.
        if case .failure(let error) = checkFraming(headers, findings: findings, maxBodySize: configuration.maxBodySize) {
            return error
        }
        return .malformedRequest("The request line or a header line is malformed.")
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
        let now = monotonicNanoseconds()
        if let connection = exchange.connection, connections[connection.bev] === connection {
            // From now on the client's clock runs while it does not read the answer.
            deadlines.responseStarted(connection.bev, pending: evbuffer_get_length(bufferevent_get_output(connection.bev)), now: now)
        }
        let elapsed = now &- exchange.started
        metrics.record(route: exchange.route, method: exchange.methodName, status: response.status, nanoseconds: elapsed)
        logger.info(
            "\(escapedForLog(exchange.methodName)) \(escapedForLog(exchange.path)) \(response.status) \(response.body.count)B \(elapsed / 1000)µs",
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

    private func bufferevent(of request: OpaquePointer) -> OpaquePointer? {
        evhttp_request_get_connection(request).flatMap(evhttp_connection_get_bufferevent)
    }

    /// A hooked request arrived complete, or evhttp refused it: refusals (no URI left) are
    /// answered here with the JSON body, complete requests go on through evhttp's own callback
    /// (which checks the method and calls ``handle(_:)``).
    fileprivate func requestArrived(_ request: OpaquePointer) {
        if evhttp_request_get_uri(request) == nil {
            handle(request)
        } else if let originalRequestCallback {
            originalRequestCallback(request, UnsafeMutableRawPointer(http))
        } else {
            handle(request)
        }
    }
}

/// What a worker keeps for one connection (worker thread only).
final class Connection {
    let bev: OpaquePointer
    unowned(unsafe) let worker: Worker
    /// Whether it counts against ``HTTPServerConfiguration/maxConnections`` (it was under it).
    let admitted: Bool
    var scanner: RequestHeadScanner
    /// The evbuffer callback that feeds ``scanner``.
    var inputCallback: OpaquePointer?
    /// Whether our close callback is on the evhttp connection.
    var closeHooked = false
    /// The request that has our header callback; nil once it has been delivered.
    var hookedRequest: OpaquePointer?
    /// The request whose headers the header callback checked, and those headers.
    var checkedRequest: OpaquePointer?
    var checkedHeaders: HTTPHeaders?
    /// An answer decided in the header callback, for the request it was decided for.
    var refusal: (request: OpaquePointer, error: HTTPError)?
    /// Body bytes reserved against ``HTTPServerConfiguration/maxBufferedBodyBytes``.
    var reservedBodyBytes = 0
    /// Shut the socket down once the current answer is written (evhttp keeps CONNECT open).
    var closeAfterResponse = false

    init(bev: OpaquePointer, worker: Worker, admitted: Bool, scanner: RequestHeadScanner) {
        self.bev = bev
        self.worker = worker
        self.admitted = admitted
        self.scanner = scanner
    }
}

/// libevent 2.1's command for a method it has no name for (`EVHTTP_REQ_UNKNOWN_` in http-internal.h).
let unknownMethodCommand: UInt32 = 1 << 15

/// Whether evhttp reads a body for this method (`evhttp_method_may_have_body` in 2.1).
func libeventReadsBody(_ command: evhttp_cmd_type) -> Bool {
    switch command {
    case EVHTTP_REQ_POST, EVHTTP_REQ_PUT, EVHTTP_REQ_PATCH, EVHTTP_REQ_GET, EVHTTP_REQ_DELETE,
        EVHTTP_REQ_OPTIONS, EVHTTP_REQ_CONNECT:
        true
    default:
        false
    }
}

/// The name of a method HTTPMethod does not cover, as the client spelt it when the scanner saw it.
private func unknownMethodName(_ command: evhttp_cmd_type, findings: RequestHeadScanner.Findings) -> String {
    if command == EVHTTP_REQ_CONNECT { return "CONNECT" }
    let spelt = String(decoding: findings.method, as: UTF8.self)
    return spelt.isEmpty ? "OTHER" : spelt
}

/// A libevent event, used only under a lock or by the loop that owns it.
struct EventHandle: @unchecked Sendable {
    let pointer: OpaquePointer
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

private func workerSoon(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    worker(context).runSoon()
}

private func workerInputAdded(_ buffer: OpaquePointer?, _ info: UnsafePointer<evbuffer_cb_info>?, _ context: UnsafeMutableRawPointer?) {
    guard let buffer, let info, let context else { return }
    let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
    connection.worker.inputAdded(connection, buffer: buffer, added: info.pointee.n_added)
}

private func workerHeadersParsed(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let request else { return 0 }
    worker(context).headersParsed(request)
    return 0
}

private func workerRequestArrived(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request else { return }
    worker(context).requestArrived(request)
}

/// One request between its arrival and its answer: what the answer and the access log need.
struct Exchange {
    let request: OpaquePointer
    /// The connection it arrived on.
    let connection: Connection?
    let requestID: String
    let path: String
    var route: String
    let methodName: String
    let isHead: Bool
    var close: Bool
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
