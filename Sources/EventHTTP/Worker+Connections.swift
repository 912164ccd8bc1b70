import CLibevent
import CoreMetrics
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Connections on the worker thread: the bufferevent each one gets, what is released when evhttp
// frees it, what happens when an answer has been written, and connections over the limit.

extension Worker {
    func makeBufferevent() -> OpaquePointer? {
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
        unhookedConnections.insert(bev)
        if !connection.admitted {
            // evhttp sets the socket after this returns: answer and close it on the next turn.
            overCapacity.append(bev)
            event_active(soonEvent, 0, 0)
        }
        return bev
    }

    /// Puts our close callback on `connection`'s evhttp connection `evcon`, once.
    func hookClose(of connection: Connection, evcon: OpaquePointer) {
        guard !connection.closeHooked else { return }
        connection.closeHooked = true
        unhookedConnections.remove(connection.bev)
        evhttp_connection_set_closecb(evcon, workerConnectionClosed, Unmanaged.passUnretained(self).toOpaque())
    }

    func connectionClosed(_ connection: OpaquePointer) {
        guard let bev = evhttp_connection_get_bufferevent(connection) else { return }
        forget(bev)
    }

    /// Releases everything held for a connection evhttp has freed (or is freeing), once.
    func forget(_ bev: OpaquePointer) {
        guard let connection = connections.removeValue(forKey: bev) else { return }
        unhookedConnections.remove(bev)
        connection.isOpen = false
        if recentConnection === connection { recentConnection = nil }
        streamConnectionClosed(connection)
        if let last = deadlines.closed(bev), last.isInFlight { metrics.inFlight.decrement() }
        limits.releaseBody(connection.reservedBodyBytes)
        if connection.admitted { limits.releaseConnection() }
        if let entry = connection.inputCallback {
            evbuffer_remove_cb_entry(bufferevent_get_input(bev), entry)
        }
        bufferevent_decref(bev)
    }

    /// The answer to a request on a connection without bookkeeping has been written.
    func responseCompleted(_ request: OpaquePointer) {
        guard let bev = bufferevent(of: request) else { return }
        if deadlines.responseCompleted(bev, now: monotonicNanoseconds()) {
            metrics.inFlight.decrement()
        }
        if let connection = self.connection(for: bev) { prepareNextRequest(on: connection) }
    }

    /// The answer to the current request on `connection` has been written. evhttp calls this
    /// with the connection itself (no lookup), and only while the connection is open: it frees
    /// a closing connection's requests without completing them, after our close callback.
    func responseCompleted(on connection: Connection) {
        if deadlines.responseCompleted(connection.bev, now: monotonicNanoseconds()) {
            metrics.inFlight.decrement()
        }
        prepareNextRequest(on: connection)
    }

    /// After an answer: the body's reservation is released, and the connection waits for its
    /// next request (or is shut down).
    private func prepareNextRequest(on connection: Connection) {
        let bev = connection.bev
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

    /// The bookkeeping of the connection on `bev`. The one found last is kept: a request's header
    /// callback, its delivery and its completion usually ask for the same connection in a row.
    func connection(for bev: OpaquePointer) -> Connection? {
        if let recent = recentConnection, recent.bev == bev, recent.isOpen { return recent }
        let found = connections[bev]
        recentConnection = found
        return found
    }

    func bufferevent(of request: OpaquePointer) -> OpaquePointer? {
        evhttp_request_get_connection(request).flatMap(evhttp_connection_get_bufferevent)
    }

    /// What callbacks asked to do on the next turn of the loop.
    func runSoon() {
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
    func refuseOverCapacity(_ bev: OpaquePointer) {
        let fd = bufferevent_getfd(bev)
        deadlines.close(bev)
        guard fd >= 0 else { return }
        let error = HTTPError.tooManyConnections
        var head = "HTTP/1.1 503 \(reasonPhrase(503))\r\nContent-Type: application/json\r\n"
        for (name, value) in error.headers { head += "\(name): \(value)\r\n" }
        head += "X-Request-Id: \(requestIDs.next(clientID: nil))\r\nConnection: close\r\nContent-Length: \(error.jsonBody.count)\r\n\r\n"
        let bytes = Array(head.utf8) + error.jsonBody
        // A fresh socket's send buffer takes this whole; if not, the client gets a close.
        #if canImport(Glibc)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        #else
        _ = bytes.withUnsafeBytes { Musl.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        #endif
        shutdownSocket(fd)
        refusedSinceLog += 1
        let now = monotonicNanoseconds()
        if now &- lastRefusalLog >= 1_000_000_000 {
            logger.warning("refused \(refusedSinceLog) connections over the limit of \(limits.maxConnections)")
            refusedSinceLog = 0
            lastRefusalLog = now
        }
    }
}
