/// The per-connection timing rules, as a pure state machine with no sockets in it.
///
/// A deadline measures the client's own slowness and nothing else:
///
/// - **Sending a request.** A connection has `requestTimeout` to deliver a complete request,
///   counted from when it was accepted or from when the previous response was fully written; an
///   idle keep-alive connection falls under the same rule. (libevent's own read timeout restarts
///   on every byte, so a client sending one header byte a second would never be closed by it.)
/// - **Reading the answer.** While a response is being written, the client must take some of it
///   within `requestTimeout` of the last time it did.
/// - While a request is being handled (on the loop or on a pool), no deadline applies: that time
///   is the server's.
///
/// Two more rules keep the server's slowness off the clients' clocks:
///
/// - When the loop itself was blocked (a handler ran long on it), the sweep runs late; the time
///   it was late is added to every running deadline (``loopStalled(for:)``).
/// - A connection whose deadline passed while bytes it sent wait unread in its socket is not
///   closed: the server has not looked at them yet, and they may be the complete request
///   (``expired(now:hasUnreadInput:)``).
///
/// `ID` identifies a connection; the server uses the bufferevent's address.
package struct ConnectionDeadlines<ID: Hashable> {
    package enum State: Equatable {
        /// Waiting for a complete request since the given instant (ns).
        case awaitingRequest(since: UInt64)
        /// A request is being handled; the server owes the answer.
        case handling
        /// The answer is being written. `since` is the last time the client took some of it;
        /// `pending` is how many bytes were still queued then.
        case writing(since: UInt64, pending: Int)
        /// We asked the socket to close; waiting for libevent to free it.
        case closing
    }

    package private(set) var states: [ID: State] = [:]
    /// Connections handling a request or writing its answer: the requests in flight.
    package private(set) var inFlight = 0
    /// How long a client may take to deliver a request, or to take more of its answer, in ns.
    package let requestTimeout: UInt64

    package init(requestTimeout: UInt64) {
        self.requestTimeout = requestTimeout
    }

    /// How many connections are open.
    package var count: Int { states.count }

    /// A connection was accepted at `now`.
    package mutating func accepted(_ id: ID, now: UInt64) {
        states[id] = .awaitingRequest(since: now)
    }

    /// A complete request arrived on `id`. Returns whether it now counts as in flight.
    ///
    /// This and the two calls below run for every request: each finds the connection's state
    /// once and changes it in place.
    @discardableResult
    package mutating func requestStarted(_ id: ID) -> Bool {
        guard let index = states.index(forKey: id) else { return false }
        switch states.values[index] {
        case .handling:
            return false
        case .writing:
            // Already in flight.
            states.values[index] = .handling
            return false
        case .awaitingRequest, .closing:
            states.values[index] = .handling
            inFlight += 1
            return true
        }
    }

    /// The answer on `id` was queued at `now` with `pending` bytes; from now on the client must
    /// keep reading it.
    package mutating func responseStarted(_ id: ID, pending: Int, now: UInt64) {
        guard let index = states.index(forKey: id), states.values[index] == .handling else { return }
        states.values[index] = .writing(since: now, pending: pending)
    }

    /// `pending` bytes of the answer on `id` are still queued at `now`: if fewer than last time,
    /// the client took some and its clock restarts.
    package mutating func outputPending(_ id: ID, _ pending: Int, now: UInt64) {
        guard case .writing(let since, let previous)? = states[id] else { return }
        states[id] = .writing(since: pending < previous ? now : since, pending: pending)
    }

    /// The response on `id` was fully written at `now`; the connection may carry another request.
    /// Returns whether a request was in flight on it.
    @discardableResult
    package mutating func responseCompleted(_ id: ID, now: UInt64) -> Bool {
        guard let index = states.index(forKey: id) else { return false }
        switch states.values[index] {
        case .handling, .writing:
            states.values[index] = .awaitingRequest(since: now)
            inFlight -= 1
            return true
        default:
            return false
        }
    }

    /// The connection is gone. Returns its last state, or nil if it was not tracked (so the
    /// caller releases it exactly once).
    @discardableResult
    package mutating func closed(_ id: ID) -> State? {
        guard let state = states.removeValue(forKey: id) else { return nil }
        if state.isInFlight { inFlight -= 1 }
        return state
    }

    /// The loop could not serve any connection for `duration` ns (it was blocked): that time is
    /// the server's, so every running client deadline moves back by it.
    package mutating func loopStalled(for duration: UInt64) {
        guard duration > 0 else { return }
        for (id, state) in states {
            switch state {
            case .awaitingRequest(let since):
                states[id] = .awaitingRequest(since: since &+ duration)
            case .writing(let since, let pending):
                states[id] = .writing(since: since &+ duration, pending: pending)
            case .handling, .closing:
                break
            }
        }
    }

    /// Connections whose deadline passed at `now`; they are marked closing. A connection waiting
    /// for a request with bytes still unread in its socket (`hasUnreadInput`) is spared: the
    /// server is behind, not the client. It is looked at again on the next sweep.
    package mutating func expired(now: UInt64, hasUnreadInput: (ID) -> Bool = { _ in false }) -> [ID] {
        var expired: [ID] = []
        for (id, state) in states {
            switch state {
            case .awaitingRequest(let since):
                if now >= since, now &- since >= requestTimeout, !hasUnreadInput(id) { expired.append(id) }
            case .writing(let since, _):
                if now >= since, now &- since >= requestTimeout { expired.append(id) }
            case .handling, .closing:
                break
            }
        }
        for id in expired { _ = close(id) }
        return expired
    }

    /// Connections with no request in progress (for a drain); they are marked closing.
    package mutating func closeIdle() -> [ID] {
        var idle: [ID] = []
        for (id, state) in states {
            if case .awaitingRequest = state { idle.append(id) }
        }
        for id in idle { _ = close(id) }
        return idle
    }

    /// Marks `id` closing (the server is closing it for its own reasons). Returns whether it was
    /// tracked and not already closing.
    @discardableResult
    package mutating func close(_ id: ID) -> Bool {
        guard let state = states[id], state != .closing else { return false }
        if state.isInFlight { inFlight -= 1 }
        states[id] = .closing
        return true
    }

    /// The state of one connection.
    package func state(of id: ID) -> State? { states[id] }

    /// Every tracked connection.
    package var ids: Dictionary<ID, State>.Keys { states.keys }
}

extension ConnectionDeadlines.State {
    /// Handling a request or writing its answer.
    package var isInFlight: Bool {
        switch self {
        case .handling, .writing: true
        case .awaitingRequest, .closing: false
        }
    }
}
