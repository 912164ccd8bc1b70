import EventHTTP
import HTTPTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A deadline measures the client's own slowness only: time the event loop spent blocked (a
/// handler running on it) is the server's, and a request that arrived whole is answered.
@Suite("Deadlines while the loop is blocked")
struct BlockedLoopTests {
    /// Before: after a handler held the only loop for 1.5 s (timeout 0.5 s), the deadline sweep
    /// and libevent's read timeout closed the keep-alive connections whose complete requests had
    /// arrived meanwhile: their clocks ran from the previous response.
    @Test("Complete requests that waited behind a blocked loop are answered") func completeRequestsThatWaitedBehindABlockedLoopAreAnswered() throws {
        let entered = Atomic<Bool>(false)
        try withTestServer(
            threads: 1, configure: { $0.requestTimeout = .milliseconds(500) },
            routes: { router in
                router.get("/block") { _ in
                    entered.store(true, ordering: .releasing)
                    usleep(1_500_000)
                    return .text("unblocked")
                }
            }
        ) { server in
            let clients = try (0..<100).map { _ in try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10) }
            for (index, client) in clients.enumerated() {
                #expect(try client.request("GET", "/hello/\(index)").status == 200)
            }
            let blocker = try RawHTTPClient(port: server.port)
            #expect(blocker.send("GET /block HTTP/1.1\r\nHost: x\r\n\r\n"))
            while !entered.load(ordering: .acquiring) { usleep(1000) }
            for (index, client) in clients.enumerated() {
                #expect(client.send("GET /hello/again\(index) HTTP/1.1\r\nHost: x\r\n\r\n"))
            }
            let unblocked = try? blocker.readResponse()
            #expect(unblocked?.bodyText == "unblocked")
            var answered = 0
            for (index, client) in clients.enumerated() {
                if let response = try? client.readResponse(), response.bodyText == "hello again\(index) q=-" {
                    answered += 1
                }
            }
            #expect(answered == clients.count, "\(clients.count - answered) complete requests were dropped")
        }
    }

    /// Before: libevent's write timeout (the request timeout, 0.5 s) cut off an answer that was
    /// being written when a handler blocked the loop for 1.5 s: the client had read nothing
    /// because the server could send nothing.
    @Test("A long answer interrupted by a blocked loop is completed") func aLongAnswerInterruptedByABlockedLoopIsCompleted() throws {
        let entered = Atomic<Bool>(false)
        let big = [UInt8](repeating: UInt8(ascii: "b"), count: 24 << 20)
        try withTestServer(
            threads: 1, configure: { $0.requestTimeout = .milliseconds(500) },
            routes: { router in
                router.get("/block") { _ in
                    entered.store(true, ordering: .releasing)
                    usleep(1_500_000)
                    return .text("unblocked")
                }
                router.get("/big") { _ in HTTPResponse(status: 200, contentType: "application/octet-stream", body: big) }
            }
        ) { server in
            let reader = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10)
            #expect(reader.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"))
            // Let the server fill the socket buffers, then block its loop before the reader drains them.
            usleep(200_000)
            let blocker = try RawHTTPClient(port: server.port)
            #expect(blocker.send("GET /block HTTP/1.1\r\nHost: x\r\n\r\n"))
            while !entered.load(ordering: .acquiring) { usleep(1000) }
            let unblocked = try? blocker.readResponse()
            #expect(unblocked?.bodyText == "unblocked")
            let response = try? reader.readResponse()
            #expect(response?.status == 200)
            #expect(response?.body.count == big.count, "the answer was cut off")
        }
    }

    /// A client that stops reading its answer is still closed once it has made no progress for the
    /// request timeout (while the loop was free to write).
    @Test("A client that stops reading its answer is closed") func aClientThatStopsReadingItsAnswerIsClosed() throws {
        let big = [UInt8](repeating: UInt8(ascii: "b"), count: 24 << 20)
        try withTestServer(
            threads: 1, configure: { $0.requestTimeout = .milliseconds(500) },
            routes: { router in
                router.get("/big") { _ in HTTPResponse(status: 200, contentType: "application/octet-stream", body: big) }
            }
        ) { server in
            let stalled = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            #expect(stalled.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"))
            usleep(2_500_000)
            #expect(try RawHTTPClient(port: server.port).request("GET", "/hello/other").status == 200)
            let response = try? stalled.readResponse()
            #expect(response == nil, "the server kept a client that read nothing for 2.5 s")
        }
    }
}

/// An answer leaves when it is made, not when the loop has handled every other request the same
/// poll readied.
@Suite("Answers written at once")
struct AnswersWrittenAtOnceTests {
    /// Before: evhttp queued each answer and wrote it on the loop's next turn, so a quick answer
    /// handled first waited for a slow handler run after it in the same turn (here 0.7 s).
    @Test("A quick answer does not wait for a slow handler in the same turn of the loop") func aQuickAnswerDoesNotWaitForASlowHandler() throws {
        let entered = Atomic<Bool>(false)
        try withTestServer(
            threads: 1,
            routes: { router in
                router.get("/block") { _ in
                    entered.store(true, ordering: .releasing)
                    usleep(300_000)
                    return .text("unblocked")
                }
                router.get("/slow") { _ in
                    usleep(700_000)
                    return .text("slow")
                }
            }
        ) { server in
            let blocker = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10)
            let quick = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10)
            let slow = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10)
            #expect(blocker.send("GET /block HTTP/1.1\r\nHost: x\r\n\r\n"))
            while !entered.load(ordering: .acquiring) { usleep(1000) }
            // Both arrive while the loop is blocked, the quick one first: the next poll readies
            // them in that order, and the loop handles them one after the other.
            #expect(quick.send("GET /hello/quick HTTP/1.1\r\nHost: x\r\n\r\n"))
            usleep(50_000)
            #expect(slow.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"))
            #expect(try blocker.readResponse().bodyText == "unblocked")
            #expect(try quick.readResponse().bodyText == "hello quick q=-")
            let quickAnswered = ContinuousClock.now
            #expect(try slow.readResponse().bodyText == "slow")
            let gap = ContinuousClock.now - quickAnswered
            #expect(gap > .milliseconds(350), "the quick answer arrived \(gap) before the slow one: it waited for the slow handler")
            // The connections go on: their next requests are read and answered.
            #expect(try quick.request("GET", "/hello/again").bodyText == "hello again q=-")
            #expect(try slow.request("GET", "/hello/later").bodyText == "hello later q=-")
        }
    }

    /// Answers that end their connection are still written whole, and the connection closed
    /// after them: a client's `Connection: close`, and HTTP/1.0 without keep-alive.
    @Test("A client that asks to close gets its whole answer, then the close") func aClientThatAsksToCloseGetsItsAnswerThenTheClose() throws {
        try withTestServer(threads: 1) { server in
            for request in ["GET /hello/bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET /hello/bye HTTP/1.0\r\n\r\n"] {
                let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 10)
                #expect(client.send(request))
                #expect(try client.readResponse().bodyText == "hello bye q=-")
                #expect(client.waitForClose(), "the connection stayed open after \(request.prefix(30))")
            }
        }
    }
}
