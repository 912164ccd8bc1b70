import EventHTTP
import HTTPTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `HTTPResponse.stream`: a body written in parts from another thread, with the producer told
/// when its parts reached the socket and when the client left.
@Suite("Streamed responses")
struct StreamedResponseTests {
    /// The streams the route handed out, and what they were told.
    final class Streams: Sendable {
        let opened = Mutex<[ResponseStream]>([])
        let drained = Mutex(0)
        let closed = Mutex(0)

        func wait(_ what: () -> Bool) -> Bool {
            for _ in 0..<5000 {
                if what() { return true }
                usleep(1000)
            }
            return false
        }
    }

    /// Asks `server` for /stream and waits until its route has handed the stream out.
    func requestStream(_ server: HTTPServer, _ streams: Streams) throws -> (RawHTTPClient, ResponseStream) {
        let client = try RawHTTPClient(port: server.port)
        #expect(client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(streams.wait { streams.opened.withLock { $0.count } == 1 })
        return (client, try #require(streams.opened.withLock { $0.first }))
    }

    func withStreamServer(
        configure: (inout HTTPServerConfiguration) -> Void = { _ in }, _ body: (HTTPServer, Streams) throws -> Void
    ) throws {
        let streams = Streams()
        try withTestServer(
            threads: 1,
            configure: configure,
            routes: { router in
                router.get("/stream") { _ in
                    .stream(from: "test-streams", headers: [("Content-Type", "text/plain")]) { stream in
                        stream.onEvent { event in
                            switch event {
                            case .drained: streams.drained.withLock { $0 += 1 }
                            case .closed: streams.closed.withLock { $0 += 1 }
                            }
                        }
                        streams.opened.withLock { $0.append(stream) }
                        return true
                    }
                }
            }
        ) { server in try body(server, streams) }
    }

    @Test("Parts sent from another thread arrive as chunks; finish ends the body and keeps the connection")
    func partsAndFinish() throws {
        try withStreamServer { server, streams in
            let (client, stream) = try requestStream(server, streams)
            stream.send(Array("one ".utf8))
            stream.send(Array("two".utf8))
            stream.finish(Array(" three".utf8))
            // The raw answer, up to the last chunk.
            var raw: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !String(decoding: raw, as: UTF8.self).hasSuffix("\r\n0\r\n\r\n") {
                let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                raw.append(contentsOf: chunk[..<count])
            }
            let text = String(decoding: raw, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect(text.contains("Transfer-Encoding: chunked\r\n"))
            #expect(text.hasSuffix("\r\n\r\n4\r\none \r\n3\r\ntwo\r\n6\r\n three\r\n0\r\n\r\n"), "three chunks and the end: \(text)")
            #expect(!stream.send(Array("late".utf8)), "a finished stream takes nothing more")
            #expect(try client.request("GET", "/hello/a").status == 200, "the connection carries the next request")
        }
    }

    @Test("A part the client does not read keeps the stream unwritable; once read, the producer hears drained")
    func writableOnlyWhenTheClientTookEverything() throws {
        try withStreamServer { server, streams in
            let (client, stream) = try requestStream(server, streams)
            #expect(streams.wait { stream.isWritable }, "nothing sent yet")
            // More than the kernel's buffers on both sides hold while the client reads nothing.
            stream.send([UInt8](repeating: UInt8(ascii: "x"), count: 16 << 20))
            usleep(300_000)
            #expect(!stream.isWritable, "16 MiB cannot all be in the kernel's buffers")
            let drainedBefore = streams.drained.withLock { $0 }
            // Read everything: then the producer hears of it.
            var received = 0
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            while received < 16 << 20 {
                let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                received += count
            }
            #expect(received >= 16 << 20)
            #expect(streams.wait { stream.isWritable })
            #expect(streams.wait { streams.drained.withLock { $0 } > drainedBefore })
        }
    }

    @Test("A stream whose client takes none of what waits for the request timeout is cut off; one that keeps taking some is not")
    func clientsThatStopReadingAreCutOff() throws {
        try withStreamServer(configure: { $0.requestTimeout = .seconds(1) }) { server, streams in
            // A slow reader: 64 KiB every 300 ms of a part far larger than the kernel's buffers.
            let (slow, slowStream) = try requestStream(server, streams)
            slowStream.send([UInt8](repeating: UInt8(ascii: "x"), count: 64 << 20))
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            for _ in 0..<10 {
                usleep(300_000)
                _ = chunk.withUnsafeMutableBytes { recv(slow.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            }
            #expect(streams.closed.withLock { $0 } == 0, "three request timeouts of slow reading, and still open")
            // One that reads nothing more: cut off once the timeout passes without progress.
            let stalledSince = ContinuousClock.now
            #expect(streams.wait { streams.closed.withLock { $0 } == 1 }, "the stalled client was disconnected")
            let waited = ContinuousClock.now - stalledSince
            #expect(waited >= .milliseconds(700), "not before the request timeout: \(waited)")
        }
    }

    /// Reads from `fd` until `raw` ends with `suffix` (or the connection ends).
    func read(_ fd: Int32, until suffix: String, into raw: inout [UInt8]) {
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        let tail = Array(suffix.utf8)
        while !(raw.count >= tail.count && Array(raw[(raw.count - tail.count)...]) == tail) {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            raw.append(contentsOf: chunk[..<count])
        }
    }

    @Test("Parts the socket takes only in part arrive whole and in order, framed, and drained is heard once all are out")
    func partsLargerThanTheSocketTakes() throws {
        try withStreamServer { server, streams in
            let (client, stream) = try requestStream(server, streams)
            // The first part goes through evhttp; the ones after it, with nothing pending,
            // straight to the socket, which takes only some of 16 MiB while the client reads
            // nothing: the rest must follow it, then the next part.
            stream.send(Array("first".utf8))
            #expect(streams.wait { streams.drained.withLock { $0 } >= 1 })
            var raw: [UInt8] = []
            read(client.fd, until: "5\r\nfirst\r\n", into: &raw)
            let big = [UInt8](repeating: UInt8(ascii: "x"), count: 16 << 20)
            stream.send(big)
            usleep(200_000)
            #expect(!stream.isWritable, "16 MiB cannot all be in the kernel's buffers")
            stream.send(Array("after".utf8))
            stream.finish(Array("end".utf8))
            raw.removeAll()
            read(client.fd, until: "\r\n0\r\n\r\n", into: &raw)
            let expected = Array("1000000\r\n".utf8) + big + Array("\r\n5\r\nafter\r\n3\r\nend\r\n0\r\n\r\n".utf8)
            // Compared as a Bool: a failure names the first byte that differs, not 16 MiB of them.
            let differsAt =
                zip(raw, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? (raw.count == expected.count ? nil : min(raw.count, expected.count))
            #expect(differsAt == nil, "the big part, then the next, framed as chunks: \(raw.count) B received, \(expected.count) expected")
        }
    }

    @Test("An HTTP/1.0 client gets the parts unframed until the connection closes")
    func partsToAnHTTP10Client() throws {
        try withStreamServer { server, streams in
            let client = try RawHTTPClient(port: server.port)
            #expect(client.send("GET /stream HTTP/1.0\r\n\r\n"))
            #expect(streams.wait { streams.opened.withLock { $0.count } == 1 })
            let stream = try #require(streams.opened.withLock { $0.first })
            stream.send(Array("one ".utf8))
            #expect(streams.wait { streams.drained.withLock { $0 } >= 1 })
            stream.send(Array("two".utf8))
            #expect(streams.wait { streams.drained.withLock { $0 } >= 2 })
            stream.finish(Array(" three".utf8))
            var raw: [UInt8] = []
            read(client.fd, until: "one two three", into: &raw)
            let text = String(decoding: raw, as: UTF8.self)
            #expect(!text.contains("chunked"))
            #expect(text.hasSuffix("\r\n\r\none two three"), "raw parts: \(text)")
        }
    }

    @Test("A client that leaves closes the stream: the producer hears closed and sends are dropped")
    func clientLeaving() throws {
        try withStreamServer { server, streams in
            let (client, stream) = try requestStream(server, streams)
            stream.send(Array("hello".utf8))
            shutdown(client.fd, Int32(SHUT_RDWR))
            // The server learns of it when it next reads or writes.
            #expect(
                streams.wait {
                    stream.send(Array("ping".utf8))
                    return streams.closed.withLock { $0 } == 1
                })
            #expect(stream.isClosed)
            #expect(!stream.send(Array("more".utf8)))
        }
    }
}
