import DeltaFeedClient
import Foundation
import Testing

@Suite("The socket transport without a server")
struct SocketTransportTests {
    private func parse(_ text: String, method: String = "GET") throws -> FeedHTTPResponse {
        try HTTPResponseParser.parse(Array(text.utf8), method: method)
    }

    @Test("The socket transport's parser reads Content-Length, chunked and read-to-close bodies, and skips 100 Continue")
    func responseParsing() throws {
        let sized = try parse("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nETag: \"x\"\r\n\r\n{}")
        #expect(sized.status == 200)
        #expect(sized.body == Array("{}".utf8))
        #expect(sized.header("etag") == "\"x\"")
        #expect(sized.header("Content-Type") == "application/json")

        let chunked = try parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n")
        #expect(chunked.body == Array(#"{"a":1}"#.utf8))

        let continued = try parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", method: "POST")
        #expect(continued.status == 201)

        let untilClose = try parse("HTTP/1.0 200 OK\r\n\r\nall of it")
        #expect(untilClose.body == Array("all of it".utf8))

        let notModified = try parse("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n")
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)

        #expect(throws: HTTPResponseParser.ParseError.self) { try parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort") }
        #expect(throws: HTTPResponseParser.ParseError.self) { try parse("SSH-2.0-OpenSSH\r\n\r\n") }
        #expect(throws: HTTPResponseParser.ParseError.self) { try parse("") }
    }

    @Test("The socket transport refuses https and reports a refused connection as a transport error")
    func socketTransportErrors() throws {
        let transport = SocketTransport(timeout: 5)
        #expect(throws: FeedHTTPTransportError.self) {
            try transport.send(FeedHTTPRequest(method: "GET", url: URL(string: "https://127.0.0.1/")!))
        }
        // Port 1 on loopback: nothing listens there.
        #expect(throws: FeedHTTPTransportError.self) {
            try transport.send(FeedHTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:1/")!))
        }
    }
}
