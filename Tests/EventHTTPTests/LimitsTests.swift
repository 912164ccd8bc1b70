import EventHTTP
import HTTPTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Memory stays bounded however many clients send bodies slowly, and connections are capped.
@Suite("Server-wide limits")
struct LimitsTests {
    /// Before: every connection could hold a body up to --max-body-bytes, so 500 stalled 1 MiB
    /// bodies took RSS from 35 to 551 MiB. Now a body that would pass the buffered-bytes cap is
    /// refused before it is read.
    @Test("Bodies past the buffered bytes cap get 503 before they are read") func bodiesPastTheBufferedBytesCapGet503BeforeTheyAreRead() throws {
        try withTestServer(
            threads: 1,
            configure: {
                $0.maxBodySize = 100_000
                $0.maxBufferedBodyBytes = 150_000
            }
        ) { server in
            let stalled = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            #expect(stalled.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n0123456789"))
            // One round trip on the same (only) loop: the stalled head has been read by then.
            #expect(try RawHTTPClient(port: server.port).request("GET", "/hello/sync").status == 200)

            let refused = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            #expect(refused.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n"))
            let answer = try? refused.readResponse()
            #expect(answer?.status == 503, "answered \(answer.map { "\($0.status)" } ?? "nothing")")
            #expect(answer?.header("Retry-After") == "1")
            #expect(answer?.header("Content-Type") == "application/json")
            #expect(answer?.bodyText.contains(#""code":"overloaded""#) == true)
            #expect(answer?.header("Connection") == "close")

            let chunked = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            #expect(chunked.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"))
            #expect((try? chunked.readResponse())?.status == 503, "a chunked body counts as the largest body")

            // What still fits is served.
            let small = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            let fits = try small.request("POST", "/echo", body: [UInt8](repeating: 1, count: 40_000))
            #expect(fits.status == 201)

            // The stalled body completes; its bytes are then free for others.
            #expect(stalled.send([UInt8](repeating: UInt8(ascii: "x"), count: 100_000 - 10)))
            #expect(try stalled.readResponse().body.count == 100_000)
            let later = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            #expect(try later.request("POST", "/echo", body: [UInt8](repeating: 2, count: 100_000)).status == 201)
        }
    }

    /// Before: there was no cap; every accepted connection was kept until its deadline.
    @Test("Connections past the cap get 503 and are closed at once") func connectionsPastTheCapGet503AndAreClosedAtOnce() throws {
        try withTestServer(threads: 1, configure: { $0.maxConnections = 3 }) { server in
            var held = try (0..<3).map { _ in try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5) }
            for (index, client) in held.enumerated() {
                #expect(try client.request("GET", "/hello/\(index)").status == 200)
            }
            let extra = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            let answer = try? extra.readResponse()
            #expect(answer?.status == 503, "answered \(answer.map { "\($0.status)" } ?? "nothing")")
            #expect(answer?.header("Retry-After") == "1")
            #expect(answer?.bodyText.contains(#""code":"overloaded""#) == true)
            #expect(extra.waitForClose())
            // The held connections still work.
            #expect(try held[0].request("GET", "/hello/still").status == 200)
            // Closing one makes room.
            held.removeLast()
            var admitted = false
            for _ in 0..<100 where !admitted {
                usleep(20_000)
                let next = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
                admitted = (try? next.request("GET", "/hello/next"))?.status == 200
            }
            #expect(admitted)
        }
    }

    @Test("Connections that close before sending anything give their places back") func connectionsClosedBeforeARequestGiveTheirPlacesBack() throws {
        // evhttp frees such a connection without telling us: the sweep finds it among those no
        // request has hooked yet, and forgets it.
        try withTestServer(
            threads: 1,
            configure: {
                $0.maxConnections = 2
                $0.requestTimeout = .seconds(1)
            }
        ) { server in
            for _ in 0..<6 {
                // Connected, then gone without a byte (closed as it goes out of scope).
                _ = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            }
            var served = 0
            for attempt in 0..<100 where served < 2 {
                if attempt > 0 { usleep(50_000) }
                let first = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
                let second = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
                served = [first, second].filter { (try? $0.request("GET", "/hello/again"))?.status == 200 }.count
            }
            #expect(served == 2, "both places were given back")
        }
    }
}
