import EventHTTP
import Testing

@Suite("Connection deadlines state machine")
struct ConnectionDeadlinesTests {
    @Test("Connection that never completes a request expires once") func connectionThatNeverCompletesARequestExpiresOnce() {
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

    @Test("Handling connections never expire and count as in flight") func handlingConnectionsNeverExpireAndCountAsInFlight() {
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

    @Test("Closing while handling releases the in flight count") func closingWhileHandlingReleasesTheInFlightCount() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        deadlines.requestStarted(1)
        let r11 = deadlines.closed(1)
        #expect(r11 == .handling)
        #expect(deadlines.inFlight == 0)
        let completedAfterClose = deadlines.responseCompleted(1, now: 5)
        #expect(!completedAfterClose)
    }

    @Test("Drain closes only idle connections") func drainClosesOnlyIdleConnections() {
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

@Suite("Connection deadlines: only the client's own slowness counts")
struct ClientSlownessDeadlineTests {
    @Test("A blocked loop moves every running deadline back") func aBlockedLoopMovesEveryRunningDeadlineBack() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        deadlines.accepted(2, now: 0)
        deadlines.requestStarted(2)
        deadlines.responseStarted(2, pending: 10, now: 0)
        deadlines.accepted(3, now: 0)
        deadlines.requestStarted(3)
        // The loop was blocked from 20 to 520: that time is the server's.
        deadlines.loopStalled(for: 500)
        #expect(deadlines.state(of: 1) == .awaitingRequest(since: 500))
        #expect(deadlines.state(of: 2) == .writing(since: 500, pending: 10))
        #expect(deadlines.state(of: 3) == .handling)
        let result1 = deadlines.expired(now: 520)
        #expect(result1.isEmpty)
        let result2 = deadlines.expired(now: 600)
        #expect(Set(result2) == [1, 2])
    }

    @Test("A connection with unread bytes is spared until they are read") func aConnectionWithUnreadBytesIsSparedUntilTheyAreRead() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        deadlines.accepted(2, now: 0)
        var unread: Set<Int> = [1]
        let result3 = deadlines.expired(now: 150, hasUnreadInput: { unread.contains($0) })
        #expect(result3 == [2])
        #expect(deadlines.state(of: 1) == .awaitingRequest(since: 0), "still waiting, not closing")
        // Read, and they were the whole request.
        let result4 = deadlines.requestStarted(1)
        #expect(result4)
        unread = []
        let result5 = deadlines.expired(now: 300, hasUnreadInput: { unread.contains($0) })
        #expect(result5.isEmpty)
        // Read, and they were not: closed on the next sweep.
        deadlines.accepted(3, now: 0)
        unread = [3]
        let result6 = deadlines.expired(now: 400, hasUnreadInput: { unread.contains($0) })
        #expect(result6.isEmpty)
        unread = []
        let result7 = deadlines.expired(now: 450, hasUnreadInput: { unread.contains($0) })
        #expect(result7 == [3])
    }

    @Test("A client must keep taking its answer") func aClientMustKeepTakingItsAnswer() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        deadlines.requestStarted(1)
        // Handling takes as long as it takes.
        let result8 = deadlines.expired(now: 5_000)
        #expect(result8.isEmpty)
        deadlines.responseStarted(1, pending: 1000, now: 5_000)
        #expect(deadlines.inFlight == 1)
        deadlines.outputPending(1, 900, now: 5_090)
        #expect(deadlines.state(of: 1) == .writing(since: 5_090, pending: 900), "progress restarts the clock")
        deadlines.outputPending(1, 900, now: 5_150)
        let result9 = deadlines.expired(now: 5_189)
        #expect(result9.isEmpty)
        let result10 = deadlines.expired(now: 5_190)
        #expect(result10 == [1], "no progress for the timeout")
        #expect(deadlines.inFlight == 0)
        let result11 = deadlines.closed(1)
        #expect(result11 == .closing)
    }

    @Test("A written answer starts the wait for the next request") func aWrittenAnswerStartsTheWaitForTheNextRequest() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        deadlines.requestStarted(1)
        deadlines.responseStarted(1, pending: 10, now: 10)
        let result12 = deadlines.responseCompleted(1, now: 20)
        #expect(result12)
        #expect(deadlines.inFlight == 0)
        #expect(deadlines.state(of: 1) == .awaitingRequest(since: 20))
        // A close while writing releases the in-flight count once.
        deadlines.requestStarted(1)
        deadlines.responseStarted(1, pending: 10, now: 30)
        let result13 = deadlines.closed(1)
        #expect(result13?.isInFlight == true)
        #expect(deadlines.inFlight == 0)
    }

    @Test("Closing for the servers own reasons counts once") func closingForTheServersOwnReasonsCountsOnce() {
        var deadlines = ConnectionDeadlines<Int>(requestTimeout: 100)
        deadlines.accepted(1, now: 0)
        let result14 = deadlines.close(1)
        #expect(result14)
        let result15 = deadlines.close(1)
        #expect(!result15)
        let result16 = deadlines.expired(now: 1_000)
        #expect(result16.isEmpty)
        #expect(deadlines.state(of: 1) == .closing)
    }
}
