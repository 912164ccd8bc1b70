import EventHTTP
import HTTPTestSupport
import Logging
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Starts a server on an ephemeral loopback port with a small test router, runs `body`, and
/// always shuts the server down.
func withTestServer(
    threads: Int = 2,
    configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    routes: (inout Router) -> Void = { _ in },
    _ body: (HTTPServer) throws -> Void
) throws {
    var router = Router()
    router.get("/hello/{name}") { request in
        .text("hello \(request.pathParameters["name"] ?? "?") q=\(request.query["q"] ?? "-")")
    }
    router.post("/echo") { request in
        HTTPResponse(status: 201, contentType: "application/octet-stream", body: request.body)
    }
    router.get("/fail") { _ in
        struct Secret: Error {}
        throw Secret()
    }
    router.get("/teapot") { _ in
        throw HTTPError(status: 418, code: "teapot", message: "short and \"stout\"")
    }
    routes(&router)
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    configuration.threads = threads
    configuration.logger.logLevel = .error
    configure(&configuration)
    let server = try HTTPServer.start(router: router, configuration: configuration)
    defer { server.shutdown() }
    try body(server)
}

@Suite("HTTP server over real sockets")
struct ServerTests {
    @Test("Path parameters and query reach the handler") func pathParametersAndQueryReachTheHandler() throws {
        try withTestServer { server in
            let client = try RawHTTPClient(port: server.port)
            let response = try client.request("GET", "/hello/w%C3%B6rld?q=a+b%21")
            #expect(response.status == 200)
            #expect(response.bodyText == "hello wörld q=a b!")
            #expect(response.header("Content-Type") == "text/plain; charset=utf-8")
        }
    }

    @Test("Unknown path is 404 with JSON error") func unknownPathIs404WithJSONError() throws {
        try withTestServer { server in
            let response = try RawHTTPClient(port: server.port).request("GET", "/nope")
            #expect(response.status == 404)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.bodyText == #"{"error":{"code":"not_found","message":"No route for /nope."}}"#)
        }
    }

    @Test("Wrong method is 405 with allow header") func wrongMethodIs405WithAllowHeader() throws {
        try withTestServer { server in
            let response = try RawHTTPClient(port: server.port).request("DELETE", "/hello/x")
            #expect(response.status == 405)
            #expect(response.header("Allow") == "GET, HEAD")
            #expect(response.bodyText.contains(#""code":"method_not_allowed""#))
        }
    }

    /// TRACE used to be refused by libevent with a 501 HTML page; it is routed like any other
    /// method without a route: 405 with `Allow` on a known path, 404 elsewhere, JSON either way.
    @Test("Trace is answered by the router not libevent") func traceIsAnsweredByTheRouterNotLibevent() throws {
        try withTestServer { server in
            let client = try RawHTTPClient(port: server.port)
            let known = try client.request("TRACE", "/hello/x")
            #expect(known.status == 405)
            #expect(known.header("Allow") == "GET, HEAD")
            #expect(known.header("Content-Type") == "application/json")
            #expect(known.bodyText.contains(#""code":"method_not_allowed""#))
            let unknown = try client.request("TRACE", "/nope")
            #expect(unknown.status == 404)
            #expect(unknown.header("Content-Type") == "application/json")
        }
    }

    /// libevent reads no body for HEAD or TRACE, so a body sent with one used to be parsed as the
    /// next request on the connection (here a smuggled GET /teapot was answered). The server
    /// now closes such a connection after its response.
    @Test("Body of a bodiless method is never parsed as a request", arguments: ["HEAD", "TRACE"])
    func bodyOfABodilessMethodIsNeverParsedAsARequest(method: String) throws {
        try withTestServer { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            let smuggled = "GET /teapot HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            client.send("\(method) /hello/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n\(smuggled)")
            let response = try client.readResponse(isHead: method == "HEAD")
            #expect(response.status == (method == "HEAD" ? 200 : 405))
            #expect(response.header("Connection") == "close")
            let next = try? client.readResponse()
            #expect(next == nil, "the body was answered as a request: \(next.map { "\($0.status)" } ?? "")")
            // A HEAD without a body keeps the connection.
            let plain = try RawHTTPClient(port: server.port)
            #expect(try plain.request("HEAD", "/hello/x").header("Connection") == nil)
            #expect(try plain.request("GET", "/hello/y").status == 200)
        }
    }

