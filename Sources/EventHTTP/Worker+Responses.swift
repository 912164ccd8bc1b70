import CLibevent
import Logging

// Answers: sent at once, or computed on a pool and sent when the pool posts them back; then the
// deadline, the request metrics and the access log line.

extension Worker {
    /// Sends `response`, or, when it is deferred, hands its work on (to a pool, or whatever
    /// ``HTTPResponse/later(from:_:)`` names) and sends the result when it is posted back
    /// (``completeDeferred()``).
    func dispatch(_ response: HTTPResponse, for exchange: Exchange) {
        if let start = response.streamStart {
            startStream(response, start, for: exchange)
            return
        }
        guard let deferred = response.deferred else {
            finish(response, for: exchange)
            return
        }
        let ticket = nextTicket
        nextTicket &+= 1
        let responder = Responder(mailbox: mailbox, ticket: ticket, requestID: exchange.requestID, logger: logger)
        // Registered first: a fast component may post the answer before `start` returns.
        awaiting[ticket] = exchange
        if !deferred.start(responder) {
            awaiting[ticket] = nil
            finish(HTTPError.overloaded(pool: deferred.queue).response, for: exchange)
        }
    }

    /// Sends the answers posted back and the parts of streamed answers (worker thread, woken
    /// by the mailbox event).
    func completeDeferred() {
        for (ticket, delivery) in mailbox.takeAll() {
            switch delivery {
            case .answer(let response):
                guard let exchange = awaiting.removeValue(forKey: ticket) else { continue }
                // Reading is off while a request is handled, so libevent cannot have freed the
                // connection meanwhile; if it had, evhttp_send_reply frees the orphan request.
                dispatch(response, for: exchange)
            case .chunk(let bytes):
                writeChunk(bytes, ticket: ticket)
            case .end(let bytes):
                endStream(bytes, ticket: ticket)
            }
        }
    }

    func finish(_ response: HTTPResponse, for exchange: Exchange) {
        send(response, to: exchange.request, requestID: exchange.requestID, isHead: exchange.isHead, close: exchange.close)
        let now = monotonicNanoseconds()
        if let connection = exchange.connection, connection.isOpen {
            // From now on the client's clock runs while it does not read the answer.
            deadlines.responseStarted(connection.bev, pending: evbuffer_get_length(bufferevent_get_output(connection.bev)), now: now)
        }
        let elapsed = now &- exchange.started
        metrics.record(route: exchange.route, routeIndex: exchange.routeIndex, method: exchange.methodName, status: response.status, nanoseconds: elapsed)
        logger.info(
            "\(escapedForLog(exchange.methodName)) \(escapedForLog(exchange.path)) \(response.status) \(response.body.count)B \(elapsed / 1000)µs",
            metadata: ["request_id": .string(exchange.requestID)])
        if let connection = exchange.connection, connection.isOpen, !exchange.close, !draining, keepsConnection(exchange.request) {
            writeNow(connection)
        }
    }

    /// Whether evhttp keeps the connection of `request` open after its answer: HTTP/1.1 with
    /// `Connection: close` neither asked nor answered (evhttp's own test, in `evhttp_send_done`).
    private func keepsConnection(_ request: OpaquePointer) -> Bool {
        func asksToClose(_ headers: UnsafeMutablePointer<evkeyvalq>?) -> Bool {
            guard let value = evhttp_find_header(headers, "Connection") else { return false }
            return evutil_ascii_strcasecmp(value, "close") == 0
        }
        return cle_request_version(request) >= 0x0101 && !asksToClose(evhttp_request_get_input_headers(request))
            && !asksToClose(evhttp_request_get_output_headers(request))
    }

