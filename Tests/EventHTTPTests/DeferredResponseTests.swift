import EventHTTP
import HTTPTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A gate a pool job waits on until the test opens it.
final class Gate: Sendable {
    private let isOpen = Mutex(false)

    func open() { isOpen.withLock { $0 = true } }

    /// Waits until opened, for at most 10 s.
    func wait() {
        for _ in 0..<10_000 {
            if isOpen.withLock({ $0 }) { return }
            usleep(1000)
        }
    }
}

extension Router {
    /// `GET path` answered "done" on `pool` once `gate` opens.
    mutating func get(_ path: String, waitingOn gate: Gate, in pool: BlockingPool) {
        get(path) { _ in
            .deferred(to: pool) {
                gate.wait()
                return .text("done")
            }
        }
    }
}

@Suite("Deferred responses: work on a BlockingPool, answered by the loop")
struct DeferredResponseTests {
    @Test("Loop keeps serving while a pool job blocks") func loopKeepsServingWhileAPoolJobBlocks() throws {
        let pool = BlockingPool(name: "slow", threads: 1, queueCapacity: 4)
        defer { pool.shutdown() }
        let gate = Gate()
        try withTestServer(
            threads: 1,
            routes: { router in
                router.get("/slow", waitingOn: gate, in: pool)
            }
        ) { server in
            let slow = try RawHTTPClient(port: server.port)
            #expect(slow.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"))
            // The only worker answers another connection while /slow waits on the pool.
            let other = try RawHTTPClient(port: server.port).request("GET", "/hello/a")
            #expect(other.status == 200)
            gate.open()
            let answer = try slow.readResponse()
            #expect(answer.status == 200)
            #expect(answer.bodyText == "done")
            // The connection stays usable for the next request.
            #expect(try slow.request("GET", "/hello/b").status == 200)
        }
    }

    @Test("Full pool answers 503 with retry after at once") func fullPoolAnswers503WithRetryAfterAtOnce() throws {
        let pool = BlockingPool(name: "tiny", threads: 1, queueCapacity: 1)
        defer { pool.shutdown() }
        let gate = Gate()
        try withTestServer(
            threads: 1,
            routes: { router in
                router.get("/slow", waitingOn: gate, in: pool)
            }
        ) { server in
            // One job runs, one waits in the queue: the third is refused.
            let running = try RawHTTPClient(port: server.port)
            #expect(running.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"))
            let queued = try RawHTTPClient(port: server.port)
            for _ in 0..<1000 where pool.load.running == 0 { usleep(1000) }
            #expect(queued.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"))
            for _ in 0..<1000 where pool.load.waiting == 0 { usleep(1000) }
            let refused = try RawHTTPClient(port: server.port).request("GET", "/slow")
            #expect(refused.status == 503)
            #expect(refused.header("Retry-After") == "1")
            #expect(refused.bodyText.contains(#""code":"overloaded""#))
            gate.open()
            #expect(try running.readResponse().status == 200)
            #expect(try queued.readResponse().status == 200)
        }
    }

    @Test("Errors thrown on the pool become their responses") func errorsThrownOnThePoolBecomeTheirResponses() throws {
        let pool = BlockingPool(name: "errors", threads: 1, queueCapacity: 4)
        defer { pool.shutdown() }
        try withTestServer(
            threads: 1,
            routes: { router in
                router.get("/teapot-later") { _ in
                    .deferred(to: pool) { throw HTTPError(status: 418, code: "teapot", message: "later") }
                }
                router.get("/crash-later") { _ in
                    struct Secret: Error {}
                    return .deferred(to: pool) { throw Secret() }
                }
            }
        ) { server in
            let client = try RawHTTPClient(port: server.port)
            let teapot = try client.request("GET", "/teapot-later")
            #expect(teapot.status == 418)
            #expect(teapot.bodyText.contains(#""code":"teapot""#))
            let crash = try client.request("GET", "/crash-later")
            #expect(crash.status == 500)
            #expect(!crash.bodyText.contains("Secret"))
        }
    }

    /// A client that leaves while its request is on the pool: the answer is dropped and the
    /// worker goes on (no crash, no leak of the connection's slot in the drain count).
    @Test("Client gone before the answer is harmless") func clientGoneBeforeTheAnswerIsHarmless() throws {
        let pool = BlockingPool(name: "slow", threads: 1, queueCapacity: 4)
        defer { pool.shutdown() }
        let gate = Gate()
        try withTestServer(
            threads: 1, configure: { $0.shutdownGracePeriod = .seconds(5) },
            routes: { router in
                router.get("/slow", waitingOn: gate, in: pool)
            }
        ) { server in
            do {
                let leaving = try RawHTTPClient(port: server.port)
                #expect(leaving.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"))
                for _ in 0..<1000 where pool.load.running == 0 { usleep(1000) }
            }  // closed here
            usleep(50_000)
            gate.open()
            usleep(50_000)
            #expect(try RawHTTPClient(port: server.port).request("GET", "/hello/still").status == 200)
        }
    }

    @Test("Pool runs jobs in order and refuses after shutdown") func poolRunsJobsInOrderAndRefusesAfterShutdown() {
        let pool = BlockingPool(name: "order", threads: 1, queueCapacity: 100)
        let seen = Mutex<[Int]>([])
        for index in 0..<50 {
            #expect(pool.trySubmit { seen.withLock { $0.append(index) } })
        }
        pool.shutdown()
        #expect(seen.withLock { $0 } == Array(0..<50))
        #expect(!pool.trySubmit {})
        pool.shutdown()
    }
}
