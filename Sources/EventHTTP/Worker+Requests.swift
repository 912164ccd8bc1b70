import CLibevent
import CoreMetrics

// Requests on the worker thread: what the hooks learnt, the head read, the refusals, the router.

extension Worker {
    /// What the header callback learnt about a request, taken from its connection.
    struct EarlyChecks {
        var findings = RequestHeadScanner.Findings()
        /// Bytes of the head the scanner read.
        var headBytes = 0
        /// Whether the header callback ran for this request (and checked its framing).
        var ran = false
        /// The headers it read (the body does not change them).
        var headers: HTTPHeaders?
        /// The answer it decided, if it refused the request.
        var refusal: HTTPError?
    }

    /// The request line and headers, as the router and the access log see them.
    struct Head {
        let command: evhttp_cmd_type
        let method: HTTPMethod?
        let methodName: String
        let isHead: Bool
        /// Nil when evhttp refused the request (it clears the URI before passing it on).
        let rawURI: String?
        let path: String
        let rawQuery: Substring
        let headers: HTTPHeaders
    }

    /// A complete request, or one evhttp refused while reading it: checked, routed and answered.
    func handle(_ request: OpaquePointer) {
        let started = monotonicNanoseconds()
        let connection = track(request)
        let early = connection.map { takeEarlyChecks(for: request, from: $0) } ?? EarlyChecks()
        let head = readHead(of: request, early: early)
        var exchange = Exchange(
            request: request, connection: connection, requestID: requestIDs.next(clientID: head.headers["X-Request-Id"]), path: head.path,
            route: "unmatched", methodName: head.methodName, isHead: head.isHead,
            // libevent reads no body for HEAD, TRACE or a method it does not know: bytes sent as
            // one are still in the connection and would be parsed as the next request. Close
            // instead of answering them.
            close: !libeventReadsBody(head.command) && announcesBody(head.headers), started: started)
        let response: HTTPResponse
        if let refusal = refusal(of: request, head: head, early: early, connection: connection) {
            exchange.close = true
            response = refusal.response
        } else if let method = head.method {
            response = route(request, method: method, head: head, exchange: &exchange)
        } else {
            response = answerUnroutable(head, connection: connection, exchange: &exchange)
        }
        dispatch(response, for: exchange)
    }

    /// Counts the request in flight and makes sure its connection's close and its completion
    /// reach this worker; returns its connection's bookkeeping.
    func track(_ request: OpaquePointer) -> Connection? {
        let bev = bufferevent(of: request)
        let connection = bev.flatMap { self.connection(for: $0) }
        if let bev, deadlines.requestStarted(bev) { metrics.inFlight.increment() }
        if let connection, !connection.closeHooked, let evcon = evhttp_request_get_connection(request) {
            hookClose(of: connection, evcon: evcon)
        }
        if let connection {
            // Passed unretained: see responseCompleted(on:).
            evhttp_request_set_on_complete_cb(request, connectionResponseCompleted, Unmanaged.passUnretained(connection).toOpaque())
        } else {
            evhttp_request_set_on_complete_cb(request, workerResponseCompleted, Unmanaged.passUnretained(self).toOpaque())
        }
        return connection
    }

    /// Takes what the hooks learnt about `request`; then the connection's scanner moves on to the
    /// next request, whose first bytes may already be buffered (pipelining).
    func takeEarlyChecks(for request: OpaquePointer, from connection: Connection) -> EarlyChecks {
        var early = EarlyChecks(findings: connection.scanner.findings, headBytes: connection.scanner.scanned)
        early.ran = connection.checkedRequest == request
        if early.ran { early.headers = connection.checkedHeaders }
        if let pending = connection.refusal, pending.request == request { early.refusal = pending.error }
        connection.refusal = nil
        connection.checkedRequest = nil
        connection.checkedHeaders = nil
        connection.hookedRequest = nil
        connection.startNextHead()
        scan(bufferevent_get_input(connection.bev), from: 0, into: connection)
        return early
    }

