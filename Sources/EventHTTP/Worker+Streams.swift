import CLibevent
import Logging
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Streamed answers on the worker thread (HTTPResponse.stream): the head sent at once, each part
// posted by the producer written as a chunk, the producer told when its parts reached the socket
// and when the client left, a client that stops reading disconnected.

/// A streamed answer being written (worker thread only). A class: the sweep updates every
/// stream's progress in place, without writing the dictionary it walks (which would copy it).
final class OpenStream {
    let exchange: Exchange
    let stream: ResponseStream
    /// Parts written into the connection's output so far, and their bytes.
    var parts: UInt64 = 0
    var bytes = 0
    /// The last time the client had taken everything, or some of what was pending (ns), and
    /// how much was pending then.
    var progressAt: UInt64
    var pending = 0
    /// Whether the body goes out chunked (HTTP/1.1), or raw until the connection closes.
    var chunked = false
    /// Whether evhttp calls ``Worker/streamWritten(_:)`` when the connection's output drains:
    /// set by the first part, which evhttp writes; until then a part cannot skip evhttp.
    var drainCallbackSet = false

    init(exchange: Exchange, stream: ResponseStream, progressAt: UInt64) {
        self.exchange = exchange
        self.stream = stream
        self.progressAt = progressAt
    }
}

extension Worker {
    /// Starts a streamed answer: hands the stream to its producer, then sends the head.
    func startStream(_ response: HTTPResponse, _ start: StreamStart, for exchange: Exchange) {
        if exchange.isHead {
            var head = response
            head.streamStart = nil
            finish(head, for: exchange)
            return
        }
        let ticket = nextTicket
        nextTicket &+= 1
        let stream = ResponseStream(mailbox: mailbox, ticket: ticket)
        let now = monotonicNanoseconds()
        // Registered first: the producer may post its first part before `start` returns.
        streams[ticket] = OpenStream(exchange: exchange, stream: stream, progressAt: now)
        guard start.start(stream) else {
            streams[ticket] = nil
            finish(HTTPError.overloaded(pool: start.queue).response, for: exchange)
            return
        }
        exchange.connection?.streamTicket = ticket
        let output = evhttp_request_get_output_headers(exchange.request)
        for (name, value) in response.headers {
            evhttp_add_header(output, name, value)
        }
        evhttp_add_header(output, "X-Request-Id", exchange.requestID)
        if draining || exchange.close {
            evhttp_add_header(output, "Connection", "close")
        }
        // Headers here go in evhttp's list as they are; its default type is for an answer that has none.
        evhttp_set_default_content_type(http, libeventDefaultContentType)
        evhttp_send_reply_start(exchange.request, Int32(response.status), reasonPhrase(response.status))
        evhttp_set_default_content_type(http, nil)
        if let coding = evhttp_find_header(output, "Transfer-Encoding") {
            streams[ticket]?.chunked = String(cString: coding) == "chunked"
        }
        metrics.record(
            route: exchange.route, routeIndex: exchange.routeIndex, method: exchange.methodName, status: response.status, nanoseconds: now &- exchange.started)
        logger.info(
            "\(escapedForLog(exchange.methodName)) \(escapedForLog(exchange.path)) \(response.status) stream opened",
            metadata: ["request_id": .string(exchange.requestID)])
    }

    /// Writes the next part of stream `ticket` (dropped if the stream is gone).
    ///
    /// When nothing is pending on the connection, the part goes straight to the socket: handed
    /// to evhttp it would wait for the next turn of the loop, and cost two `epoll_ctl` calls
    /// (the write event added, then removed once drained) and a buffer; a live event to 10,000
    /// streams paid that 10,000 times. What the socket does not take goes to the connection's
    /// output, which evhttp writes and reports drained as for any part.
    func writeChunk(_ bytes: [UInt8], ticket: UInt64) {
        guard let open = streams[ticket] else { return }
        guard evhttp_request_get_connection(open.exchange.request) != nil else { return }
        open.parts &+= 1
        open.bytes += bytes.count
        if open.drainCallbackSet, let connection = open.exchange.connection {
            let output = bufferevent_get_output(connection.bev)
            if evbuffer_get_length(output) == 0 {
                writeDirectly(bytes, chunked: open.chunked, fd: bufferevent_getfd(connection.bev), output: output, open: open, ticket: ticket)
                return
            }
        }
        let buffer = evbuffer_new()
        bytes.withUnsafeBytes { raw in
            _ = evbuffer_add(buffer, raw.baseAddress, raw.count)
        }
        evhttp_send_reply_chunk_with_cb(open.exchange.request, buffer, workerStreamWritten, Unmanaged.passUnretained(self).toOpaque())
        evbuffer_free(buffer)
        open.drainCallbackSet = true
        outputPending(on: open, ticket: ticket)
    }

    /// Part of what stream `ticket` was sent waits in its connection's output: the sweep watches
    /// it from now until the output drains (its client's clock starts when it began to wait).
    private func outputPending(on open: OpenStream, ticket: UInt64) {
        guard streamsPending.insert(ticket).inserted else { return }
        open.progressAt = monotonicNanoseconds()
        open.pending = 0
    }

