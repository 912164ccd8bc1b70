import EventHTTP
import FeedIndex
import FeedService
import FeedWire
import Foundation
import Prometheus
import SystemCalls

/// Delta requests that wait for their feed to change (`GET …/feed/delta?since=S&wait=N`).
///
/// A request whose answer would be 304 is parked here with its ``EventHTTP/Responder``; the
/// event loop goes on at once. One thread of this component answers it: with the delta as soon
/// as its viewer's feed differs from `since`, or 304 when its wait ends. The thread wakes when
/// the index applied changes (``FeedService/FeedService/onAdvance(_:)``, from the group commit
/// or the change-log tailing) and at the earliest deadline; it checks every parked request
/// after a change, so the work of a change grows with the requests parked, not with all
/// viewers. A newly parked request is checked once more only when the index moved since the
/// route looked (or the route could not look without storage), so a change that lands between
/// the route's look and the parking is not missed, and an unchanged feed is not diffed twice.
final class LongPolls: @unchecked Sendable {
    // @unchecked: every mutable member is guarded by `condition`.

    struct Waiter {
        let viewer: Int64
        let since: String
        let format: DeltaFormat
        let deadline: Date
        let responder: Responder
        /// The index position the route's look saw the feed unchanged at; nil when it did not
        /// look (the snapshot had to be read from storage).
        let unchangedAt: Int64?
    }

    /// Requests parked at once across the server; one more gets 503 `overloaded`.
    let capacity: Int
    private let service: FeedService
    /// Where a delta's new snapshot is stored before its answer leaves (replicas).
    private let handOff: SnapshotHandOff
    /// `deltafeed_long_polls_waiting`, and the answers by outcome.
    private let waiting: Gauge
    private let changed: Counter
    private let unchanged: Counter
    private let failed: Counter
    private let condition = NSCondition()
    private var waiters: [UInt64: Waiter] = [:]
    private var fresh: Set<UInt64> = []
    private var nextKey: UInt64 = 0
    private var advanced = false
    private var stopping = false
    private var stopped = false

