public import FeedStore
import Foundation
import SystemCalls

/// Commits content writes in groups: the writes that arrive while a commit is in flight are
/// committed together in the next one (``FeedStore/FeedStorage/writeGroup(_:)``): one
/// transaction, one sync under `durability full`, one `NOTIFY` on PostgreSQL, and one index
/// catch-up for the whole group. Each write still runs, validates and fails on its own, keeps
/// its own change-log entry, and is answered only after its group is committed and applied to
/// the index, so its writer reads it back at once.
///
/// A write is a function run on the store in a savepoint of its own, or a staged write
/// (``GroupWrite/staged(_:)``, ``FeedStore/StagedWrite``): the staged writes that follow one
/// another in a group go to the store together (``FeedStore/FeedStorage/performTogether(_:)``),
/// on PostgreSQL all their statements in one round trip, and are decided one by one from the
/// answers, in order.
///
/// One thread commits; callers only queue (``submit(_:completion:)``) and are called back, so
/// no thread waits per write. Under no load a write is committed as soon as it arrives; under
/// load a group holds whatever queued during the previous commit, up to
/// ``Limits/maxWrites``. ``Limits/maxWait`` can hold a commit back a little to let a group
/// fill.
///
/// ```swift
/// let commits = GroupCommit(service: service)
/// commits.submit({ store in try store.follow(follower: 7, followee: 8) }) { result in print(result) }
/// commits.shutdown()  // commits what is queued, then stops
/// ```
public final class GroupCommit: @unchecked Sendable {
    // @unchecked: `queue` and `stopping` are guarded by `condition`; the thread is the only
    // caller of the store through this object.

    /// How large a group may grow, how long a commit may wait for one, and how many writes may
    /// queue.
    public struct Limits: Sendable {
        /// The most writes one commit holds. Default 256.
        public var maxWrites: Int
        /// How long the committer waits, after the first write of a group arrives, for more to
        /// join before it commits (added to that write's latency). Default zero: writes that
        /// queue during a commit form the next group anyway.
        public var maxWait: Duration
        /// The most writes waiting; ``GroupCommit/submit(_:completion:)`` refuses more. Default 1024.
        public var queueCapacity: Int

        /// Limits with every default.
        public init(maxWrites: Int = 256, maxWait: Duration = .zero, queueCapacity: Int = 1024) {
            self.maxWrites = max(1, maxWrites)
            self.maxWait = max(.zero, maxWait)
            self.queueCapacity = max(1, queueCapacity)
        }
    }

    /// What one commit did, for tests and metrics.
    public struct GroupReport: Sendable {
        /// Writes in the group.
        public var writes: Int
        /// Those whose own write threw (rolled back alone).
        public var failed: Int
        /// Whether the group's transaction committed.
        public var committed: Bool
    }

    /// A queued write: how it runs inside the group, whether it failed there, and its answer
    /// with the group's outcome.
    private struct Pending {
        enum Work {
            /// Runs alone on the store.
            case run((any FeedStorage) -> Void)
            /// Stages the write (nil when staging refused it) to go with its neighbours.
            case stage((any FeedStorage) -> GroupedWrite?)
        }
        let work: Work
        let failed: () -> Bool
        let finish: (FeedStoreError?) -> Void
    }

    /// A write's result between its run and its answer; only the committing thread touches it.
    private final class Outcome<T>: @unchecked Sendable {
        var result: Result<T, FeedStoreError>?
    }

    private let service: FeedService
    /// The limits it was made with.
    public let limits: Limits
    private let condition = NSCondition()
    private var queue: [Pending] = []
    private var stopping = false
    private var stopped = false
    private let onGroup: (@Sendable (GroupReport) -> Void)?

    /// Starts the committing thread over `service`'s store and index. Call ``shutdown()``.
    ///
    /// - Parameter onGroup: called on the committing thread after each group (tests, metrics).
    public init(service: FeedService, limits: Limits = Limits(), onGroup: (@Sendable (GroupReport) -> Void)? = nil) {
        self.service = service
        self.limits = limits
        self.onGroup = onGroup
        let thread = Thread { [self] in
            nameCurrentThread("df-commit")
            run()
        }
        thread.start()
    }

