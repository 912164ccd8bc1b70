import EventHTTP
import FeedIndex
import FeedService
import FeedWire
import Foundation
import HeapModule
import Prometheus
import SystemCalls

/// Delta requests that wait for their feed to change (`GET …/feed/delta?since=S&wait=N`).
///
/// A request whose answer would be 304 is parked here with its ``EventHTTP/Responder``; the
/// event loop goes on at once. One thread of this component answers it: with the delta as soon
/// as its viewer's feed differs from `since`, or 304 when its wait ends. The thread wakes when
/// the index applied changes (``FeedService/FeedService/onAdvance(_:)``, from the group commit
/// or the change-log tailing) and at the earliest deadline. The thread has each newly parked
/// request hold the page of its snapshot (``FeedService/FeedService/holdPage(viewer:parameters:for:)``:
/// off the event loop, which only parks), and after a change it checks only the requests on the
/// pages the change may touch (``FeedService/FeedService/heldPagesTouched(by:)``), as the live
/// streams do: a write no waiting viewer sees costs nothing here, however many wait (it checked
/// every parked request after every change, so each write cost as many checks as requests
/// waited). A request whose page is unknown (its snapshot was not in memory) is checked after
/// every change. A newly parked request is checked once when the index moved between the route's
/// look and the hold (or the route could not look without storage, or its page was not cached),
/// so no change is missed, and an unchanged feed is not diffed twice.
final class LongPolls: @unchecked Sendable {
    // @unchecked: every mutable member is guarded by `condition`.

    struct Waiter {
        let viewer: Int64
        let since: String
        let format: DeltaFormat
        let responder: Responder
        /// The index position the route's look saw the feed unchanged at; nil when it did not
        /// look (the snapshot had to be read from storage).
        let unchangedAt: Int64?
        /// The page it holds, once the thread has looked at it; nil before, or when the
        /// snapshot's page was unknown.
        var page: Page?
    }

    /// A page requests wait on.
    struct Page: Hashable {
        let viewer: Int64
        let parameters: FeedParameters
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
    /// Waiting requests looked at for a change: what a change costs the long polls.
    private let checks: Counter
    private let condition = NSCondition()
    private var waiters: [UInt64: Waiter] = [:]
    /// The waiting requests by the page they hold, and those without one.
    private var byPage: [Page: Set<UInt64>] = [:]
    private var unpaged: Set<UInt64> = []
    /// Every parked request's deadline (kept here alone), soonest first; an entry whose request
    /// was answered is dropped when it comes up (the thread found the earliest deadline and the
    /// expired ones by walking every waiting request on each wake-up, once per change).
    private var deadlines = Heap<Deadline>()

    struct Deadline: Comparable {
        let at: Date
        let key: UInt64
        static func < (left: Deadline, right: Deadline) -> Bool { (left.at, left.key) < (right.at, right.key) }
    }
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
        checks = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "long_poll_checks", unitName: "total",
                helpText: "Waiting delta requests looked at for a change (after a change that may touch their page, or once when parked)"))
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
        waiters[nextKey] = Waiter(viewer: viewer, since: since, format: format, responder: responder, unchangedAt: unchangedAt)
        deadlines.insert(Deadline(at: deadline, key: nextKey))
        waiting.set(Int64(waiters.count))
        fresh.insert(nextKey)
        condition.signal()
        return true
    }

    /// Takes the waiting request `key` out (under the lock); returns it, whose page the caller
    /// releases after unlocking.
    private func takeWaiter(_ key: UInt64) -> Waiter? {
        guard let waiter = waiters.removeValue(forKey: key) else { return nil }
        if let page = waiter.page {
            if byPage[page]?.remove(key) != nil, byPage[page]?.isEmpty == true { byPage[page] = nil }
        } else {
            unpaged.remove(key)
        }
        return waiter
    }

    /// Lets go of the pages of requests taken out (outside the lock).
    private func releasePages(of gone: [Waiter]) {
        for waiter in gone {
            if let page = waiter.page { service.releasePage(viewer: page.viewer, parameters: page.parameters, for: .longPolls) }
        }
    }

    /// A newly parked request's page, held (outside the lock): nil when its snapshot is not in
    /// memory; `cold` when the page was not cached, so no change is noted on it until a check
    /// composes it.
    private func hold(viewer: Int64, since: String) -> (page: Page?, cold: Bool) {
        guard let parameters = service.parameters(ofSnapshot: since, viewer: viewer) else { return (nil, false) }
        return (Page(viewer: viewer, parameters: parameters), !service.holdPage(viewer: viewer, parameters: parameters, for: .longPolls))
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
                // Entries of answered requests are dropped as they come up.
                while let first = deadlines.min, waiters[first.key] == nil { _ = deadlines.popMin() }
                let earliest = deadlines.min?.at
                if let earliest {
                    if earliest <= Date() { break }
                    _ = condition.wait(until: earliest)
                } else {
                    condition.wait()
                }
            }
            if stopping {
                let all = Array(waiters.values)
                waiters.removeAll()
                byPage.removeAll()
                unpaged.removeAll()
                deadlines = Heap()
                waiting.set(Int64(0))
                fresh.removeAll()
                stopped = true
                condition.broadcast()
                condition.unlock()
                for waiter in all { answerUnchanged(waiter) }
                releasePages(of: all)
                return
            }
            let changed = advanced
            advanced = false
            let newcomers = fresh.compactMap { key in waiters[key].map { (key: key, viewer: $0.viewer, since: $0.since) } }
            fresh.removeAll()
            condition.unlock()
            // The new requests hold their pages before the index's position is read: a change
            // noted after the hold is reported with the held pages; one applied between the
            // route's look and the hold moved the position past the request's `unchangedAt`.
            let held = newcomers.map { hold(viewer: $0.viewer, since: $0.since) }
            let position = service.index.sequence
            let touched = changed ? service.heldPagesTouched(by: .longPolls) : []
            condition.lock()
            // Which to check: the new requests whose feed may have changed since the route
            // looked (or whose page must be composed to be noted on); after a change, the
            // requests on the pages it may touch, and those without a page.
            var keys: Set<UInt64> = []
            // Only this thread takes requests out, so every newcomer is still parked.
            for (newcomer, (page, cold)) in zip(newcomers, held) {
                guard let waiter = waiters[newcomer.key] else { continue }
                waiters[newcomer.key]?.page = page
                if let page { byPage[page, default: []].insert(newcomer.key) } else { unpaged.insert(newcomer.key) }
                if cold || (waiter.unchangedAt.map { $0 < position } ?? true) { keys.insert(newcomer.key) }
            }
            if changed {
                for (viewer, parameters) in touched { keys.formUnion(byPage[Page(viewer: viewer, parameters: parameters)] ?? []) }
                keys.formUnion(unpaged)
            }
            let now = Date()
            var expired: [Waiter] = []
            while let first = deadlines.min, first.at <= now {
                _ = deadlines.popMin()
                if let waiter = takeWaiter(first.key) { expired.append(waiter) }
            }
            let checking = keys.compactMap { key in waiters[key].map { (key, $0) } }
            waiting.set(Int64(waiters.count))
            condition.unlock()
            for waiter in expired { answerUnchanged(waiter) }
            releasePages(of: expired)
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
            var gone: [Waiter] = []
            for key in answered { if let waiter = takeWaiter(key) { gone.append(waiter) } }
            waiting.set(Int64(waiters.count))
            if !gone.isEmpty {
                condition.unlock()
                releasePages(of: gone)
                condition.lock()
            }
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
        checks.increment()
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
