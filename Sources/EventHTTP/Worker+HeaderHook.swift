import CLibevent
import Logging

// The hooks into libevent 2.1.12's private layouts: bytes arriving on a connection are scanned
// before evhttp parses them, and the request evhttp is reading gets our header callback (framing
// checked and body bytes reserved before the body is read) and our request callback (evhttp's
// refusals answered with the JSON error body). See ``Worker`` for the order of the hooks.

extension Worker {
    /// Bytes arrived on a connection (before evhttp parses them).
    func inputAdded(_ connection: Connection, buffer: OpaquePointer, added: Int) {
        guard added > 0 else { return }
        if connection.hookedRequest == nil { hookRequest(of: connection) }
        if connection.scanner.inHead {
            let length = evbuffer_get_length(buffer)
            scan(buffer, from: length - min(added, length), into: connection)
        }
    }

    /// Gives the request evhttp is reading on `connection` our header callback, and the
    /// connection our close callback.
    func hookRequest(of connection: Connection) {
        guard let argument = cle_bufferevent_callback_argument(connection.bev) else { return }
        let evcon = OpaquePointer(argument)
        hookClose(of: connection, evcon: evcon)
        // The request's callbacks get the connection itself (unretained: evhttp calls them only
        // while the connection is open, before our close callback forgets it), so neither looks
        // it up.
        let context = Unmanaged.passUnretained(connection).toOpaque()
        guard let request = cle_connection_current_request(evcon),
            let previous = cle_request_hook(request, connectionRequestArrived, context, connectionHeadersParsed)
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
        let ours: cle_request_callback = connectionRequestArrived
        if originalRequestCallback == nil && unsafeBitCast(previous, to: UnsafeRawPointer.self) != unsafeBitCast(ours, to: UnsafeRawPointer.self) {
            originalRequestCallback = previous
        }
        connection.hookedRequest = request
    }

    /// Feeds the scanner the bytes of `buffer` from `start` on, until the head ends, reading them
    /// where they are (evbuffer_peek): no copy, no scratch buffer (a 4 KiB one was allocated on
    /// the heap twice a request). Once the head has ended, the buffer's callback is switched off
    /// until ``Connection/startNextHead()``: evhttp drains the head line by line, and each drain
    /// called it for nothing.
    func scan(_ buffer: OpaquePointer, from start: Int, into connection: Connection) {
        var position = evbuffer_ptr()
        guard evbuffer_ptr_set(buffer, &position, start, EVBUFFER_PTR_SET) == 0 else { return }
        var remaining = evbuffer_get_length(buffer) - start
        let capacity = 8
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: capacity) { vectors in
            while remaining > 0 && connection.scanner.inHead {
                let needed = Int(evbuffer_peek(buffer, remaining, &position, vectors.baseAddress, Int32(capacity)))
                guard needed > 0 else { return }
                var peeked = 0
                for vector in vectors.prefix(min(needed, capacity)) where connection.scanner.inHead {
                    let length = min(vector.iov_len, remaining - peeked)
                    connection.scanner.scan(UnsafeRawBufferPointer(start: vector.iov_base, count: length))
                    peeked += length
                }
                remaining -= peeked
                guard remaining > 0, evbuffer_ptr_set(buffer, &position, peeked, EVBUFFER_PTR_ADD) == 0 else { return }
            }
        }
        if !connection.scanner.inHead { connection.stopWatchingInput() }
    }

    /// The headers of `request`, on `connection`, are parsed and its body not read yet.
    func headersParsed(_ request: OpaquePointer, on connection: Connection) {
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
    func refuse(_ request: OpaquePointer, on connection: Connection, with error: HTTPError) {
        let headers = evhttp_request_get_input_headers(request)
        while evhttp_remove_header(headers, "Content-Length") == 0 {}
        while evhttp_remove_header(headers, "Transfer-Encoding") == 0 {}
        cle_request_forget_chunked(request)
        connection.refusal = (request, error)
    }

    /// A hooked request arrived complete, or evhttp refused it: refusals (no URI left) are
    /// answered here with the JSON body, complete requests go on through evhttp's own callback
    /// (which checks the method and calls ``handle(_:)``).
    func requestArrived(_ request: OpaquePointer, on connection: Connection) {
        // handle(_:) is reached through evhttp, which does not pass the connection on: it finds
        // it as the last one found.
        recentConnection = connection
        if evhttp_request_get_uri(request) == nil {
            handle(request)
        } else if let originalRequestCallback {
            originalRequestCallback(request, UnsafeMutableRawPointer(http))
        } else {
            handle(request)
        }
    }
}
