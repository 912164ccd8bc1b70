import CLibevent

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
    /// The streamed answer being written on it, if any.
    var streamTicket: UInt64?
    /// Shut the socket down once the current answer is written (evhttp keeps CONNECT open).
    var closeAfterResponse = false

    /// False once the worker has forgotten it (evhttp freed the connection).
    var isOpen = true
    /// Whether ``inputCallback`` is switched on.
    var watchingInput = true

    init(bev: OpaquePointer, worker: Worker, admitted: Bool, scanner: RequestHeadScanner) {
        self.bev = bev
        self.worker = worker
        self.admitted = admitted
        self.scanner = scanner
    }

    /// The scanner has seen the end of the head: bytes that arrive or are drained until the next
    /// head starts need no callback (the body, and evhttp's reads of the head).
    func stopWatchingInput() {
        guard watchingInput, let inputCallback else { return }
        watchingInput = false
        evbuffer_cb_clear_flags(bufferevent_get_input(bev), inputCallback, UInt32(EVBUFFER_CB_ENABLED))
    }

    /// The next bytes start a new head: the scanner starts over and watches the input again.
    func startNextHead() {
        scanner.startNextHead()
        guard !watchingInput, let inputCallback else { return }
        watchingInput = true
        evbuffer_cb_set_flags(bufferevent_get_input(bev), inputCallback, UInt32(EVBUFFER_CB_ENABLED))
    }
}

/// One request between its arrival and its answer: what the answer and the access log need.
struct Exchange {
    let request: OpaquePointer
    /// The connection it arrived on.
    let connection: Connection?
    let requestID: String
    let path: String
    var route: String
    /// The matched route's ``Router/Route/index`` (nil: none matched), for its metrics.
    var routeIndex: Int? = nil
    let methodName: String
    let isHead: Bool
    var close: Bool
    let started: UInt64
}
