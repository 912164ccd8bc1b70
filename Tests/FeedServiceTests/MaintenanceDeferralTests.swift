import FeedStore
import Foundation
import Synchronization
import Testing

// @testable: these tests set how often a store pass may pause (`pauseEvery`), an internal knob of
// snapshot upkeep that only tests need to turn.
@testable import FeedService

/// Snapshot upkeep waits while latency-bound work runs (the live thread sending a change), for
/// a bounded time: what it stores is stored late, never lost.
@Suite("Snapshot upkeep waits for latency-bound work, for a bounded time")
struct MaintenanceDeferralTests {
    @Test("A store pass waits while busy, runs when the work ends, and runs anyway once the deferral is up")
    func storePassWaitsBoundedly() throws {
        let clock = ContinuousClock()
        for endsBusy in [true, false] {
            let service = try makeService()
            let busy = Atomic(true)
            var intervals = FeedMaintenance.Intervals()
            intervals.persist = .milliseconds(50)
            intervals.deferral = .seconds(2)
            let started = clock.now
            let maintenance = FeedMaintenance(service: service, intervals: intervals, isBusy: { busy.load(ordering: .relaxed) }) { _ in }
            defer { maintenance.stop() }
            let page = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12))
            func stored() throws -> Bool { try service.store.snapshot(id: page.snapshotID, viewer: 1) != nil }
            // Many persist intervals, well inside the deferral: nothing is stored yet.
            usleep(500_000)
            #expect(try !stored(), "a pass waits while busy")
            if endsBusy { busy.store(false, ordering: .relaxed) }
            let deadline = clock.now + .seconds(10)
            while try !stored(), clock.now < deadline { usleep(10_000) }
            #expect(try stored())
            let waited = clock.now - started
            if endsBusy {
                #expect(waited < .seconds(2), "stored once the busy spell ends, before the deferral is up (\(waited))")
            } else {
                #expect(waited >= .seconds(2), "stored when the deferral is up (\(waited))")
            }
        }
    }

    @Test("A store pass under way pauses between runs of its snapshots, before anything is stored")
    func storePassPausesBeforeItsTransaction() throws {
        let service = try makeService()
        // 40 viewers × 15 limits: 600 snapshots handed out, so two pauses in the pass.
        var pages: [(viewer: Int64, id: String)] = []
        for viewer in Int64(1)...40 {
            for limit in 1...15 {
                pages.append((viewer, try service.feed(viewer: viewer, parameters: FeedParameters(limit: limit)).snapshotID))
            }
        }
        var pauses = 0
        var storedAtPause: [Bool] = []
        try service.persistSnapshots {
            pauses += 1
            storedAtPause.append((try? service.store.snapshot(id: pages[0].id, viewer: pages[0].viewer)) != nil)
        }
        #expect(pauses == 600 / FeedService.pauseEvery)
        #expect(storedAtPause.allSatisfy { !$0 }, "the pass paused before its transaction")
        for page in pages {
            #expect(try service.store.snapshot(id: page.id, viewer: page.viewer) != nil)
        }
    }

    @Test("A pass under way pauses while busy, at most another deferral, unless pausing is off")
    func passesPauseBoundedly() throws {
        let clock = ContinuousClock()
        for pausesInPasses in [true, false] {
            let service = try makeService()
            var first: (viewer: Int64, id: String)?
            for viewer in Int64(1)...40 {
                for limit in 1...15 {
                    let id = try service.feed(viewer: viewer, parameters: FeedParameters(limit: limit)).snapshotID
                    if first == nil { first = (viewer, id) }
                }
            }
            var intervals = FeedMaintenance.Intervals()
            intervals.persist = .milliseconds(50)
            intervals.deferral = .seconds(1)
            let started = clock.now
            // Busy all along: the pass starts once its deferral is up, then pauses (or not).
            let maintenance = FeedMaintenance(service: service, intervals: intervals, isBusy: { true }, answersWaitForPasses: !pausesInPasses) { _ in }
            defer { maintenance.stop() }
            let deadline = clock.now + .seconds(10)
            while try service.store.snapshot(id: first!.id, viewer: first!.viewer) == nil, clock.now < deadline { usleep(10_000) }
            let waited = clock.now - started
            if pausesInPasses {
                #expect(waited >= .milliseconds(1_900), "deferred a second, then paused a second (\(waited))")
                #expect(waited < .seconds(5))
            } else {
                #expect(waited >= .milliseconds(950) && waited < .milliseconds(1_900), "deferred a second, not paused (\(waited))")
            }
        }
    }
}
