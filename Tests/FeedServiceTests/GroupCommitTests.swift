import FeedIndex
import FeedService
import FeedStore
import Foundation
import SQLiteStore
import Synchronization
import Testing

@Suite("Group commit of the service's writes")
struct GroupCommitTests {
    /// What the completions saw, and the groups committed.
    final class Outcomes: Sendable {
        let results = Mutex<[Int64: Result<Int64, FeedStoreError>]>([:])
        let readBack = Mutex<[Int64: Int64]>([:])
        let groups = Mutex<[GroupCommit.GroupReport]>([])
        let answered = DispatchGroup()
    }

    /// Submits like-count edits of `ids` (each to 1000 + id); a completion records the result and
    /// the like count the index holds at that moment.
    func submitLikes(_ ids: [Int64], to commits: GroupCommit, service: FeedService, outcomes: Outcomes) -> [Bool] {
        ids.map { id in
            outcomes.answered.enter()
            let accepted = commits.submit({ store throws(FeedStoreError) in try store.updateVideo(id: id, likeCount: 1000 + id).likeCount }) {
                result in
                outcomes.results.withLock { $0[id] = result }
                let seen = service.index.read { $0.video(id)?.value.likeCount }
                outcomes.readBack.withLock { $0[id] = seen ?? -1 }
                outcomes.answered.leave()
            }
            if !accepted { outcomes.answered.leave() }
            return accepted
        }
    }

    @Test("Writes queued together commit as one group; each is answered after the index has it, a failing one with its own error")
    func writesQueuedTogetherCommitAsOneGroup() throws {
        let service = try makeService()
        let outcomes = Outcomes()
        let commits = GroupCommit(service: service, limits: GroupCommit.Limits(maxWait: .milliseconds(500))) { report in
            outcomes.groups.withLock { $0.append(report) }
        }
        defer { commits.shutdown() }
        let versionBefore = service.store.changeVersion
        let ids: [Int64] = Array(1...20) + [999_999]
        #expect(submitLikes(ids, to: commits, service: service, outcomes: outcomes).allSatisfy { $0 })
        #expect(outcomes.answered.wait(timeout: .now() + 30) == .success)
        // The report comes after the answers, on the committing thread: let it finish first.
        commits.shutdown()
        let groups = outcomes.groups.withLock { $0 }
        #expect(groups.count == 1)
        #expect(groups.first?.writes == 21 && groups.first?.failed == 1 && groups.first?.committed == true)
        for id in ids.dropLast() {
            #expect(try outcomes.results.withLock { $0[id] }?.get() == 1000 + id)
            #expect(outcomes.readBack.withLock { $0[id] } == 1000 + id, "answered before the index applied video \(id)")
        }
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "999999")) { try outcomes.results.withLock { $0[999_999] }?.get() }
        #expect(service.store.changeVersion == versionBefore + 20)
    }

    /// Limits, the writes queued at once behind a first write that holds the committing thread,
    /// and the groups that must commit them.
    struct Bound: Sendable, CustomTestStringConvertible {
        let limits: GroupCommit.Limits
        let waiting: Int
        let groups: [Int]
        var testDescription: String { "at most \(limits.maxWrites), \(waiting) waiting" }
    }

    @Test(
        "No group holds more than the most writes per commit (256 by default) when more than that wait at once",
        arguments: [
            Bound(limits: GroupCommit.Limits(), waiting: 600, groups: [1, 256, 256, 88]),
            Bound(limits: GroupCommit.Limits(maxWrites: 5), waiting: 12, groups: [1, 5, 5, 2]),
        ])
    func groupsAreBounded(bound: Bound) throws {
        let (limits, waiting, expected) = (bound.limits, bound.waiting, bound.groups)
        let service = try makeService()
        let groups = Mutex<[Int]>([])
        let commits = GroupCommit(service: service, limits: limits) { report in groups.withLock { $0.append(report.writes) } }
        defer { commits.shutdown() }
        // A first write holds the committing thread until every other write is queued.
        let (started, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let answered = DispatchGroup()
        let results = Mutex<[Int: Result<Int, FeedStoreError>]>([:])
        answered.enter()
        #expect(
            commits.submit({ _ throws(FeedStoreError) in
                started.signal()
                release.wait()
                return -1
            }) { _ in answered.leave() })
        started.wait()
        for write in 0..<waiting {
            answered.enter()
            let accepted = commits.submit({ _ throws(FeedStoreError) in write }) { result in
                results.withLock { $0[write] = result }
                answered.leave()
            }
            #expect(accepted, "write \(write) refused")
            if !accepted { answered.leave() }
        }
        #expect(commits.waiting == waiting)
        release.signal()
        #expect(answered.wait(timeout: .now() + 30) == .success)
        // The report comes after the answers, on the committing thread: let it finish first.
        commits.shutdown()
        #expect(groups.withLock { $0 } == expected)
        #expect(try (0..<waiting).allSatisfy { write in try results.withLock { $0[write] }?.get() == write }, "every write answered with its own value")
    }

    @Test("A full queue refuses the write at once")
    func fullQueueRefuses() throws {
        let service = try makeService()
        let outcomes = Outcomes()
        let commits = GroupCommit(service: service, limits: GroupCommit.Limits(maxWait: .milliseconds(500), queueCapacity: 2))
        let accepted = submitLikes([1, 2, 3], to: commits, service: service, outcomes: outcomes)
        #expect(accepted == [true, true, false])
        commits.shutdown()
        #expect(outcomes.answered.wait(timeout: .now() + 30) == .success)
        #expect(outcomes.results.withLock { $0.count } == 2)
    }

    @Test("Shutdown commits what is queued before it returns, then refuses")
    func shutdownCommitsTheQueue() throws {
        let service = try makeService()
        let outcomes = Outcomes()
        let commits = GroupCommit(service: service, limits: GroupCommit.Limits(maxWait: .seconds(60)))
        _ = submitLikes([4, 5], to: commits, service: service, outcomes: outcomes)
        commits.shutdown()
        #expect(outcomes.results.withLock { $0.count } == 2, "shutdown returned before the queued writes were answered")
        #expect(try outcomes.results.withLock { $0[5] }?.get() == 1005)
        #expect(submitLikes([6], to: commits, service: service, outcomes: outcomes) == [false])
    }

    @Test("When the group's transaction fails, every write in it gets that error and nothing is stored")
    func failedGroupFailsEveryWrite() throws {
        let store = try SQLiteFeedStore.temporary(options: StorageOptions(busyTimeout: 0.05))
        try store.seed(DemoSeed(users: 10, videos: 30, ads: 1, seed: 2))
        let service = try FeedService(store: store)
        // Another connection to the same file holds the write lock: the group cannot begin.
        let other = try SQLiteFeedStore(path: store.path)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? other.writeGroup {
                _ = try? other.updateVideo(id: 1, likeCount: 1)  // takes the lock
                holding.signal()
                release.wait()
            }
            released.signal()
        }
        holding.wait()
        let outcomes = Outcomes()
        let commits = GroupCommit(service: service)
        _ = submitLikes([2, 3], to: commits, service: service, outcomes: outcomes)
        #expect(outcomes.answered.wait(timeout: .now() + 30) == .success)
        release.signal()
        released.wait()
        commits.shutdown()
        for id: Int64 in [2, 3] {
            let result = outcomes.results.withLock { $0[id] }
            #expect(throws: FeedStoreError.self) { try result?.get() }
        }
        try service.catchUp()
        #expect(service.index.read { $0.video(2)?.value.likeCount } != 1002)
    }
}
