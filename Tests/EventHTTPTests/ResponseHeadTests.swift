import EventHTTP
import HTTPTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The answer's head as it goes on the wire: the lines evhttp only passes on travel in one block
/// after the reason phrase, the ones it reads in its header list; the bytes must be what evhttp
/// wrote when every line was in its list.
@Suite("Response head on the wire")
struct ResponseHeadTests {
    /// Sends `request` on a new connection and returns everything the server sent until it
    /// closed or went quiet, with the Date value replaced by `<date>`.
    func exchange(_ request: String, port: Int) throws -> String {
        let client = try RawHTTPClient(port: port, receiveTimeoutSeconds: 1)
        client.send(request)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += chunk[..<count]
            if isComplete(received) { break }
        }
        let text = String(decoding: received, as: UTF8.self)
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        return lines.map { $0.hasPrefix("Date: ") ? "Date: <date>" : String($0) }.joined(separator: "\r\n")
    }

    /// Whether `bytes` hold a whole head and as many body bytes as its Content-Length says.
    func isComplete(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.split(separator: "\r\n\r\n", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let length = parts[0].split(separator: "\r\n").first { $0.hasPrefix("Content-Length: ") }.flatMap { Int($0.dropFirst(16)) } ?? 0
        return parts[1].utf8.count >= length
    }

    func withHeaderServer(_ body: (Int) throws -> Void) throws {
        try withTestServer(
            threads: 1,
            routes: { router in
                router.get("/headers") { _ in
                    HTTPResponse(
                        status: 200, contentType: "application/json", body: Array("{}".utf8),
                        headers: [("ETag", "\"v1\""), ("Cache-Control", "no-cache")])
                }
                router.get("/injected") { _ in
                    HTTPResponse(
                        status: 200, contentType: "text/plain", body: Array("x".utf8),
                        headers: [("X-Bad", "a\r\nSet-Cookie: stolen=1"), ("X-Folded", "a\r\n b"), ("Bad\r\nName", "v"), ("X-Nul", "before\u{0}after")])
                }
                router.post("/created") { _ in .empty(status: 201) }
                router.get("/closing") { _ in
                    HTTPResponse(status: 200, contentType: "text/plain", body: Array("bye".utf8), headers: [("Connection", "close")])
                }
                router.get("/dated") { _ in
                    HTTPResponse(status: 200, contentType: "text/plain", body: Array("d".utf8), headers: [("Date", "Thu, 01 Jan 1970 00:00:00 GMT")])
                }
            }
        ) { server in try body(server.port) }
    }

    @Test("Handler headers with the type, Vary, the request id, Content-Length and Date, in that order")
    func handlerHeadersVaryTheRequestIDContentLengthAndDateInThatOrder() throws {
        try withHeaderServer { port in
            let text = try exchange("GET /headers HTTP/1.1\r\nHost: x\r\nX-Request-Id: r-1\r\n\r\n", port: port)
            #expect(
                text
                    == "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nCache-Control: no-cache\r\nContent-Type: application/json\r\nVary: Accept-Encoding\r\n"
                    + "X-Request-Id: r-1\r\nContent-Length: 2\r\nDate: <date>\r\n\r\n{}")
        }
    }

    @Test("HTTP/1.0 gets no Date, as from evhttp") func http10GetsNoDateAsFromEvhttp() throws {
        try withHeaderServer { port in
            let text = try exchange("GET /headers HTTP/1.0\r\nX-Request-Id: r-2\r\n\r\n", port: port)
            #expect(
                text
                    == "HTTP/1.0 200 OK\r\nETag: \"v1\"\r\nCache-Control: no-cache\r\nContent-Type: application/json\r\nVary: Accept-Encoding\r\n"
                    + "X-Request-Id: r-2\r\nContent-Length: 2\r\n\r\n{}")
        }
    }

    @Test("Lines evhttp_add_header would drop are dropped; C strings end at NUL") func linesEvhttpAddHeaderWouldDropAreDropped() throws {
        try withHeaderServer { port in
            let text = try exchange("GET /injected HTTP/1.1\r\nHost: x\r\nX-Request-Id: r-3\r\n\r\n", port: port)
            #expect(!text.contains("Set-Cookie"))
            #expect(!text.contains("X-Bad"))
            #expect(!text.contains("Name"))
            // A folded line is libevent's call (Debian's 2.1.12 refuses it, upstream takes it).
            #expect(text.contains("\r\nX-Folded: a\r\n b\r\n") == libeventAcceptsHeader(name: "X-Folded", value: "a\r\n b"))
            #expect(!libeventAcceptsHeader(name: "X-Bad", value: "a\r\nSet-Cookie: stolen=1"))
            #expect(text.contains("\r\nX-Nul: before\r\n"))
            #expect(!text.contains("after"))
        }
    }

    @Test("An answer with a body and no type gets evhttp's default type, after Date") func anAnswerWithABodyAndNoTypeGetsEvhttpsDefaultTypeAfterDate() throws {
        try withHeaderServer { port in
            let text = try exchange("POST /created HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nX-Request-Id: r-4\r\n\r\n", port: port)
            #expect(
                text == "HTTP/1.1 201 Created\r\nX-Request-Id: r-4\r\nContent-Length: 0\r\nDate: <date>\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n")
            // The next answer, with a type, does not get the default as well.
            let typed = try exchange("GET /headers HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(!typed.contains("text/html"))
        }
    }

    @Test("A handler's Connection: close reaches evhttp, which closes the connection") func aHandlersConnectionCloseReachesEvhttp() throws {
        try withHeaderServer { port in
            let client = try RawHTTPClient(port: port)
            let response = try client.request("GET", "/closing")
            #expect(response.header("Connection") == "close")
            #expect(client.waitForClose())
        }
    }

    @Test("A handler's Date is the only Date") func aHandlersDateIsTheOnlyDate() throws {
        try withHeaderServer { port in
            let client = try RawHTTPClient(port: port)
            let response = try client.request("GET", "/dated")
            #expect(response.headers.filter { $0.0 == "Date" }.map(\.1) == ["Thu, 01 Jan 1970 00:00:00 GMT"])
        }
    }
}