    /// Queues `write` for the next group. `completion` is called once, on the committing thread,
    /// with what the write returned or threw, after its group committed and the index applied
    /// it; with the group's error when the group's transaction failed (then nothing of it is
    /// stored). Returns false without queueing when ``Limits/queueCapacity`` writes already
    /// wait, or after ``shutdown()``.
    @discardableResult
    public func submit<T>(
        _ write: @escaping @Sendable (any FeedStorage) throws(FeedStoreError) -> T,
        completion: @escaping @Sendable (Result<T, FeedStoreError>) -> Void
    ) -> Bool {
        submit(.run(write), completion: completion)
    }

    /// ``submit(_:completion:)`` of a write run alone or staged.
    @discardableResult
    public func submit<T>(_ write: GroupWrite<T>, completion: @escaping @Sendable (Result<T, FeedStoreError>) -> Void) -> Bool {
        let outcome = Outcome<T>()
        let work: Pending.Work
        switch write {
        case .run(let body):
            work = .run { store in
                do throws(FeedStoreError) {
                    outcome.result = .success(try body(store))
                } catch {
                    outcome.result = .failure(error)
                }
            }
        case .staged(let stage):
            work = .stage { store in
                do throws(FeedStoreError) {
                    return try stage(store).grouped { outcome.result = $0 }
                } catch {
                    outcome.result = .failure(error)
                    return nil
                }
            }
        }
        let pending = Pending(
            work: work,
            failed: {
                guard case .failure? = outcome.result else { return false }
                return true
            },
            finish: { groupFailure in
                if let groupFailure {
                    completion(.failure(groupFailure))
                } else if let result = outcome.result {
                    completion(result)
                }
            })
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, queue.count < limits.queueCapacity else { return false }
        queue.append(pending)
        condition.signal()
        return true
    }

    /// Writes waiting for a group now (a gauge).
    public var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count
    }

    /// Refuses new writes, commits the queued ones, and returns when the thread has ended.
    /// Safe to call more than once.
    public func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !stopped { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while let group = nextGroup() {
            commit(group)
        }
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for the first write, then up to ``Limits/maxWait`` for the group to fill; returns
    /// nil once stopping with nothing queued.
    private func nextGroup() -> [Pending]? {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty && !stopping { condition.wait() }
        if queue.isEmpty { return nil }
        if limits.maxWait > .zero && !stopping {
            let (seconds, attoseconds) = limits.maxWait.components
            let deadline = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18)
            while queue.count < limits.maxWrites && !stopping && condition.wait(until: deadline) {}
        }
        let count = min(queue.count, limits.maxWrites)
        let group = Array(queue.prefix(count))
        queue.removeFirst(count)
        return group
    }

    private func commit(_ group: [Pending]) {
        let store = service.store
        var groupFailure: FeedStoreError?
        do {
            try store.writeGroup {
                // Staged writes wait for the next write that is not, which sees what they did.
                var staged: [GroupedWrite] = []
                for write in group {
                    switch write.work {
                    case .stage(let stage):
                        if let grouped = stage(store) { staged.append(grouped) }
                    case .run(let run):
                        store.performTogether(staged)
                        staged.removeAll()
                        run(store)
                    }
                }
                store.performTogether(staged)
            }
        } catch {
            groupFailure = error
        }
        let failed = group.count { $0.failed() }
        // Applied before anyone is answered, so each writer reads its own write (not read again
        // when another thread's catch-up, such as a replica's listener woken by this group's
        // NOTIFY, got there first). A failure to read the log back is not the writes' failure:
        // they are committed, and the background catch-up applies them later.
        _ = try? service.catchUp(reaching: store.changeVersion)
        for write in group { write.finish(groupFailure) }
        onGroup?(GroupReport(writes: group.count, failed: failed, committed: groupFailure == nil))
    }
}

/// A write as ``GroupCommit/submit(_:completion:)`` takes it; it runs on the committing thread,
/// inside its group's transaction.
public enum GroupWrite<Value>: Sendable {
    /// A function of the store, run alone in a savepoint of its own: any write.
    case run(@Sendable (any FeedStorage) throws(FeedStoreError) -> Value)
    /// A staged write (``FeedStore/StagedWrite``), made when its group runs (it reads the
    /// store's clock then): staged writes next to each other in a group go to the store
    /// together (``FeedStore/FeedStorage/performTogether(_:)``). A throw refuses the write
    /// without touching storage.
    case staged(@Sendable (any FeedStorage) throws(FeedStoreError) -> StagedWrite<Value>)
}
