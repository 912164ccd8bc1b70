import DeltaFeedClient
import Testing

@Suite("Reading Server-Sent Events")
struct ServerSentEventParserTests {
    /// What the live route sends: a comment, retry, a reset, a heartbeat, a delta.
    static let liveStream =
        ": resetting\nretry: 2000\n\nevent: reset\nid: s1\ndata: {\"a\":1}\n\n:\n\nevent: delta\nid: s2\ndata: {\"b\":\ndata: 2}\n\n"

    static let liveEvents = [
        ServerSentEvent(type: "reset", data: #"{"a":1}"#, lastEventID: "s1"),
        ServerSentEvent(type: "delta", data: "{\"b\":\n2}", lastEventID: "s2"),
    ]

    /// Parses `bytes` fed in pieces cut at `cuts`.
    func parse(_ bytes: [UInt8], cutAt cuts: [Int]) throws -> (events: [ServerSentEvent], parser: ServerSentEventParser) {
        var parser = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        var start = 0
        for cut in cuts + [bytes.count] {
            events += try parser.parse(Array(bytes[start..<cut]))
            start = cut
        }
        return (events, parser)
    }

    @Test("The same events come out wherever the stream is cut, into two or three pieces or byte by byte")
    func cutAnywhere() throws {
        for stream in [Self.liveStream, Self.liveStream.replacingLineFeeds(with: "\r\n"), Self.liveStream.replacingLineFeeds(with: "\r")] {
            let bytes = Array(stream.utf8)
            #expect(try parse(bytes, cutAt: []).events == Self.liveEvents)
            for cut in 0...bytes.count {
                #expect(try parse(bytes, cutAt: [cut]).events == Self.liveEvents, "cut at \(cut)")
                for second in stride(from: cut, through: bytes.count, by: 7) {
                    #expect(try parse(bytes, cutAt: [cut, second]).events == Self.liveEvents, "cut at \(cut) and \(second)")
                }
            }
            let (events, parser) = try parse(bytes, cutAt: Array(0...bytes.count))
            #expect(events == Self.liveEvents)
            #expect(parser.retry == 2000)
            #expect(parser.lastEventID == "s2")
        }
    }

    @Test("Data lines are joined with line feeds; one space after the colon is dropped, no more; a bare field name has an empty value")
    func dataLines() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse("data:first\ndata:  second\ndata\ndata: \ndata: last\n\n") == [ServerSentEvent(data: "first\n second\n\n\nlast")])
        #expect(try parser.parse("data\n\n") == [ServerSentEvent(data: "")])
        #expect(try parser.parse("data: a:b: c\n\n") == [ServerSentEvent(data: "a:b: c")])
    }

    @Test("Comments are ignored and neither end nor start an event; unknown fields are ignored")
    func comments() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse(":\n\n: resetting\n\n:data: no\n\n").isEmpty)
        #expect(try parser.parse("event: delta\n: between\ndata: x\nfoo: bar\nDATA: y\n: again\n\n") == [ServerSentEvent(type: "delta", data: "x")])
    }

    @Test("An event without data is not dispatched, but its type does not leak into the next; the type defaults to message")
    func eventsWithoutData() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse("event: shutdown\n\n").isEmpty)
        #expect(try parser.parse("data: plain\n\n") == [ServerSentEvent(type: "message", data: "plain")])
        #expect(try parser.parse("event: shutdown\ndata: {\"reason\":\"x\"}\n\n") == [ServerSentEvent(type: "shutdown", data: #"{"reason":"x"}"#)])
    }

    @Test("CR LF, LF and lone CR all end lines; a CR LF split between chunks is one line break, CR CR two")
    func lineEndings() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse("data: a\r").isEmpty)
        // This LF belongs to the CR before it: no blank line yet.
        #expect(try parser.parse("\n").isEmpty)
        #expect(try parser.parse("\r\n") == [ServerSentEvent(data: "a")])
        #expect(try parser.parse("data: b\r") == [])
        #expect(try parser.parse("\r") == [ServerSentEvent(data: "b")])
        #expect(try parser.parse("data: c\rdata: d\n\r\n") == [ServerSentEvent(data: "c\nd")])
        // An empty chunk between a CR and its LF changes nothing.
        #expect(try parser.parse("data: e\r").isEmpty)
        #expect(try parser.parse([UInt8]()).isEmpty)
        #expect(try parser.parse("\ndata: f\n\n") == [ServerSentEvent(data: "e\nf")])
    }

    @Test("retry: takes ASCII digits only; anything else leaves the last valid value")
    func retry() throws {
        var parser = ServerSentEventParser()
        #expect(parser.retry == nil)
        _ = try parser.parse("retry: 1500\n\n")
        #expect(parser.retry == 1500)
        for invalid in ["retry: -1", "retry: 1.5", "retry: 2s", "retry:", "retry: 99999999999999999999999", "retry:  700"] {
            _ = try parser.parse(invalid + "\n\n")
            #expect(parser.retry == 1500, "\(invalid)")
        }
        _ = try parser.parse("retry:0\n")
        #expect(parser.retry == 0, "applies at once, before the blank line")
    }

    @Test("An id holds for the events after it until replaced or emptied; an id with a NUL is ignored")
    func ids() throws {
        var parser = ServerSentEventParser()
        #expect(
            try parser.parse("id: 1\ndata: a\n\ndata: b\n\n") == [ServerSentEvent(data: "a", lastEventID: "1"), ServerSentEvent(data: "b", lastEventID: "1")])
        #expect(try parser.parse("id: 2\u{0}\ndata: c\n\n") == [ServerSentEvent(data: "c", lastEventID: "1")])
        #expect(try parser.parse("id\ndata: d\n\n") == [ServerSentEvent(data: "d", lastEventID: "")])
        // An id in an event without data still becomes the stream's last event ID.
        _ = try parser.parse("id: 3\n\n")
        #expect(parser.lastEventID == "3")
    }

    @Test("A byte order mark at the start is skipped, even cut in two; an event the stream ends inside is never dispatched")
    func byteOrderMarkAndUnfinishedEvents() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse([0xEF, 0xBB]).isEmpty)
        #expect(try parser.parse([0xBF] + Array("data: x\n\ndata: unfinished\n".utf8)) == [ServerSentEvent(data: "x")])
        var second = ServerSentEventParser()
        // Only at the start: later, the bytes are part of the field name (an unknown field).
        #expect(try second.parse("data: y\n\n\u{FEFF}data: z\n\n") == [ServerSentEvent(data: "y")])
    }

    @Test("A line or an event's data longer than the limit throws instead of filling the memory")
    func sizeLimit() throws {
        var endless = ServerSentEventParser(maximumEventSize: 64)
        _ = try endless.parse("data: " + String(repeating: "x", count: 40))
        #expect(throws: ServerSentEventParser.Overflow.self) { try endless.parse(String(repeating: "x", count: 40)) }
        var tall = ServerSentEventParser(maximumEventSize: 64)
        #expect(throws: ServerSentEventParser.Overflow.self) { try tall.parse(String(repeating: "data: 0123456789\n", count: 8)) }
        var fits = ServerSentEventParser(maximumEventSize: 64)
        #expect(try fits.parse("data: " + String(repeating: "x", count: 50) + "\n\n").count == 1)
    }
}

