import CLibevent
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The sweep (connection deadlines, a blocked loop, the end of a drain) and the graceful drain a
// stop begins.

extension Worker {
    func sweep() {
        let now = monotonicNanoseconds()
        // A sweep that runs late means the loop was blocked (a handler ran long on it): that
        // time is the server's, not the clients'.
        let gap = now &- lastSweep
        lastSweep = now
        if gap > sweepInterval + sweepInterval / 2 {
            deadlines.loopStalled(for: gap - sweepInterval)
        }
        // Connections evhttp freed without a close callback: their callbacks were cleared.
        for bev in unhookedConnections {
            var eventCallback: bufferevent_event_cb? = nil
            bufferevent_getcb(bev, nil, nil, &eventCallback, nil)
            if eventCallback == nil { forget(bev) }
        }
        // How much of each answer being written its client has taken.
        for (bev, state) in deadlines.states {
            if case .writing = state {
                deadlines.outputPending(bev, evbuffer_get_length(bufferevent_get_output(bev)), now: now)
            }
        }
        sweepStreams(now: now)
        let late = deadlines.expired(now: now) { bev in cle_unread_bytes(bufferevent_getfd(bev)) > 0 }
        for bev in late {
            logger.debug("closing a connection whose client was too slow to send a request or read an answer")
            shutdownSocket(bufferevent_getfd(bev))
        }
        if draining && !idleClosed && now >= idleCloseAt {
            idleClosed = true
            for bev in deadlines.closeIdle() {
                shutdownSocket(bufferevent_getfd(bev))
            }
        }
        if draining && ((idleClosed && deadlines.inFlight == 0) || now >= drainDeadline) {
            if deadlines.inFlight > 0 {
                logger.warning("shutdown grace period over with \(deadlines.inFlight) requests in flight")
            }
            event_base_loopexit(base, nil)
        }
    }

    func beginDrain() {
        guard !draining else { return }
        draining = true
        let now = monotonicNanoseconds()
        drainDeadline = now &+ configuration.shutdownGracePeriod.nanoseconds
        idleCloseAt = now &+ min(Worker.idleLinger, configuration.shutdownGracePeriod.nanoseconds)
        if let bound {
            evhttp_del_accept_socket(http, bound)
            self.bound = nil
        }
        // Check for the end of the drain often from now on.
        if let sweepEvent {
            event_del(sweepEvent)
            sweepInterval = 10_000_000
            lastSweep = now
            var fast = timeval(tv_sec: 0, tv_usec: Int(sweepInterval / 1000))
            event_add(sweepEvent, &fast)
        }
    }
}
