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

    func send(_ response: HTTPResponse, to request: OpaquePointer, requestID: String, isHead: Bool, close: Bool) {
        let output = evhttp_request_get_output_headers(request)
        let hasBody = response.status != 204 && response.status != 304 && !(100..<200).contains(response.status)
        var body = response.body
        var gzipped = false
        let compression = configuration.compression
        let compressible = compression.isEnabled && ResponseCompression.isCompressible(contentType: response.header("Content-Type"))
        if compressible && hasBody {
            let acceptEncoding = evhttp_find_header(evhttp_request_get_input_headers(request), "Accept-Encoding").map { String(cString: $0) }
            (body, gzipped) = compression.encode(response, acceptEncoding: acceptEncoding)
        }
        for (name, value) in response.headers {
            evhttp_add_header(output, name, value)
        }
        // A 304 stands for the answer a GET would get: the same Vary.
        if compressible || (response.status == 304 && compression.isEnabled) {
            evhttp_add_header(output, "Vary", "Accept-Encoding")
        }
        if gzipped {
            evhttp_add_header(output, "Content-Encoding", "gzip")
        }
        evhttp_add_header(output, "X-Request-Id", requestID)
        if draining || close {
            evhttp_add_header(output, "Connection", "close")
        }
        if hasBody {
            evhttp_add_header(output, "Content-Length", String(body.count))
        }
        if hasBody && !isHead && !body.isEmpty {
            let buffer = evhttp_request_get_output_buffer(request)
            body.withUnsafeBytes { raw in
                _ = evbuffer_add(buffer, raw.baseAddress, raw.count)
            }
        }
        evhttp_send_reply(request, Int32(response.status), reasonPhrase(response.status), nil)
    }
}
