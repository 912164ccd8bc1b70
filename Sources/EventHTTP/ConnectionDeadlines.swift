/// The per-connection timing rules, as a pure state machine with no sockets in it.
///
/// libevent's own read timeout restarts on every byte, so a client that sends one header byte a
/// second (slowloris) would hold a connection forever. This machine gives every connection one
/// deadline to deliver a complete request, counted from when it was accepted or from when the
/// previous response was fully written; an idle keep-alive connection falls under the same rule.
/// While a request is being handled and answered, no deadline applies (the write timeout of
/// libevent covers a client that stops reading).
///
/// `ID` identifies a connection; the server uses the bufferevent's address.
struct ConnectionDeadlines<ID: Hashable> {
    enum State: Equatable {
        /// Waiting for a complete request since the given instant (ns).
        case awaitingRequest(since: UInt64)
        /// A request is being handled or its response written.
        case handling
        /// We asked the socket to close; waiting for libevent to free it.
        case closing
    }

    private(set) var states: [ID: State] = [:]
    /// Connections in `.handling`: the requests in flight.
    private(set) var inFlight = 0
    /// How long a connection may take to deliver a complete request, in nanoseconds.
    let requestTimeout: UInt64

    init(requestTimeout: UInt64) {
        self.requestTimeout = requestTimeout
    }

    /// How many connections are open.
    var count: Int { states.count }

    /// A connection was accepted at `now`.
    mutating func accepted(_ id: ID, now: UInt64) {
        states[id] = .awaitingRequest(since: now)
    }

    /// A complete request arrived on `id`. Returns whether it now counts as in flight.
    @discardableResult
    mutating func requestStarted(_ id: ID) -> Bool {
        guard let state = states[id], state != .handling else { return false }
        states[id] = .handling
        inFlight += 1
        return true
    }

    /// The response on `id` was fully written at `now`; the connection may carry another request.
    /// Returns whether a request was in flight on it.
    @discardableResult
    mutating func responseCompleted(_ id: ID, now: UInt64) -> Bool {
        guard states[id] == .handling else { return false }
        states[id] = .awaitingRequest(since: now)
        inFlight -= 1
        return true
    }

    /// The connection is gone. Returns its last state, or nil if it was not tracked (so the
    /// caller releases it exactly once).
    @discardableResult
    mutating func closed(_ id: ID) -> State? {
        guard let state = states.removeValue(forKey: id) else { return nil }
        if state == .handling { inFlight -= 1 }
        return state
    }

    /// Connections whose request deadline passed at `now`; they are marked closing.
    mutating func expired(now: UInt64) -> [ID] {
        var expired: [ID] = []
        for (id, state) in states {
            if case .awaitingRequest(let since) = state, now &- since >= requestTimeout, now >= since {
                expired.append(id)
            }
        }
        for id in expired { states[id] = .closing }
        return expired
    }

    /// Connections with no request in progress (for a drain); they are marked closing.
    mutating func closeIdle() -> [ID] {
        var idle: [ID] = []
        for (id, state) in states {
            if case .awaitingRequest = state { idle.append(id) }
        }
        for id in idle { states[id] = .closing }
        return idle
    }

    /// The state of one connection.
    func state(of id: ID) -> State? { states[id] }

    /// Every tracked connection.
    var ids: Dictionary<ID, State>.Keys { states.keys }
}
