import EventHTTP
import FeedService
import FeedStore
import Foundation
import Logging
import Prometheus
import SystemCalls

/// Makes a snapshot usable on every replica before its client can send it back: an answer that
/// hands out a new snapshot leaves only once the snapshot is in the shared store.
///
/// Replicas behind a balancer that spreads a client's requests (round robin) see the next poll,
/// long poll or live resume a few milliseconds after the answer; a snapshot kept in one
/// replica's memory and written once a second would be unknown to the others then (410, the
/// whole page again). So the answers that hand one out — a feed, a changed delta, a long poll's
/// delta — wait here, off the event loop, for one store pass: the snapshots
/// handed out meanwhile written in one transaction (on PostgreSQL without waiting for its disk
/// sync: a committed row is visible to every replica at once), then every waiting answer sent.
/// Live events do not wait: a client resumes a stream only after its `retry:` interval, so the
/// live thread asks for a pass right after sending them (``storeSoon()``), and such a pass
/// starts at most every ``livePassInterval``: a like shown on a thousand live pages is one or two
/// transactions, not one per batch of events handed to the loops.
/// Answers that arrive while a pass runs wait for the next one, so the passes group themselves
/// like the group commit's: one round trip per pass, however many answers it carries.
///
/// With one server on its own store (SQLite) nobody else reads the snapshots, and the hand-off
/// is off: answers leave at once and the maintenance thread writes snapshots every second.
/// When a pass fails (the store is unreachable), the answers go anyway: the snapshot still
/// works on this replica, and the maintenance thread writes it later.
final class SnapshotHandOff: @unchecked Sendable {
    // @unchecked: every mutable member is guarded by `condition`.

    /// Whether answers wait for their snapshots to be stored.
    let isEnabled: Bool
    private let service: FeedService
    private let logger: Logger
    private let condition = NSCondition()
    private var parked: [(responder: Responder, response: HTTPResponse)] = []
    /// Threads blocked in ``waitUntilStored()``.
    private var blocked = 0
    /// Whether ``storeSoon()`` asked for a pass that nobody waits for.
    private var asked = false
    /// When the last pass started.
    private var lastPassStart = ContinuousClock.now - .seconds(1)
    /// The least time from the start of a pass to a pass only ``storeSoon()`` asked for. Measured
    /// across 3 replicas on one core (`PHASES=cluster scripts/bench-live`, one run each): with a
    /// pass per batch of 128 events, PostgreSQL worked through each popular like's fan-out while
    /// the live threads (which yield to it) built it, and deliveries were 439 ms late at p99;
    /// 379 ms with 50 ms between passes, 332 ms with 250 ms, 290 ms with the maintenance
    /// thread's one pass a second. 100 ms keeps a killed replica's loss to the events of its
    /// last tenth of a second (their clients get a reset), far below the 2 s a client waits
    /// before it resumes a stream.
    static let livePassInterval: Duration = .milliseconds(100)
    /// The least time from the start of a pass to the next one that answers wait for. Measured
    /// in the polling mix on one PostgreSQL replica (`STORE=postgres RATES=50 scripts/bench-mix`):
    /// passes back to back were 2,000 a second of 3 snapshots each, 62 % of the time in a pass;
    /// a pass at most every millisecond made them 670 a second of 10 each, and took 17–24 % less
    /// of the hand-off thread's CPU and 8–16 % less of PostgreSQL's (two runs each). An answer
    /// waits at most this much longer; BENCHMARKS has the runs.
    static let answerPassInterval: Duration = .milliseconds(1)
    /// Passes started, and the last one finished.
    private var started: UInt64 = 0
    private var finished: UInt64 = 0
    private var stopping = false
    private var stopped = false
    private let passSeconds: DurationHistogram
    private let failures: Counter