    /// Writes the answer evhttp has just queued on `connection` to its socket now, instead of on
    /// the loop's next turn.
    ///
    /// evhttp queues an answer in the connection's buffer and writes it when the loop next polls
    /// the socket as writable: after every other request made ready by the same poll has been
    /// handled. Under load a poll readies hundreds of requests, so every answer waited for the
    /// whole batch. What the socket takes now leaves now; when it took everything, evhttp is told
    /// the answer is written (its write callback, as libevent would run it), so the connection
    /// reads its next request and the write event it asked for is withdrawn before the loop polls.
    /// A connection that closes after its answer is left to evhttp, which frees it in that
    /// callback: run from here, that would free it while the evhttp frames that called the
    /// handler are still running.
    func writeNow(_ connection: Connection) {
        let output = bufferevent_get_output(connection.bev)
        guard evbuffer_get_length(output) > 0 else { return }
        // A bufferevent freezes its output's front so that only its own write drains it.
        evbuffer_unfreeze(output, 1)
        let written = evbuffer_write(output, bufferevent_getfd(connection.bev))
        evbuffer_freeze(output, 1)
        if written > 0, evbuffer_get_length(output) == 0 {
            bufferevent_trigger(connection.bev, Int16(EV_WRITE), 0)
        }
    }

    func respond(_ handler: @escaping HTTPHandler, _ request: HTTPRequest) -> HTTPResponse {
        do {
            return try handler(request)
        } catch let error as HTTPError {
            return error.response
        } catch {
            logger.error("handler failed: \(error)", metadata: ["request_id": .string(request.requestID)])
            return HTTPError.internalError.response
        }
    }

    /// Writes `response` through evhttp: the lines evhttp only passes on as one block after the
    /// reason phrase (``ResponseHead``), the ones it reads in its header list, then the body.
    func send(_ response: HTTPResponse, to request: OpaquePointer, requestID: String, isHead: Bool, close: Bool) {
        let output = evhttp_request_get_output_headers(request)
        let status = response.status
        let hasBody = status != 204 && status != 304 && !(100..<200).contains(status)
        var head = ResponseHead(in: responseHead, reason: reasonPhrase(status))
        var contentType: String?
        var typed = false
        var dated = false
        for (name, value) in response.headers {
            switch HeaderRole(name) {
            case .plain:
                head.append(name: name, value: value)
            case .contentType:
                if contentType == nil { contentType = value }
                if head.append(name: name, value: value) { typed = true }
            case .date:
                if evhttp_add_header(output, name, value) == 0 { dated = true }
            case .libevent:
                evhttp_add_header(output, name, value)
            }
        }
        var body = response.body
        var gzipped = false
        let compression = configuration.compression
        let compressible = compression.isEnabled && ResponseCompression.isCompressible(contentType: contentType)
        if compressible && hasBody {
            (body, gzipped) = compression.encode(response) {
                evhttp_find_header(evhttp_request_get_input_headers(request), "Accept-Encoding").map { String(cString: $0) }
            }
        }
        // A 304 stands for the answer a GET would get: the same Vary.
        if compressible || (status == 304 && compression.isEnabled) {
            head.append(line: "\r\nVary: Accept-Encoding")
        }
        if gzipped {
            head.append(line: "\r\nContent-Encoding: gzip")
        }
        head.append(knownName: "X-Request-Id", value: requestID)
        if draining || close {
            evhttp_add_header(output, "Connection", "close")
        }
        if hasBody {
            withDecimal(body.count) { _ = evhttp_add_header(output, "Content-Length", $0) }
        }
        // evhttp dates HTTP/1.1 answers that have no Date, formatting it each time; this is the
        // same value, formatted once a second, in the same place (after the lines above).
        if !dated, cle_request_version(request) >= 0x0101 {
            httpDate.withCurrent { _ = evhttp_add_header(output, "Date", $0) }
        }
        if hasBody && !isHead && !body.isEmpty {
            let buffer = evhttp_request_get_output_buffer(request)
            body.withUnsafeBytes { raw in
                _ = evbuffer_add(buffer, raw.baseAddress, raw.count)
            }
        }
        // evhttp adds its default type to an answer with a body and no Content-Type in its list;
        // the type is in the block, so the default is there only for an answer that has none.
        if !typed { evhttp_set_default_content_type(http, libeventDefaultContentType) }
        head.withCString { evhttp_send_reply(request, Int32(status), $0, nil) }
        if !typed { evhttp_set_default_content_type(http, nil) }
    }
}
