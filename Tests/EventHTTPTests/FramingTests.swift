import EventHTTP
import HTTPTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// RFC 9112 §6.3: a message whose framing two parsers could read differently is refused with
/// 400 and the connection closed, so nothing after it can be read as a smuggled request.
@Suite("Request framing")
struct FramingTests {
    /// A request that would smuggle `GET /teapot` behind a proxy that frames it differently.
    static let smuggled = "GET /teapot HTTP/1.1\r\nHost: x\r\n\r\n"

    static let ambiguous: [(name: String, head: String, body: String)] = [
        ("conflicting Content-Length", "Content-Length: 5\r\nContent-Length: 21", "hello" + String(smuggled.prefix(16))),
        ("duplicate Content-Length", "Content-Length: 5\r\nContent-Length: 5", "hello"),
        ("Content-Length list", "Content-Length: 5, 5", "hello"),
        ("signed Content-Length", "Content-Length: +5", "hello"),
        ("negative Content-Length", "Content-Length: -5", "hello"),
        ("Transfer-Encoding with Content-Length", "Transfer-Encoding: chunked\r\nContent-Length: 5", "0\r\n\r\n"),
        ("space before the colon", "Transfer-Encoding : chunked\r\nContent-Length: 5", "hello"),
        ("Transfer-Encoding other than chunked", "Transfer-Encoding: gzip, chunked", "0\r\n\r\n"),
        ("Transfer-Encoding twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "0\r\n\r\n"),
        ("folded header line", "Content-Length: 5\r\nX-Folded: a\r\n b", "hello"),
    ]

    @Test("Ambiguous framing is refused with JSON and the connection closed", arguments: ambiguous.indices)
    func ambiguousFramingIsRefusedWithJSONAndTheConnectionClosed(case index: Int) throws {
        let (name, head, body) = FramingTests.ambiguous[index]
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            client.send("POST /echo HTTP/1.1\r\nHost: x\r\n\(head)\r\n\r\n\(body)\(FramingTests.smuggled)")
            let response = try? client.readResponse()
            #expect(response?.status == 400, "\(name): answered \(response.map { "\($0.status) \($0.bodyText)" } ?? "nothing")")
            #expect(response?.header("Content-Type") == "application/json", "\(name)")
            #expect(response?.bodyText.contains(#""code":"malformed_request""#) == true, "\(name): \(response?.bodyText ?? "")")
            #expect(response?.header("Connection") == "close", "\(name)")
            let next = try? client.readResponse()
            #expect(next == nil, "\(name): a second response (\(next?.status ?? 0)) followed")
        }
    }

    /// libevent accepts a bare LF as a line end; a proxy may not.
    @Test("Bare line feeds are refused") func bareLineFeedsAreRefused() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            client.send("POST /echo HTTP/1.1\nHost: x\nContent-Length: 5\n\nhello")
            let response = try? client.readResponse()
            #expect(response?.status == 400)
            #expect(response?.bodyText.contains(#""code":"malformed_request""#) == true)
            #expect(client.waitForClose())
        }
    }

    /// The second of two pipelined requests is checked like the first.
    @Test("A pipelined ambiguous request is refused after the good one") func aPipelinedAmbiguousRequestIsRefusedAfterTheGoodOne() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            client.send(
                "GET /hello/one HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 21\r\n\r\nhello" + FramingTests.smuggled)
            #expect(try client.readResponse().bodyText == "hello one q=-")
            let second = try? client.readResponse()
            #expect(second?.status == 400)
            #expect(second?.header("Content-Type") == "application/json")
            #expect((try? client.readResponse()) == nil)
        }
    }

    @Test("Well framed bodies still work") func wellFramedBodiesStillWork() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port)
            client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            let chunked = try client.readResponse()
            #expect(chunked.status == 201)
            #expect(chunked.bodyText == "hello world")
            let plain = try client.request("POST", "/echo", body: Array("abc".utf8))
            #expect(plain.bodyText == "abc")
            #expect(plain.header("Connection") == nil)
        }
    }

    /// A declared body over the limit is refused before it is read, with the JSON error body
    /// (libevent's own check answered with an HTML page).
    @Test("Declared body over the limit is 413 as JSON") func declaredBodyOverTheLimitIs413AsJSON() throws {
        try withTestServer(threads: 1, configure: { $0.maxBodySize = 1000 }) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.bodyText.contains(#""code":"body_too_large""#))
        }
    }
}

