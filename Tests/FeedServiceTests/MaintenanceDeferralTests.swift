import FeedStore
import Foundation
import Synchronization
import Testing

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
}