    init(service: FeedService, capacity: Int, handOff: SnapshotHandOff, registry: PrometheusCollectorRegistry) {
        self.service = service
        self.handOff = handOff
        self.capacity = capacity
        waiting = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "long_polls", unitName: "waiting", helpText: "Delta requests waiting for their feed to change"))
        let answered = MetricNameDescriptor(
            namespace: "deltafeed", metricName: "long_polls_answered", unitName: "total",
            helpText: "Waiting delta requests answered: with a delta (changed), 304 at the end of the wait or at shutdown (unchanged), or an error")
        changed = registry.makeCounter(descriptor: answered, labels: [("outcome", "changed")])
        unchanged = registry.makeCounter(descriptor: answered, labels: [("outcome", "unchanged")])
        failed = registry.makeCounter(descriptor: answered, labels: [("outcome", "error")])
        service.onAdvance { [weak self] in self?.feedsMayHaveChanged() }
        let thread = Thread { [self] in
            nameCurrentThread("df-long-poll")
            run()
        }
        thread.start()
    }

    /// Parks a request until `viewer`'s feed differs from `since` or `deadline` passes;
    /// `unchangedAt` is the index ``FeedIndex/FeedIndex/sequence`` read before the route found
    /// the feed unchanged (nil when it did not look). Returns false when ``capacity`` requests
    /// already wait (the responder must not be used then).
    func park(viewer: Int64, since: String, format: DeltaFormat, deadline: Date, unchangedAt: Int64?, responder: Responder) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if stopping {
            responder.respond { .empty(status: 304, headers: [("ETag", "\"\(since)\"")]) }
            return true
        }
        guard waiters.count < capacity else { return false }
        nextKey &+= 1
        waiters[nextKey] = Waiter(viewer: viewer, since: since, format: format, deadline: deadline, responder: responder, unchangedAt: unchangedAt)
        waiting.set(Int64(waiters.count))
        fresh.insert(nextKey)
        condition.signal()
        return true
    }

    private func feedsMayHaveChanged() {
        condition.signalling { advanced = true }
    }

    /// Answers every parked request with 304 at once (a shutdown: clients ask again, elsewhere),
    /// and stops the thread. Requests parked afterwards are answered 304 at once.
    func shutdown() {
        condition.stopping({ stopping = true }, until: { stopped })
    }

    private func run() {
        // After a write that many waiting viewers see, this thread computes their deltas. It
        // yields the core to the event loops and the commit thread, so writes are not answered
        // late because many viewers wait.
        lowerCurrentThreadPriority(niceness: 10)
        condition.lock()
        while true {
            while !stopping && !advanced && fresh.isEmpty {
                let earliest = waiters.values.lazy.map(\.deadline).min()
                if let earliest {
                    if earliest <= Date() { break }
                    _ = condition.wait(until: earliest)
                } else {
                    condition.wait()
                }
            }
            if stopping {
                let all = waiters.values
                waiters.removeAll()
                waiting.set(Int64(0))
                fresh.removeAll()
                stopped = true
                condition.broadcast()
                condition.unlock()
                for waiter in all { answerUnchanged(waiter) }
                return
            }
            // Which to check: all of them after a change; otherwise the new ones whose feed
            // may have changed since the route looked.
            let position = service.index.sequence
            let keys = advanced ? Array(waiters.keys) : fresh.filter { key in waiters[key].map { $0.unchangedAt.map { $0 < position } ?? true } ?? false }
            advanced = false
            fresh.removeAll()
            let now = Date()
            var expired: [Waiter] = []
            for (key, waiter) in waiters where waiter.deadline <= now {
                expired.append(waiter)
                waiters[key] = nil
            }
            let checking = keys.compactMap { key in waiters[key].map { (key, $0) } }
            waiting.set(Int64(waiters.count))
            condition.unlock()
            for waiter in expired { answerUnchanged(waiter) }
            var answered: [UInt64] = []
            var deltas: [(Waiter, DeltaOutcome)] = []
            for (key, waiter) in checking {
                switch check(waiter) {
                case .waiting: continue
                case .answered: break
                case .changed(let outcome): deltas.append((waiter, outcome))
                }
                answered.append(key)
            }
            // The new snapshots are stored before any of these answers leaves (one pass for all).
            if !deltas.isEmpty { handOff.waitUntilStored() }
            for (waiter, outcome) in deltas { waiter.responder.respond { FeedRoutes.response(for: outcome) } }
            condition.lock()
            for key in answered { waiters[key] = nil }
            waiting.set(Int64(waiters.count))
        }
    }

    private func answerUnchanged(_ waiter: Waiter) {
        unchanged.increment()
        waiter.responder.respond { .empty(status: 304, headers: [("ETag", "\"\(waiter.since)\"")]) }
    }

    /// What a look at a waiting request found.
    private enum Check {
        /// The feed is as the client holds it: the request waits on.
        case waiting
        /// Answered already (an error: 410, 404…).
        case answered
        /// The feed changed: this delta is the answer, once its snapshot is stored.
        case changed(DeltaOutcome)
    }

    /// Looks at `waiter`'s feed: still the same, changed, or answered with an error.
    private func check(_ waiter: Waiter) -> Check {
        let outcome: DeltaOutcome
        do {
            outcome = try translatingErrors {
                switch try service.delta(viewer: waiter.viewer, since: waiter.since, format: waiter.format) {
                case .answered(let answer): answer
                // This thread may block: it reads the snapshot back itself (and composes).
                case .needsStorage, .needsComposition: try service.deltaReadingStorage(viewer: waiter.viewer, since: waiter.since, format: waiter.format)
                }
            }
        } catch {
            failed.increment()
            waiter.responder.respond { throw error }
            return .answered
        }
        guard case .changed = outcome else { return .waiting }
        changed.increment()
        return .changed(outcome)
    }
}