@Suite("Reading a chunked body as it arrives")
struct ChunkedBodyDecoderTests {
    static let body = "5\r\nhello\r\n1;name=value\r\n \r\nC\r\nworld, again\r\n0\r\nTrailer: x\r\n\r\nnext response"

    @Test("The decoded bytes are the same wherever the body is cut, and the end is found")
    func cutAnywhere() throws {
        let bytes = Array(Self.body.utf8)
        for cut in 0...bytes.count {
            var decoder = ChunkedBodyDecoder()
            let first = try decoder.decode(bytes[0..<cut])
            let second = try decoder.decode(bytes[cut...])
            #expect(String(decoding: first + second, as: UTF8.self) == "hello world, again", "cut at \(cut)")
            #expect(decoder.isFinished)
        }
        var bytewise = ChunkedBodyDecoder()
        var decoded: [UInt8] = []
        for index in bytes.indices {
            #expect(!bytewise.isFinished)
            decoded += try bytewise.decode(bytes[index...index])
            if bytewise.isFinished { break }
        }
        #expect(String(decoding: decoded, as: UTF8.self) == "hello world, again")
    }

    @Test("A body that stops early is not finished; a bad size or a chunk not followed by CR LF throws")
    func incompleteAndInvalid() throws {
        var open = ChunkedBodyDecoder()
        #expect(try open.decode(Array("4\r\nopen\r\n".utf8)[...]) == Array("open".utf8))
        #expect(!open.isFinished)
        for invalid in ["zz\r\n", "\r\n", "3\r\nabcX", "-1\r\n", "1234567890abcdef0\r\n"] {
            var decoder = ChunkedBodyDecoder()
            #expect(throws: HTTPResponseParser.ParseError.self, "\(invalid)") { try decoder.decode(Array(invalid.utf8)[...]) }
        }
    }
}

@Suite("Waiting between live connections")
struct LiveBackoffTests {
    @Test("After a stream ends the wait is the server's retry; failures double it up to the maximum; jitter adds up to a fifth")
    func delays() {
        #expect(LiveBackoff.delay(retry: 2, failures: 0, maximum: 30, jitter: 0) == 2)
        #expect(LiveBackoff.delay(retry: 2, failures: 0, maximum: 30, jitter: 1) == 2.4)
        #expect(LiveBackoff.delay(retry: 2, failures: 1, maximum: 30, jitter: 0) == 2)
        #expect(LiveBackoff.delay(retry: 2, failures: 2, maximum: 30, jitter: 0) == 4)
        #expect(LiveBackoff.delay(retry: 2, failures: 4, maximum: 30, jitter: 0) == 16)
        #expect(LiveBackoff.delay(retry: 2, failures: 5, maximum: 30, jitter: 0) == 30)
        #expect(LiveBackoff.delay(retry: 2, failures: 500, maximum: 30, jitter: 0) == 30)
        // A server asking for more than the maximum is obeyed.
        #expect(LiveBackoff.delay(retry: 60, failures: 3, maximum: 30, jitter: 0) == 60)
        // retry: 0 reconnects at once after a stream, but failed attempts still wait.
        #expect(LiveBackoff.delay(retry: 0, failures: 0, maximum: 30, jitter: 0) == 0)
        #expect(LiveBackoff.delay(retry: 0, failures: 1, maximum: 30, jitter: 0) == 0.05)
        #expect(LiveBackoff.delay(retry: 0, failures: 3, maximum: 30, jitter: 0) == 0.2)
    }
}

extension String {
    fileprivate func replacingLineFeeds(with ending: String) -> String {
        split(separator: "\n", omittingEmptySubsequences: false).joined(separator: ending)
    }
}
