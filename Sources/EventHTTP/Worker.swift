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
/// Everything here runs on the worker's thread except ``requestStop()``, which only sets a flag
/// and writes to the worker's ``LoopWakeup`` (no libevent call is made off the loop's thread,
/// so libevent's pthread locking stays off).
/// libevent calls back into C functions below with an unretained pointer to the worker; the
/// ``HTTPServer`` keeps every worker alive until its thread has returned.
///
/// A request passes three hooks before its handler runs:
///
/// 1. bytes arriving on a connection (a callback on the bufferevent's input buffer, run before
///    evhttp parses them): ``RequestHeadScanner`` reads the raw head, and the request evhttp is
///    reading gets our header callback and our request callback (``requestArrived(_:on:)``);
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
    // callbacks or `run()`; `requestStop()` touches only `stopWakeup` (behind its lock) and
    // `stopRequested`.
    let index: Int
    let base: OpaquePointer
    let http: OpaquePointer
    var bound: OpaquePointer?
    let router: Router
    let configuration: HTTPServerConfiguration
    let limits: ServerLimits
    let logger: Logger
    let metrics: RequestMetrics
    // The state below is changed for every request. `@exclusivity(unchecked)`: only this
    // worker's thread touches it, and no access to it stays open across a call that could come
    // back to it, so the runtime's check of each access (about 100 instructions: a thread-local
    // access set) would never fire.
    @exclusivity(unchecked) var requestIDs: RequestIDGenerator
    @exclusivity(unchecked) var deadlines: ConnectionDeadlines<OpaquePointer>
    /// Every open connection's bookkeeping, by bufferevent (`@exclusivity(unchecked)` as the
    /// state above).
    @exclusivity(unchecked) var connections: [OpaquePointer: Connection] = [:]
    /// The connections whose close evhttp does not report to us yet (no request has hooked
    /// it): the sweep looks at these alone for ones evhttp freed silently, not at every open
    /// connection (a live stream's is hooked, and 19,000 idle streams made walking them all
    /// four times a second most of an idle server's CPU).
    var unhookedConnections: Set<OpaquePointer> = []
    /// The connection ``connection(for:)`` found last.
    @exclusivity(unchecked) var recentConnection: Connection?
    var sweepEvent: OpaquePointer?
    /// How often the sweep runs now, and when it last ran (to see that the loop was blocked).
    var sweepInterval: UInt64
    var lastSweep: UInt64 = 0
    /// Wakes the loop for a stop (and, through the mailbox, for deliveries).
    let wakeup: LoopWakeup
    /// The event watching ``wakeup``.
    var wakeupEvent: OpaquePointer?
    /// ``wakeup`` for ``requestStop()``; nil once the worker has stopped, so a late stop is a no-op.
    let stopWakeup = Mutex<LoopWakeup?>(nil)
    /// Set by ``requestStop()``, taken by the loop when the wake-up arrives.
    let stopRequested = Atomic<Bool>(false)
    /// Runs, on the next turn of the loop, what cannot be done inside the callback that asked for it.
    var soonEvent: OpaquePointer?
    /// Connections accepted past ``HTTPServerConfiguration/maxConnections``: answered 503 and closed soon.
    var overCapacity: [OpaquePointer] = []
    /// Connections holding the start of a pipelined request when their previous answer was
    /// written: their next request gets its header callback soon, before evhttp parses it.
    var pipelined: [OpaquePointer] = []
    var refusedSinceLog = 0
    var lastRefusalLog: UInt64 = 0
    var headerHookUnavailableLogged = false
    /// evhttp's request callback, which our hook passes complete requests on to.
    var originalRequestCallback: cle_request_callback?
    var draining = false
    var drainDeadline: UInt64 = 0
    /// When a drain closes the connections that are still idle. Until then a request arriving
    /// on a kept-alive connection is answered (with `Connection: close`) instead of being cut
    /// off by a close that crossed it on the wire.
    var idleCloseAt: UInt64 = 0
    var idleClosed = false
    /// How long a drain lets idle keep-alive connections send one last request.
    static let idleLinger: UInt64 = 200_000_000
    /// Requests whose answer is being computed on a ``BlockingPool``, by ticket.
    var awaiting: [UInt64: Exchange] = [:]
    var nextTicket: UInt64 = 0
    /// Streamed answers being written, by ticket.
    var streams: [UInt64: OpenStream] = [:]
    /// The streams whose connection may hold output its client has not taken yet (a part
    /// handed to evhttp, or the rest of one the socket did not take): the sweep checks these
    /// for clients that stopped reading; the others' output is empty.
    var streamsPending: Set<UInt64> = []
    /// Where pools post the answers of deferred requests, and streams their parts; wakes the loop.
    let mailbox = Mailbox()
    /// Where the block of header lines of the answer being sent is written (reused).
    let responseHead = ResponseHead.Storage()
    /// The `Date` value, formatted once a second.
    @exclusivity(unchecked) var httpDate = HTTPDate()

    init(index: Int, listenerFD: Int32, router: Router, configuration: HTTPServerConfiguration, limits: ServerLimits, processNonce: UInt32) throws {
        HTTPServer.prepareProcess()
        let wakeup = try LoopWakeup()
        guard let base = Worker.makeBase() else {
            wakeup.closeEnds()
            throw SystemError(call: "event_base_new", errno: ENOMEM)
        }
        guard let http = evhttp_new(base) else {
            event_base_free(base)
            wakeup.closeEnds()
            throw SystemError(call: "evhttp_new", errno: ENOMEM)
        }
        self.wakeup = wakeup
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
        // Answers carry their Content-Type in the ResponseHead block, out of evhttp's sight:
        // its default type is set back only for the send of an answer that has none.
        evhttp_set_default_content_type(http, nil)

        let context = Unmanaged.passUnretained(self).toOpaque()
        evhttp_set_gencb(http, workerHandleRequest, context)
        evhttp_set_bevcb(http, workerMakeBufferevent, context)

        guard let bound = evhttp_accept_socket_with_handle(http, listenerFD) else {
            let code = errno
            close(listenerFD)
            evhttp_free(http)
            event_base_free(base)
            wakeup.closeEnds()
            throw SystemError(call: "evhttp_accept_socket", errno: code)
        }
        self.bound = bound

        sweepEvent = event_new(base, -1, Int16(EV_PERSIST), workerSweep, context)
        var sweepTime = timeval(tv_sec: 0, tv_usec: Int(sweepInterval / 1000))
        event_add(sweepEvent, &sweepTime)
        lastSweep = monotonicNanoseconds()
        soonEvent = event_new(base, -1, 0, workerSoon, context)
        wakeupEvent = event_new(base, wakeup.readEnd, Int16(EV_READ | EV_PERSIST), workerWakeup, context)
        event_add(wakeupEvent, nil)
        stopWakeup.withLock { $0 = wakeup }
        mailbox.attach(wakeup)
    }

    /// A new event base whose epoll backend batches its changes: every request turns reading
    /// off and writing on (in one callback), then writing off and reading on (in another), and
    /// with the change list each pair is one epoll_ctl instead of two (2 a request, not 4).
    /// libevent warns that this is unsafe for a file descriptor cloned with dup(); no
    /// descriptor in a worker's base is (accepted sockets, the listener, the wake-up pipe).
    static func makeBase() -> OpaquePointer? {
        guard let config = event_config_new() else { return nil }
        defer { event_config_free(config) }
        _ = event_config_set_flag(config, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        return event_base_new_with_config(config)
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
        // From now on a stop request is a no-op, and answers posted by pools are dropped (their
        // requests die with evhttp): nothing writes to the wake-up pipe any more.
        stopWakeup.withLock { $0 = nil }
        mailbox.close()
        if !awaiting.isEmpty {
            logger.warning("stopped with \(awaiting.count) deferred requests unanswered")
            awaiting.removeAll()
        }
        abandonStreams()
        // Frees every remaining connection (their close callbacks release our references).
        evhttp_free(http)
        for bev in Array(connections.keys) { forget(bev) }
        if let sweepEvent { event_free(sweepEvent) }
        if let soonEvent { event_free(soonEvent) }
        if let wakeupEvent { event_free(wakeupEvent) }
        event_base_free(base)
        wakeup.closeEnds()
    }

    /// Asks the worker, from any thread, to stop accepting and drain. Does nothing once the
    /// worker has stopped.
    func requestStop() {
        stopWakeup.withLock { wakeup in
            guard let wakeup else { return }
            stopRequested.store(true, ordering: .sequentiallyConsistent)
            wakeup.wake()
        }
    }

    /// The wake-up pipe became readable: a stop was asked for, or deliveries wait (loop thread).
    func wokenUp() {
        // Emptied first: whatever is posted from now on wakes the loop again.
        wakeup.drain()
        if stopRequested.exchange(false, ordering: .sequentiallyConsistent) { beginDrain() }
        completeDeferred()
    }
}