    @Test("Head is answered by the get route without a body") func headIsAnsweredByTheGetRouteWithoutABody() throws {
        try withTestServer { server in
            let client = try RawHTTPClient(port: server.port)
            let head = try client.request("HEAD", "/hello/x")
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "11")
            #expect(head.body.isEmpty)
            // The connection is still in sync: the next response parses.
            let get = try client.request("GET", "/hello/x")
            #expect(get.bodyText == "hello x q=-")
        }
    }

    @Test("Posted body is delivered whole") func postedBodyIsDeliveredWhole() throws {
        try withTestServer { server in
            let body = (0..<100_000).map { UInt8($0 % 251) }
            let response = try RawHTTPClient(port: server.port).request("POST", "/echo", body: body)
            #expect(response.status == 201)
            #expect(response.body == body)
        }
    }

    @Test("Body over the limit is 413") func bodyOverTheLimitIs413() throws {
        try withTestServer(configure: { $0.maxBodySize = 1000 }) { server in
            let response = try RawHTTPClient(port: server.port).request("POST", "/echo", body: Array(repeating: 65, count: 1001))
            #expect(response.status == 413)
        }
    }

    @Test("Malformed request line is rejected and server keeps serving") func malformedRequestLineIsRejectedAndServerKeepsServing() throws {
        try withTestServer { server in
            let bad = try RawHTTPClient(port: server.port)
            bad.send("THIS IS NOT HTTP\r\n\r\n")
            let response = try bad.readResponse()
            #expect(response.status == 400)
            #expect(response.header("Content-Type") == "application/json")
            let good = try RawHTTPClient(port: server.port).request("GET", "/hello/ok")
            #expect(good.status == 200)
        }
    }

    @Test("Handler errors become JSON and internals stay hidden") func handlerErrorsBecomeJSONAndInternalsStayHidden() throws {
        try withTestServer { server in
            let client = try RawHTTPClient(port: server.port)
            let failed = try client.request("GET", "/fail")
            #expect(failed.status == 500)
            #expect(failed.bodyText == #"{"error":{"code":"internal","message":"The server failed to answer this request."}}"#)
            let teapot = try client.request("GET", "/teapot")
            #expect(teapot.status == 418)
            #expect(teapot.bodyText == #"{"error":{"code":"teapot","message":"short and \"stout\""}}"#)
        }
    }

    @Test("Request id is echoed or generated") func requestIDIsEchoedOrGenerated() throws {
        try withTestServer { server in
            let client = try RawHTTPClient(port: server.port)
            let echoed = try client.request("GET", "/hello/x", headers: [("X-Request-Id", "abc-123")])
            #expect(echoed.header("X-Request-Id") == "abc-123")
            let first = try client.request("GET", "/hello/x")
            let second = try client.request("GET", "/hello/x", headers: [("X-Request-Id", "bad id with spaces")])
            let firstID = try #require(first.header("X-Request-Id"))
            let secondID = try #require(second.header("X-Request-Id"))
            #expect(firstID != secondID)
            #expect(!secondID.contains(" "))
        }
    }

    @Test("Keep alive connection carries many requests") func keepAliveConnectionCarriesManyRequests() throws {
        try withTestServer { server in
            let client = try RawHTTPClient(port: server.port)
            for index in 0..<200 {
                let response = try client.request("GET", "/hello/\(index)")
                #expect(response.bodyText == "hello \(index) q=-")
            }
        }
    }

    @Test("Sixty four concurrent clients are all served") func sixtyFourConcurrentClientsAreAllServed() throws {
        try withTestServer { server in
            let port = server.port
            let failures = Atomic<Int>(0)
            let threads = (0..<64).map { client in
                WorkerThread {
                    do {
                        let connection = try RawHTTPClient(port: port)
                        for request in 0..<20 {
                            let response = try connection.request("GET", "/hello/\(client)-\(request)")
                            if response.bodyText != "hello \(client)-\(request) q=-" { failures.add(1, ordering: .relaxed) }
                        }
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            for thread in threads { thread.join() }
            #expect(failures.load(ordering: .relaxed) == 0)
        }
    }

    @Test("Graceful shutdown finishes the request in flight") func gracefulShutdownFinishesTheRequestInFlight() throws {
        let entered = Atomic<Bool>(false)
        var router = Router()
        router.get("/slow") { _ in
            entered.store(true, ordering: .releasing)
            usleep(400_000)
            return .text("finished")
        }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = 1
        configuration.logger.logLevel = .error
        let server = try HTTPServer.start(router: router, configuration: configuration)
        let client = try RawHTTPClient(port: server.port)
        client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        while !entered.load(ordering: .acquiring) { usleep(1000) }
        server.shutdown()  // returns only after the worker drained
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.bodyText == "finished")
        #expect(client.waitForClose(), "the drained worker closes the connection")
        #expect(throws: RawHTTPClient.Failure.self) { try RawHTTPClient(port: server.port) }
    }

    @Test("Slow client is closed at the deadline while others are served") func slowClientIsClosedAtTheDeadlineWhileOthersAreServed() throws {
        try withTestServer(threads: 1, configure: { $0.requestTimeout = .milliseconds(800) }) { server in
            let slow = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            let started = monotonicNanoseconds()
            let request = Array("GET /hello/slow HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n".utf8)
            var closedEarly = false
            let fast = try RawHTTPClient(port: server.port)
            for byte in request.prefix(24) {
                if !slow.send([byte]) { closedEarly = true; break }
                #expect(try fast.request("GET", "/hello/fast").status == 200)
                usleep(100_000)
            }
            #expect(slow.waitForClose())
            let elapsed = Double(monotonicNanoseconds() - started) / 1e9
            #expect(elapsed < 4, "closed after \(elapsed) s")
            _ = closedEarly
            #expect(try fast.request("GET", "/hello/fast").status == 200)
        }
    }

    @Test("Idle keep alive connection is closed at the deadline") func idleKeepAliveConnectionIsClosedAtTheDeadline() throws {
        try withTestServer(threads: 1, configure: { $0.requestTimeout = .milliseconds(500) }) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            #expect(try client.request("GET", "/hello/x").status == 200)
            #expect(client.waitForClose())
        }
    }
}

@Suite("Process-wide settings")
struct ProcessSettingsTests {
    /// A client that vanished mid-response used to kill the whole server with SIGPIPE
    /// (exit 141 under wrk during a drain).
    @Test("Starting a server ignores SIGPIPE") func startingAServerIgnoresSIGPIPE() throws {
        try withTestServer { _ in
            var current = sigaction()
            sigaction(SIGPIPE, nil, &current)
            let handler = unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
            #expect(handler == unsafeBitCast(SIG_IGN, to: Int.self))
        }
    }
}

@Suite("Shutdown")
struct ShutdownTests {
    /// Before: the second call activated the stop event the stopped worker had already freed.
    @Test("Shutdown twice is safe") func shutdownTwiceIsSafe() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configuration.logger.logLevel = .error
        var router = Router()
        router.get("/x") { _ in .text("x") }
        for _ in 0..<20 {
            let server = try HTTPServer.start(router: router, configuration: configuration)
            #expect(try RawHTTPClient(port: server.port).request("GET", "/x").status == 200)
            server.shutdown()
            server.shutdown()
        }
    }
}
