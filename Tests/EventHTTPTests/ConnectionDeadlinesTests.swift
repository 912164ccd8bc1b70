import Testing
@testable import EventHTTP

@Suite("Connection deadlines state machine")
struct ConnectionDeadlinesTests {
    @Test func connectionThatNeverCompletesARequestExpiresOnce() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        let r1 = deadlines.expired(now: 99)
        #expect(r1.isEmpty)
        let r2 = deadlines.expired(now: 100)
        #expect(r2 == [1])
        let r3 = deadlines.expired(now: 500)
        #expect(r3.isEmpty, "already closing")
        let r4 = deadlines.closed(1)
        #expect(r4 == .closing)
        let r5 = deadlines.closed(1)
        #expect(r5 == nil, "released once")
    }

    @Test func handlingConnectionsNeverExpireAndCountAsInFlight() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        let r6 = deadlines.requestStarted(1)
        #expect(r6)
        #expect(deadlines.inFlight == 1)
        let r7 = deadlines.expired(now: 10_000)
        #expect(r7.isEmpty)
        let r8 = deadlines.responseCompleted(1, now: 10_000)
        #expect(r8)
        #expect(deadlines.inFlight == 0)
        let r9 = deadlines.expired(now: 10_050)
        #expect(r9.isEmpty, "idle clock restarted at completion")
        let r10 = deadlines.expired(now: 10_100)
        #expect(r10 == [1])
    }

    @Test func closingWhileHandlingReleasesTheInFlightCount() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        deadlines.requestStarted(1)
        let r11 = deadlines.closed(1)
        #expect(r11 == .handling)
        #expect(deadlines.inFlight == 0)
        let completedAfterClose = deadlines.responseCompleted(1, now: 5)
        #expect(!completedAfterClose)
    }

    @Test func drainClosesOnlyIdleConnections() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        deadlines.accepted(2, now: 0)
        deadlines.requestStarted(2)
        let r12 = deadlines.closeIdle()
        #expect(r12 == [1])
        #expect(deadlines.state(of: 2) == .handling)
        #expect(deadlines.inFlight == 1)
    }
}