    func readHead(of request: OpaquePointer, early: EarlyChecks) -> Head {
        let command = evhttp_request_get_command(request)
        let isHead = command == EVHTTP_REQ_HEAD
        let method = HTTPMethod(command)
        let rawURI = evhttp_request_get_uri(request).map { String(cString: $0) }
        let (path, rawQuery) = rawURI.map(splitTarget) ?? ("-", "")
        return Head(
            command: command, method: method,
            methodName: isHead ? "HEAD" : (method?.rawValue ?? unknownMethodName(command, findings: early.findings)),
            isHead: isHead, rawURI: rawURI, path: path, rawQuery: rawQuery,
            headers: early.headers ?? readHeaders(evhttp_request_get_input_headers(request)))
    }

    /// The error `request` is refused with, if any: what the header callback decided, what evhttp
    /// refused, or (when the header callback could not run) the framing checked and the body's
    /// bytes reserved now, after the body was read.
    func refusal(of request: OpaquePointer, head: Head, early: EarlyChecks, connection: Connection?) -> HTTPError? {
        if head.rawURI == nil {
            cle_request_answer_as_http11_if_unparsed(request)
            return libeventRefusal(headers: head.headers, findings: early.findings, headBytes: early.headBytes, headersChecked: early.ran)
        }
        if let refusal = early.refusal { return refusal }
        guard !early.ran else { return nil }
        if case .failure(let error) = checkFraming(head.headers, findings: early.findings, maxBodySize: configuration.maxBodySize) {
            return error
        }
        if let connection, let length = Int(exactly: evbuffer_get_length(evhttp_request_get_input_buffer(request))), length > 0 {
            guard limits.reserveBody(length) else { return .bodyBuffersFull }
            connection.reservedBodyBytes += length
        }
        return nil
    }

    /// The router's answer for a method it knows.
    func route(_ request: OpaquePointer, method: HTTPMethod, head: Head, exchange: inout Exchange) -> HTTPResponse {
        switch router.lookup(method: method, path: head.path) {
        case .found(let route, let parameters):
            exchange.route = route.pattern
            exchange.routeIndex = route.index
            var httpRequest = HTTPRequest(
                method: method, path: head.path, query: QueryParameters(head.rawQuery), headers: head.headers,
                body: readBody(evhttp_request_get_input_buffer(request)), requestID: exchange.requestID, isHead: head.isHead)
            httpRequest.pathParameters = parameters
            httpRequest.route = route.pattern
            return respond(route.handler, httpRequest)
        case .methodNotAllowed(let allowed):
            return HTTPError.methodNotAllowed(head.methodName, allowed: allowed).response
        case .notFound:
            return HTTPError.notFound("No route for \(head.path).").response
        }
    }

    /// The answer to QUERY, CONNECT or any other method no route can have.
    func answerUnroutable(_ head: Head, connection: Connection?, exchange: inout Exchange) -> HTTPResponse {
        if head.command == EVHTTP_REQ_CONNECT {
            // evhttp keeps a CONNECT connection open whatever the answer says.
            exchange.close = true
            connection?.closeAfterResponse = true
            return HTTPError(status: 501, code: "not_implemented", message: "CONNECT is not supported: this server is not a proxy.").response
        }
        let allowed = router.allowedMethods(path: head.path)
        return allowed.isEmpty
            ? HTTPError.notFound("No route for \(head.path).").response
            : HTTPError.methodNotAllowed(head.methodName, allowed: allowed).response
    }

    /// The JSON answer to a request evhttp refused while reading it (it would have sent its own
    /// HTML page): which part it refused is known from whether the header callback ran.
    func libeventRefusal(headers: HTTPHeaders, findings: RequestHeadScanner.Findings, headBytes: Int, headersChecked: Bool) -> HTTPError {
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

    func readHeaders(_ list: UnsafeMutablePointer<evkeyvalq>?) -> HTTPHeaders {
        // Counted first: the array is allocated once, not grown.
        var count = 0
        var entry = cle_headers_first(list)
        while let header = entry {
            count += 1
            entry = cle_headers_next(header)
        }
        var headers = HTTPHeaders()
        headers.reserveCapacity(count)
        entry = cle_headers_first(list)
        while let header = entry {
            if let key = header.pointee.key, let value = header.pointee.value {
                headers.append(name: String(cString: key), value: String(cString: value))
            }
            entry = cle_headers_next(header)
        }
        return headers
    }

    func readBody(_ buffer: OpaquePointer?) -> [UInt8] {
        let length = evbuffer_get_length(buffer)
        guard length > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: length) { raw, count in
            count = max(0, Int(evbuffer_copyout(buffer, raw.baseAddress, length)))
        }
    }
}