@Suite("Methods libevent does not know")
struct UnknownMethodTests {
    /// QUERY (and any method libevent has no name for) used to get libevent's 501 HTML page.
    @Test("Query gets 405 with allow as JSON") func queryGets405WithAllowAsJSON() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            let known = try client.request("QUERY", "/hello/x")
            #expect(known.status == 405)
            #expect(known.header("Allow") == "GET, HEAD")
            #expect(known.header("Content-Type") == "application/json")
            #expect(known.bodyText.contains(#""code":"method_not_allowed""#))
            #expect(known.bodyText.contains("QUERY"))
            let unknown = try client.request("QUERY", "/nope")
            #expect(unknown.status == 404)
            #expect(unknown.header("Content-Type") == "application/json")
        }
    }

    /// libevent reads no body for a method it does not know: the connection is closed after the
    /// answer so the body is never read as a request.
    @Test("A body of an unknown method is never parsed as a request") func aBodyOfAnUnknownMethodIsNeverParsedAsARequest() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            let smuggled = "GET /teapot HTTP/1.1\r\nHost: x\r\n\r\n"
            client.send("QUERY /hello/x HTTP/1.1\r\nHost: x\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n\(smuggled)")
            let response = try client.readResponse()
            #expect(response.status == 405)
            #expect(response.header("Connection") == "close")
            #expect((try? client.readResponse()) == nil)
        }
    }
}

/// What libevent refuses while reading a request gets the JSON error body too (its own HTML page
/// before).
@Suite("Refusals libevent makes")
struct LibeventRefusalTests {
    static let cases: [(name: String, request: String, status: Int, code: String)] = [
        ("malformed request line", "THIS IS NOT HTTP\r\n\r\n", 400, "malformed_request"),
        ("unsupported version", "GET /hello/x HTTP/2.0\r\nHost: x\r\n\r\n", 400, "malformed_request"),
        ("header line without a colon", "GET /hello/x HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400, "malformed_request"),
        ("headers over the limit", "GET /hello/x HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n", 431, "headers_too_large"),
        ("malformed chunk size", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400, "malformed_request"),
        ("chunked body over the limit", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n", 400, "malformed_request"),
    ]

    @Test("Refusals are JSON and close the connection", arguments: cases.indices)
    func refusalsAreJSONAndCloseTheConnection(case index: Int) throws {
        let (name, request, status, code) = LibeventRefusalTests.cases[index]
        try withTestServer(threads: 1, configure: { $0.maxBodySize = 1000 }) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            client.send(request)
            let response = try? client.readResponse()
            #expect(response?.status == status, "\(name): \(response.map { "\($0.status) \($0.bodyText)" } ?? "nothing")")
            #expect(response?.header("Content-Type") == "application/json", "\(name)")
            #expect(response?.bodyText.contains("\"code\":\"\(code)\"") == true, "\(name)")
            #expect(client.waitForClose(), "\(name)")
            #expect(try RawHTTPClient(port: server.port).request("GET", "/hello/after").status == 200)
        }
    }

    @Test("Connect is not implemented and closed") func connectIsNotImplementedAndClosed() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            client.send("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 501)
            #expect(response.header("Content-Type") == "application/json")
            #expect(client.waitForClose())
        }
    }

    /// A chunked request refused in the header callback is answered at once, before its body.
    @Test("A refused chunked request is answered before its body") func aRefusedChunkedRequestIsAnsweredBeforeItsBody() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 3)
            client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Bad: a\u{1}b\r\n\r\n")
            let response = try? client.readResponse()
            #expect(response?.status == 400)
            #expect(response?.bodyText.contains("control character") == true)
        }
    }
}

/// A pipelined request gets the same hooks as the first on its connection: its refusal is JSON and
/// its body is reserved (or refused) before it is read.
@Suite("Pipelined requests")
struct PipelinedRequestTests {
    @Test("A malformed pipelined request gets the JSON refusal") func aMalformedPipelinedRequestGetsTheJSONRefusal() throws {
        try withTestServer(threads: 1) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            client.send("GET /hello/one HTTP/1.1\r\nHost: x\r\n\r\nGET /hello/two HTTP/1.1\r\nNoColon\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello one q=-")
            let second = try? client.readResponse()
            #expect(second?.status == 400)
            #expect(second?.header("Content-Type") == "application/json")
        }
    }

    @Test("A pipelined body is reserved when its headers arrive") func aPipelinedBodyIsReservedWhenItsHeadersArrive() throws {
        try withTestServer(
            threads: 1,
            configure: {
                $0.maxBodySize = 100_000
                $0.maxBufferedBodyBytes = 100_000
            }
        ) { server in
            let client = try RawHTTPClient(port: server.port, receiveTimeoutSeconds: 5)
            // The second head arrives with the first body; its own body follows later.
            let first = String(repeating: "a", count: 100_000)
            client.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n\(first)"
                    + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            #expect(try client.readResponse().body.count == 100_000)
            // The first answer released its bytes; the pipelined head reserved them again (without
            // the hook it would have been read unreserved, leaving the count at 0).
            var reserved = 0
            for _ in 0..<200 {
                reserved = server.bufferedBodyBytes
                if reserved == 100_000 { break }
                usleep(10_000)
            }
            #expect(reserved == 100_000)
            client.send(String(repeating: "b", count: 100_000))
            #expect(try client.readResponse().body.first == UInt8(ascii: "b"))
            // And a third request now finds the cap free.
            #expect(try client.request("POST", "/echo", body: [UInt8](repeating: 3, count: 100_000)).status == 201)
        }
    }
}