    init(enabled: Bool, service: FeedService, logger: Logger, registry: PrometheusCollectorRegistry) {
        isEnabled = enabled
        self.service = service
        self.logger = logger
        passSeconds = registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "snapshot_handoff", unitName: "seconds",
                helpText: "Store passes that answers handing out a snapshot wait for"),
            buckets: [
                .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                .milliseconds(100), .seconds(1),
            ])
        failures = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "snapshot_handoff_failures", unitName: "total",
                helpText: "Store passes that failed (their answers went anyway)"))
        guard enabled else {
            stopped = true
            return
        }
        let thread = Thread { [self] in
            nameCurrentThread("df-handoff")
            run()
        }
        thread.start()
    }

    /// `response`, which hands out a new snapshot, sent once that snapshot is stored; as it is
    /// when the hand-off is off.
    func answer(_ response: HTTPResponse) -> HTTPResponse {
        guard isEnabled else { return response }
        return .later(from: "snapshot-handoff") { [self] responder in
            respond(responder, with: response)
            return true
        }
    }

    /// Sends `response` (which hands out a new snapshot) through `responder` once that snapshot
    /// is stored; at once when the hand-off is off. Callable from any thread.
    func respond(_ responder: Responder, with response: HTTPResponse) {
        condition.lock()
        defer { condition.unlock() }
        guard isEnabled, !stopped else {
            responder.respond { response }
            return
        }
        parked.append((responder, response))
        // With answers parked already, the thread is in a pass or waiting for the next one's
        // time: it looks at them then, and a wake-up per answer would only cost a switch.
        if parked.count == 1 { condition.signal() }
    }

    /// Blocks the calling thread (never an event loop) until a store pass that started after
    /// the call has finished: every snapshot handed out before the call is then stored.
    func waitUntilStored() {
        guard isEnabled else { return }
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return }
        let target = started + 1
        blocked += 1
        condition.signal()
        while finished < target && !stopped { condition.wait() }
        blocked -= 1
    }

    /// Asks for a store pass without waiting for it: the live streams' events leave at once and
    /// their snapshots are stored within ``livePassInterval`` (and the pass's own time). A client
    /// resumes a stream only after the `retry:` interval the stream gave it (2 s by default), long
    /// after that.
    func storeSoon() {
        guard isEnabled else { return }
        condition.signalling { asked = true }
    }

    /// Runs a last pass for the answers still waiting and stops the thread.
    func shutdown() {
        condition.stopping({ stopping = true }, until: { stopped })
    }

    private func run() {
        condition.lock()
        while true {
            if parked.isEmpty && blocked == 0 && !stopping {
                guard asked else {
                    condition.wait()
                    continue
                }
                // Only live events asked: gather them for a while (answers waiting cut it short).
                let due = lastPassStart + SnapshotHandOff.livePassInterval
                let now = ContinuousClock.now
                if now < due {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: (due - now).seconds))
                    continue
                }
            } else if !stopping {
                // Answers wait: gather those that come within the interval into this pass.
                let due = lastPassStart + SnapshotHandOff.answerPassInterval
                let now = ContinuousClock.now
                if now < due {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: (due - now).seconds))
                    continue
                }
            }
            lastPassStart = ContinuousClock.now
            let answers = parked
            parked.removeAll()
            asked = false
            started += 1
            let pass = started
            let last = stopping
            condition.unlock()

            let begin = ContinuousClock.now
            // A pass that lost a lock conflict (another replica writing rows of the same viewers:
            // PostgreSQL picks one transaction of a deadlock to fail) is tried again at once;
            // the snapshots it held were queued again.
            for attempt in 1...3 {
                do {
                    try service.storeHandedOutSnapshots()
                    break
                } catch FeedStoreError.storage(code: .busy, _) where attempt < 3 {
                    continue
                } catch {
                    failures.increment()
                    logger.warning("snapshots handed out could not be stored before their answers: \(error)")
                    break
                }
            }
            passSeconds.record(ContinuousClock.now - begin)
            for answer in answers { answer.responder.respond { answer.response } }

            condition.lock()
            finished = pass
            condition.broadcast()
            if last && parked.isEmpty {
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }
}
