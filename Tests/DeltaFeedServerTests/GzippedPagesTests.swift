import DeltaFeedClient
import DeltaFeedServer
import EventHTTP
import Foundation
import Gzip
import Testing

@Suite("Gzipped pages")
struct GzippedPagesTests {
    private func page(_ n: Int) -> [UInt8] {
        Array((0..<400).map { #"{"id":"video:\#($0 * n)","version":"\#(n)"}"# }.joined(separator: ",").utf8)
    }

    @Test("A page served again is compressed once, and its bytes read back as the page")
    func compressedOnce() throws {
        let pages = GzippedPages(budget: 1 << 20)
        var compressions = 0
        let first = try #require(
            pages.bytes(for: "s1", level: 6) {
                compressions += 1; return page(1)
            })
        let again = try #require(
            pages.bytes(for: "s1", level: 6) {
                compressions += 1; return page(1)
            })
        #expect(compressions == 1)
        #expect(first == again)
        #expect(try Gzip.decompress(first, limit: 1 << 20) == page(1))
    }

    @Test("Past its budget the cache lets the oldest pages go and stays within it")
    func staysWithinBudget() throws {
        let one = try #require(Gzip.compress(page(1), level: 6)).count
        let pages = GzippedPages(budget: one * 5 / 2)
        for n in 1...6 { _ = pages.bytes(for: "s\(n)", level: 6) { page(n) } }
        #expect(pages.total <= one * 5 / 2 + one / 4)
        var recompressed: [Int] = []
        for n in [1, 6] {
            _ = pages.bytes(for: "s\(n)", level: 6) {
                recompressed.append(n); return page(n)
            }
        }
        #expect(recompressed == [1], "the oldest was let go, the newest kept")
    }

    @Test("A large page is gzipped off the loop the first time, kept, and reads back as the identity page")
    func largePagesThroughTheServer() throws {
        let server = try TestServer()
        defer { server.stop() }
        let path = "/v1/users/3/feed?limit=60&width=390"
        let identity = try server.request("GET", path, token: nil, headers: ["Accept-Encoding": "identity"])
        #expect(identity.status == 200 && identity.header("Content-Encoding") == nil)
        #expect(identity.body.count >= 16 << 10, "large enough for the compute pool: \(identity.body.count) B")
        for attempt in 1...2 {
            let gzipped = try server.request("GET", path, token: nil)
            #expect(gzipped.status == 200, "attempt \(attempt)")
            #expect(gzipped.header("Content-Encoding") == "gzip", "attempt \(attempt)")
            #expect(gzipped.body == identity.body, "attempt \(attempt): the socket transport decoded it")
            #expect(gzipped.header("ETag") == identity.header("ETag"))
        }
    }

    @Test("A large page is answered 200, gzipped, while the compute pool that gzips pages is full: a page is never refused for its compression")
    func largePageWhileTheComputePoolIsFull() throws {
        let server = try TestServer()
        defer { server.stop() }
        let path = "/v1/users/3/feed?limit=60&width=390"
        let identity = try server.request("GET", path, token: nil, headers: ["Accept-Encoding": "identity"])
        #expect(identity.status == 200 && identity.body.count >= 16 << 10, "large enough for the compute pool: \(identity.body.count) B")

        // The pool's threads (two, as many as the server's) held, and its queue filled behind them.
        let compute = server.server.pools.compute
        let (started, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let hold: @Sendable () -> Void = {
            started.signal()
            release.wait()
        }
        var submitted = 0
        defer { for _ in 0..<submitted { release.signal() } }
        for _ in 0..<2 {
            #expect(compute.trySubmit(hold))
            submitted += 1
            started.wait()
        }
        while compute.trySubmit(hold) { submitted += 1 }
        #expect(compute.load.running == 2 && compute.load.waiting == compute.queueCapacity, "the pool is full")

        let gzipped = try server.request("GET", path, token: nil, headers: ["Accept-Encoding": "gzip"])
        try #require(gzipped.status == 200, "\(String(decoding: gzipped.body.prefix(300), as: UTF8.self))")
        #expect(gzipped.header("Content-Encoding") == "gzip")
        #expect(gzipped.body == identity.body, "the socket transport decoded it")
        #expect(compute.load.running == 2 && compute.load.waiting == compute.queueCapacity, "gzipped on the event loop, not queued")
    }
}

@Suite("Gzipped deltas")
struct GzippedDeltaTests {
    /// A like's batch delta is about 250 bytes: under the old 256-byte threshold it went raw,
    /// some 60 bytes more than gzipped.
    @Test("A like's delta reaches a gzip client gzipped in every form")
    func aLikesDeltaIsGzipped() throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = try server.freshFeed(viewer: 3, query: FeedQuery()).document
        let video = try #require(
            held.sections.lazy.flatMap(\.items).first { $0.kind == "video" }?.id.split(separator: ":").last.flatMap { Int64($0) })
        let like = try server.request("PUT", "/v1/videos/\(video)/likes/30")
        #expect(like.status == 201)
        for format in FeedDelta.Format.allCases {
            let path = "/v1/users/3/feed/delta?since=\(held.snapshot)&format=\(format.rawValue)"
            let identity = try server.request("GET", path, token: nil, headers: ["Accept-Encoding": "identity"])
            #expect(identity.status == 200 && identity.header("Content-Encoding") == nil, "\(format)")
            let gzipped = try server.request("GET", path, token: nil, headers: ["Accept-Encoding": "gzip"])
            #expect(gzipped.header("Content-Encoding") == "gzip", "\(format): \(identity.body.count) B raw")
            #expect(gzipped.body == identity.body, "\(format): the transport decoded it")
        }
    }
}