    /// Writes one part, framed as evhttp frames it (`size in hex CRLF bytes CRLF` when
    /// chunked), to the socket of a connection with nothing pending; the rest, if the socket
    /// takes less, into `output`. A part taken whole is reported written at once.
    private func writeDirectly(_ bytes: [UInt8], chunked: Bool, fd: Int32, output: OpaquePointer?, open: OpenStream, ticket: UInt64) {
        let head: [UInt8] = chunked ? Array((String(bytes.count, radix: 16) + "\r\n").utf8) : []
        let tail: [UInt8] = chunked ? [13, 10] : []
        let total = head.count + bytes.count + tail.count
        var sent = 0
        if fd >= 0 {
            let result = head.withUnsafeBytes { head in
                bytes.withUnsafeBytes { body in
                    tail.withUnsafeBytes { tail in
                        var vectors = [
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress), iov_len: head.count),
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress), iov_len: body.count),
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: tail.baseAddress), iov_len: tail.count),
                        ]
                        return retryingInterrupts { writev(fd, &vectors, Int32(vectors.count)) }
                    }
                }
            }
            // A full socket (EAGAIN) or a failed one: evhttp's own write finds out which, and
            // reports a failure as for any part.
            if case .success(let count) = result { sent = count }
        }
        if sent == total {
            reportWritten(open, ticket: ticket)
            return
        }
        // The unsent rest, in order: evhttp's drain callback (set by the first part) reports it.
        var skip = sent
        for piece in [head, bytes, tail] {
            if skip >= piece.count {
                skip -= piece.count
                continue
            }
            piece.withUnsafeBytes { raw in
                _ = evbuffer_add(output, raw.baseAddress! + skip, raw.count - skip)
            }
            skip = 0
        }
        outputPending(on: open, ticket: ticket)
    }

    /// The connection's output is empty again: tells the stream on it that its parts are out.
    func streamWritten(_ connection: OpaquePointer) {
        guard let bev = evhttp_connection_get_bufferevent(connection), let ticket = connections[bev]?.streamTicket,
            let open = streams[ticket]
        else { return }
        reportWritten(open, ticket: ticket)
    }

    /// Everything `open` (stream `ticket`) was sent is in the socket: its client is keeping up,
    /// and its producer hears it.
    private func reportWritten(_ open: OpenStream, ticket: UInt64) {
        open.progressAt = monotonicNanoseconds()
        open.pending = 0
        streamsPending.remove(ticket)
        open.stream.written(open.parts)
    }

    /// Ends stream `ticket` with `bytes` as its last part; the connection stays open for the
    /// client's next request.
    func endStream(_ bytes: [UInt8], ticket: UInt64) {
        if !bytes.isEmpty { writeChunk(bytes, ticket: ticket) }
        guard let open = streams.removeValue(forKey: ticket) else { return }
        streamsPending.remove(ticket)
        let exchange = open.exchange
        exchange.connection?.streamTicket = nil
        evhttp_send_reply_end(exchange.request)
        let now = monotonicNanoseconds()
        if let connection = exchange.connection, connection.isOpen {
            deadlines.responseStarted(connection.bev, pending: evbuffer_get_length(bufferevent_get_output(connection.bev)), now: now)
        }
        logStreamEnd(open, how: "ended", now: now)
    }

    /// The connection of a stream closed (the client left, or it was cut off): the producer
    /// hears of it, and a request evhttp let go of is freed.
    func streamConnectionClosed(_ connection: Connection) {
        guard let ticket = connection.streamTicket, let open = streams.removeValue(forKey: ticket) else { return }
        streamsPending.remove(ticket)
        connection.streamTicket = nil
        // evhttp detaches a request still being answered from a failed connection and leaves
        // it to its owner; one still attached is freed with the connection.
        if evhttp_request_get_connection(open.exchange.request) == nil {
            evhttp_request_free(open.exchange.request)
        }
        open.stream.closed()
        logStreamEnd(open, how: "closed by the client", now: monotonicNanoseconds())
    }

    /// Disconnects the clients of streams that took none of what is pending for the request
    /// timeout (sweep). Only the streams with output waiting are looked at: the others' clients
    /// have taken everything, and walking every stream (its object, connection and buffers,
    /// cold) four times a second was most of what 19,000 idle streams cost the server.
    func sweepStreams(now: UInt64) {
        for ticket in streamsPending {
            guard let open = streams[ticket], let connection = open.exchange.connection else {
                streamsPending.remove(ticket)
                continue
            }
            let pending = evbuffer_get_length(bufferevent_get_output(connection.bev))
            if pending == 0 {
                // Drained (the drain callback reports it to the producer).
                open.progressAt = now
                streamsPending.remove(ticket)
            } else if pending < open.pending {
                open.progressAt = now
            } else if now >= open.progressAt, now &- open.progressAt >= deadlines.requestTimeout {
                logger.debug("closing a stream whose client took none of it for the request timeout")
                shutdownSocket(bufferevent_getfd(connection.bev))
                open.progressAt = now
            }
            open.pending = pending
        }
    }

    /// Tells every stream's producer that the worker is stopping; the requests go with their
    /// connections when evhttp is freed.
    func abandonStreams() {
        let open = streams.values
        streams.removeAll()
        streamsPending.removeAll()
        for stream in open {
            stream.exchange.connection?.streamTicket = nil
            stream.stream.closed()
        }
    }

    private func logStreamEnd(_ open: OpenStream, how: String, now: UInt64) {
        let exchange = open.exchange
        logger.info(
            "\(escapedForLog(exchange.methodName)) \(escapedForLog(exchange.path)) stream \(how) \(open.bytes)B \((now &- exchange.started) / 1000)µs",
            metadata: ["request_id": .string(exchange.requestID)])
    }
}

func workerStreamWritten(_ connection: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let connection else { return }
    worker(context).streamWritten(connection)
}
