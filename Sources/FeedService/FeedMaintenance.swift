import FeedStore
import Foundation
import Synchronization
import SystemCalls

/// The service's background upkeep, on one thread of its own, so none of it runs on a request:
/// - every `catchUpInterval`, apply change-log entries written by other processes (writes made
///   through ``FeedService/write(_:)`` are applied at once), note the changes on the cached pages
///   they may touch, and trim snapshot memory to its budget;
/// - every `persistInterval`, write the snapshots handed out since to the store, in one batch;
/// - every `pruneInterval`, drop expired snapshots (memory and store) and trim the change log.
///
/// Storing and freeing snapshots wait while `isBusy` says latency-bound work is under way (the
/// server's live thread sending a change to its streams), for at most `deferral`: that work runs
/// at a lower priority than this thread, and a store pass of the last change's snapshots made a
/// like's deliveries wait for it (BENCHMARKS, session 23). A pass that has started pauses too,
/// between runs of its work, when that work begins meanwhile (for at most another `deferral` a
/// pass), except in the store's own transaction, and unless answers wait for store passes
/// (`answersWaitForPasses`).
///
/// ``stop()`` persists what is left, the snapshots kept only in memory included, so a clean
/// shutdown loses no snapshot; after a crash the snapshots of the last `persist + 2 × deferral`
/// are lost (those ids answer 410), and so are older ones whose client had moved on before a
/// pass took them (``FeedService/storeEverySnapshot()``).
public final class FeedMaintenance: Sendable {
    /// How often each task runs.
    public struct Intervals: Sendable {
        public var catchUp: Duration = .milliseconds(250)
        public var persist: Duration = .seconds(1)
        public var prune: Duration = .seconds(60)
        /// How long the snapshot store pass and the memory trim may wait, past their time, while
        /// the work `isBusy` reports runs.
        public var deferral: Duration = .milliseconds(300)

        public init() {}
    }

    private let service: FeedService
    private let intervals: Intervals
    private let report: @Sendable (String) -> Void
    private let isBusy: @Sendable () -> Bool
    private let answersWaitForPasses: Bool
    private let stopping = Mutex(false)
    private let finished = Mutex(false)

    /// Starts the upkeep thread. `isBusy` says whether latency-bound work is under way (called
    /// from this thread, often: it must be cheap); `report` receives one line per failure (log it).
    /// `answersWaitForPasses` is for a server whose answers wait for store passes
    /// (``FeedService/storeHandedOutSnapshots()``): this thread's passes then hold theirs up as
    /// little as they can. They do not pause under way, and their pruning goes in a transaction
    /// of its own after the pass (``FeedService/persistSnapshots(rowsPerTransaction:pruningApart:pause:)``).
    public init(
        service: FeedService, intervals: Intervals = Intervals(), isBusy: @escaping @Sendable () -> Bool = { false },
        answersWaitForPasses: Bool = false, report: @escaping @Sendable (String) -> Void
    ) {
        self.service = service
        self.intervals = intervals
        self.isBusy = isBusy
        self.answersWaitForPasses = answersWaitForPasses
        self.report = report
        let thread = Thread { [self] in
            nameCurrentThread("df-maintenance")
            // At the default priority, unlike the live and long-poll threads: at nice 10 its
            // snapshot transaction, preempted, held SQLite's one writer while writes waited
            // (BENCHMARKS, sessions 15 and 16).
            run()
        }
        thread.start()
    }

    /// Stops the thread after one last catch-up and persist; returns when it is done. Safe to
    /// call more than once.
    public func stop() {
        stopping.withLock { $0 = true }
        while !finished.withLock({ $0 }) { usleep(2_000) }
    }

    private func run() {
        let clock = ContinuousClock()
        var nextCatchUp = clock.now
        var nextPersist = clock.now + intervals.persist
        var nextPrune = clock.now + intervals.prune
        var nextTrim = clock.now
        while !stopping.withLock({ $0 }) {
            let now = clock.now
            // Work that may wait: due, and either nothing is busy or it has waited long enough.
            var deferred = false
            func mayRun(_ due: ContinuousClock.Instant) -> Bool {
                guard now >= due else { return false }
                if now < due + intervals.deferral && isBusy() {
                    deferred = true
                    return false
                }
                return true
            }
            if mayRun(nextTrim) {
                service.trimSnapshotMemory(pause: pauser())
                nextTrim = now + intervals.catchUp
            }
            if now >= nextCatchUp {
                attempt("catching up with the change log") { () throws(FeedStoreError) in try service.catchUp() }
                service.noteChanges()
                nextCatchUp = now + intervals.catchUp
            }
            if mayRun(nextPersist) {
                let pause = pauser()
                attempt("persisting snapshots") { () throws(FeedStoreError) in try service.persistSnapshots(pruningApart: answersWaitForPasses, pause: pause) }
                nextPersist = now + intervals.persist
            }
            if now >= nextPrune {
                attempt("pruning expired snapshots") { () throws(FeedStoreError) in try service.pruneExpired() }
                nextPrune = now + intervals.prune
            }
            // Deferred work looks again soon: the busy spell may end any moment.
            usleep(deferred ? 5_000 : 20_000)
        }
        attempt("persisting snapshots at shutdown") { () throws(FeedStoreError) in try service.persistEverySnapshot() }
        finished.withLock { $0 = true }
    }

    /// What a pass calls between runs of its work: waits while `isBusy`, at most `deferral` in
    /// all for the pass (nothing when answers wait for passes).
    private func pauser() -> () -> Void {
        guard !answersWaitForPasses else { return {} }
        let clock = ContinuousClock()
        let deadline = clock.now + intervals.deferral
        return { [isBusy] in
            while isBusy(), clock.now < deadline { usleep(1_000) }
        }
    }

    private func attempt(_ what: String, _ body: () throws(FeedStoreError) -> Void) {
        do {
            try body()
        } catch {
            report("\(what) failed: \(error)")
        }
    }
}
