import DeltaFeedClient
import DeltaFeedServer
import EventHTTP
import Foundation
import Testing

/// `GET …/feed/live`: the viewer's feed as Server-Sent Events, one rule per test.
@Suite("Live streams")
struct LiveStreamTests {
    static let viewer: Int64 = 4

    func open(_ server: TestServer, _ query: String = "", headers: [String: String] = [:]) throws -> EventStreamReader {
        let reader = try EventStreamReader(port: server.server.http.port, path: "/v1/users/\(LiveStreamTests.viewer)/feed/live\(query)", headers: headers)
        try reader.readHead()
        return reader
    }

    /// A video on viewer 4's first page (its first video item).
    func videoOnPage(_ document: FeedDocument) throws -> Int64 {
        for section in document.sections {
            for item in section.items where item.kind == "video" {
                return Int64(item.id.dropFirst("video:".count))!
            }
        }
        throw TestFailure("no video on the page")
    }

    func like(_ server: TestServer, video: Int64, by user: Int64) throws {
        let response = try server.request("PUT", "/v1/videos/\(video)/likes/\(user)")
        #expect(response.status == 201, "like \(video) by \(user): \(response.status)")
    }

    func document(_ event: EventStreamReader.Event) throws -> FeedDocument {
        try FeedDocument(json: try JSONValue(parsing: Array(event.data.utf8)))
    }

    /// A delta event of a stream of `format` (the stream's default, batch, unless said) applied
    /// to the document it starts from.
    func applied(_ event: EventStreamReader.Event, to document: FeedDocument, format: FeedDelta.Format = .batch) throws -> FeedDocument {
        try document.applying(try FeedDelta(parsing: Array(event.data.utf8), format: format, since: document.snapshot))
    }

    @Test("An event's data is one data: line per line of it, whichever line break it uses, and one line when it has none")
    func eventFraming() {
        func framed(_ data: String, id: String? = "s1") -> String {
            String(decoding: LiveStreams.event("delta", id: id, data: Array(data.utf8)), as: UTF8.self)
        }
        #expect(framed("{\"a\":1}") == "event: delta\nid: s1\ndata: {\"a\":1}\n\n")
        #expect(framed("one\ntwo\r\nthree\n", id: nil) == "event: delta\ndata: one\ndata: two\ndata: three\ndata: \n\n")
        #expect(framed("") == "event: delta\nid: s1\ndata: \n\n")
        let long = String(repeating: "x", count: 5_000)
        #expect(framed(long + "\r\n" + long + "\n") == "event: delta\nid: s1\ndata: \(long)\ndata: \(long)\ndata: \n\n")
    }

    @Test("Without since the first event is a reset with the whole page, after retry:, as text/event-stream")
    func resetWithoutSince() throws {
        let server = try TestServer()
        defer { server.stop() }
        let reader = try open(server, "?limit=6")
        #expect(reader.status == 200)
        #expect(reader.headers["content-type"] == "text/event-stream; charset=utf-8")
        #expect(reader.headers["cache-control"] == "no-cache, no-transform")
        #expect(reader.headers["x-accel-buffering"] == "no")
        var sawRetry = false
        var reset: EventStreamReader.Event?
        while reset == nil, let part = try reader.next() {
            switch part {
            case .retry(let milliseconds): sawRetry = milliseconds == 2000
            case .event(let event): reset = event
            case .comment: break
            }
        }
        #expect(sawRetry)
        let event = try #require(reset)
        #expect(event.name == "reset")
        let fresh = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6))
        #expect(event.id == fresh.document.snapshot)
        #expect(try document(event) == fresh.document)
    }

    @Test(
        "A write that changes the page is pushed as a delta since the previous event; applied, it equals a fresh fetch",
        arguments: ["batch", "sequential", "jsonpatch"])
    func deltaAfterWrite(format: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let reader = try open(server, "?limit=6&format=\(format)")
        let reset = try #require(try reader.nextEvent())
        var held = try document(reset)
        for (round, user) in [Int64(30), 31, 32].enumerated() {
            try like(server, video: try videoOnPage(held), by: user)
            let event = try #require(try reader.nextEvent(), "round \(round): no event")
            #expect(event.name == "delta")
            let delta = try FeedDelta(parsing: Array(event.data.utf8), format: try #require(FeedDelta.Format(rawValue: format)), since: held.snapshot)
            #expect(event.id == delta.header.snapshot)
            held = try held.applying(delta)
            let fresh = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6)).document
            #expect(held == fresh, "round \(round): \(held.firstDifference(from: fresh))")
        }
    }

    @Test("Resuming from a snapshot the server knows sends nothing until the feed changes, then the delta since it")
    func resumeSendsNothingUntilAChange() throws {
        let server = try TestServer()
        defer { server.stop() }
        let fresh = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6)).document
        let reader = try open(server, "?limit=6&since=\(fresh.snapshot)")
        #expect(try reader.nextEvent(timeout: 0.6) == nil, "the feed did not change: no event")
        try like(server, video: try videoOnPage(fresh), by: 30)
        let event = try #require(try reader.nextEvent())
        #expect(event.name == "delta")
        // The delta since that snapshot: applied to it, the feed now.
        let now = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6)).document
        #expect(try applied(event, to: fresh) == now)
    }

    @Test("Last-Event-ID wins over since; an unknown snapshot or one of another page gets a reset")
    func lastEventIDAndResets() throws {
        let server = try TestServer()
        defer { server.stop() }
        let six = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6)).document
        let seven = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 7)).document
        // since names another page (limit 7), Last-Event-ID this one: resumed, no reset.
        let resumed = try open(server, "?limit=6&since=\(seven.snapshot)", headers: ["Last-Event-ID": six.snapshot])
        #expect(try resumed.nextEvent(timeout: 0.6) == nil)
        // A snapshot of another page: reset to this page.
        let other = try open(server, "?limit=6&since=\(seven.snapshot)")
        let reset = try #require(try other.nextEvent())
        #expect(reset.name == "reset")
        #expect(reset.id == six.snapshot)
        // A snapshot id the server never handed out.
        let unknown = try open(server, "?limit=6&since=\(String(repeating: "ab", count: 16))")
        #expect(try unknown.nextEvent()?.name == "reset")
        // A Last-Event-ID that is no snapshot id is ignored: the stream starts afresh.
        let junk = try open(server, "?limit=6", headers: ["Last-Event-ID": "not-a-snapshot"])
        #expect(try junk.nextEvent()?.name == "reset")
    }

    @Test("Changes within the coalescing window after an event are folded into one event at its end")
    func coalescing() throws {
        // A window long enough that the five likes land in it on a loaded machine too.
        let server = try TestServer(live: LiveLimits(coalesce: .seconds(2)))
        defer { server.stop() }
        let reader = try open(server, "?limit=6")
        let reset = try #require(try reader.nextEvent())
        let resetAt = Date()
        let held = try document(reset)
        let video = try videoOnPage(held)
        for user in Int64(30)...34 { try like(server, video: video, by: user) }
        let event = try #require(try reader.nextEvent())
        let waited = Date().timeIntervalSince(resetAt)
        #expect(waited >= 1.5, "held until the window ended: \(waited) s")
        #expect(event.name == "delta")
        let fresh = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6)).document
        #expect(try applied(event, to: held) == fresh, "one event carries all five likes")
        #expect(try reader.nextEvent(timeout: 2.5) == nil, "and no other event follows")
    }

    @Test("A client that stops reading is owed one event: when it catches up, it gets one delta from what it last received")
    func slowReaderIsOwedOneEvent() throws {
        // No coalescing: to a reader that keeps up, each like is an event of its own.
        let server = try TestServer(live: LiveLimits(coalesce: .zero))
        defer { server.stop() }
        // The largest page: its reset is far more than the slow reader's buffers hold, so the
        // server cannot finish writing it until the reader reads.
        let query = FeedQuery(limit: 200)
        let slow = try EventStreamReader(
            port: server.server.http.port, path: "/v1/users/\(LiveStreamTests.viewer)/feed/live?limit=200", narrow: true)
        try slow.readHead()
        let reader = try open(server, "?limit=200")
        var kept = try document(try #require(try reader.nextEvent()))
        let video = try videoOnPage(kept)
        let likers = Array(Int64(30)...34)
        for user in likers {
            try like(server, video: video, by: user)
            // The stream that keeps up gets each like as it lands.
            let event = try #require(try reader.nextEvent(), "like by \(user): no event")
            kept = try applied(event, to: kept)
        }
        // The one that did not read: the page, then one delta from it to the feed now.
        let reset = try #require(try slow.nextEvent())
        #expect(reset.name == "reset")
        var held = try document(reset)
        var deltas = 0
        while let event = try slow.nextEvent(timeout: 1) {
            #expect(event.name == "delta")
            held = try applied(event, to: held)
            deltas += 1
        }
        #expect(deltas == 1, "\(likers.count) likes landed while the client did not read")
        let fresh = try server.freshFeed(viewer: LiveStreamTests.viewer, query: query).document
        #expect(held == fresh, "\(held.firstDifference(from: fresh))")
        #expect(kept == fresh, "\(kept.firstDifference(from: fresh))")
    }

    @Test("An idle stream gets a heartbeat comment and outlives the request timeout")
    func heartbeatsKeepIdleStreams() throws {
        let server = try TestServer(live: LiveLimits(heartbeat: .milliseconds(500)), requestTimeout: .seconds(1))
        defer { server.stop() }
        let fresh = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6)).document
        let reader = try open(server, "?limit=6&since=\(fresh.snapshot)")
        var heartbeats = 0
        let until = Date(timeIntervalSinceNow: 3)
        while Date() < until, let part = try reader.next(timeout: until.timeIntervalSinceNow) {
            if case .comment = part { heartbeats += 1 }
        }
        #expect(heartbeats >= 2, "about one a second (the scan runs once a second): \(heartbeats)")
        #expect(!reader.ended, "three request timeouts later the stream is still open")
        // And it still delivers.
        try like(server, video: try videoOnPage(fresh), by: 30)
        #expect(try reader.nextEvent()?.name == "delta")
    }

    @Test("/metrics times each fan-out, and counts the changes folded into an event a stream is already owed")
    func fanOutAndCoalescingAreCounted() throws {
        // A window no test outlasts: every like after the first lands while the stream is owed its event.
        let server = try TestServer(live: LiveLimits(coalesce: .seconds(30)))
        defer { server.stop() }
        let reader = try open(server, "?limit=6")
        let video = try videoOnPage(try document(try #require(try reader.nextEvent())))
        #expect(try server.metric("deltafeed_live_coalesced_total") == 0)
        let fanOuts = try #require(try server.metric("deltafeed_live_fanout_seconds_count"))
        #expect(try server.metric(#"deltafeed_live_fanout_seconds_bucket{le="+Inf"}"#) == fanOuts)
        // The first like makes the stream owed an event, held for the window: a fan-out, nothing folded.
        try like(server, video: video, by: 30)
        let afterFirst = try server.metric("deltafeed_live_fanout_seconds_count", awaiting: fanOuts + 1)
        #expect(afterFirst == fanOuts + 1, "one fan-out for the like")
        #expect(try server.metric("deltafeed_live_coalesced_total") == 0)
        // Each like after it touches the owed stream: one change folded in, one more fan-out.
        for (index, user) in [Int64(31), 32].enumerated() {
            try like(server, video: video, by: user)
            let folded = Double(index + 1)
            let coalesced = try server.metric("deltafeed_live_coalesced_total", awaiting: folded)
            #expect(coalesced == folded, "likes folded in")
            let fannedOut = try server.metric("deltafeed_live_fanout_seconds_count", awaiting: fanOuts + 1 + folded)
            #expect(fannedOut == fanOuts + 1 + folded, "a fan-out for each like")
        }
    }

    @Test("/metrics counts the heartbeats sent on idle streams")
    func heartbeatsAreCounted() throws {
        let server = try TestServer(live: LiveLimits(heartbeat: .milliseconds(500)))
        defer { server.stop() }
        let fresh = try server.freshFeed(viewer: LiveStreamTests.viewer, query: FeedQuery(limit: 6)).document
        #expect(try server.metric("deltafeed_live_heartbeats_total") == 0)
        let reader = try open(server, "?limit=6&since=\(fresh.snapshot)")
        var heartbeats = 0
        while heartbeats < 2, let part = try reader.next(timeout: 5) {
            if case .comment = part { heartbeats += 1 }
        }
        #expect(heartbeats == 2)
        let counted = try #require(try server.metric("deltafeed_live_heartbeats_total"))
        #expect(counted >= 2, "at least the two the client read: \(counted)")
    }

    @Test("Past the per-viewer and per-server limits a stream gets 503 with Retry-After; a closed stream frees its place")
    func limits() throws {
        let server = try TestServer(live: LiveLimits(maxStreams: 2, perViewer: 1))
        defer { server.stop() }
        let first = try open(server, "?limit=6")
        #expect(first.status == 200)
        let second = try open(server, "?limit=7")
        #expect(second.status == 503)
        #expect(second.headers["retry-after"] != nil)
        #expect(try second.bodyText().contains("live streams open"))
        let other = try EventStreamReader(port: server.server.http.port, path: "/v1/users/5/feed/live")
        try other.readHead()
        #expect(other.status == 200)
        let third = try EventStreamReader(port: server.server.http.port, path: "/v1/users/6/feed/live")
        try third.readHead()
        #expect(third.status == 503)
        first.close()
        var admitted = 0
        for _ in 0..<200 where admitted == 0 {
            Thread.sleep(forTimeInterval: 0.05)
            let again = try open(server, "?limit=6")
            if again.status == 200 { admitted += 1 }
        }
        #expect(admitted == 1, "the closed stream's place was given back")
    }

    @Test("Streams closed at once, many times over, give their places back")
    func quickClosesReleaseTheirPlaces() throws {
        let server = try TestServer(live: LiveLimits(perViewer: 1))
        defer { server.stop() }
        for _ in 0..<60 {
            // Sent and gone: the server may learn of the close before it has set the stream up.
            let reader = try EventStreamReader(port: server.server.http.port, path: "/v1/users/\(LiveStreamTests.viewer)/feed/live")
            reader.close()
        }
        var admitted = false
        for _ in 0..<200 where !admitted {
            Thread.sleep(forTimeInterval: 0.05)
            let again = try open(server, "?limit=6")
            admitted = again.status == 200
        }
        #expect(admitted, "every closed stream's place was given back")
    }

    @Test("Unknown viewers are 404, bad parameters 400, HEAD answers the head alone")
    func badRequests() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.server.http.port
        let missing = try EventStreamReader(port: port, path: "/v1/users/999999/feed/live")
        try missing.readHead()
        #expect(missing.status == 404)
        for query in ["?format=xml", "?since=abc", "?limit=0", "?width=5"] {
            let bad = try EventStreamReader(port: port, path: "/v1/users/4/feed/live\(query)")
            try bad.readHead()
            #expect(bad.status == 400, "\(query)")
        }
        let head = try EventStreamReader(port: port, path: "/v1/users/4/feed/live", method: "HEAD")
        try head.readHead()
        #expect(head.status == 200)
        #expect(head.headers["content-type"] == "text/event-stream; charset=utf-8")
    }

    @Test("With viewer tokens: none is 401, the token in the deltafeed_token cookie opens the stream, another viewer's is 403")
    func tokens() async throws {
        let tokens = try await ViewerTokens(secret: String(repeating: "s", count: 32))
        let own = try await tokens.token(viewer: LiveStreamTests.viewer, expiresAt: Date(timeIntervalSinceNow: 600))
        let others = try await tokens.token(viewer: 5, expiresAt: Date(timeIntervalSinceNow: 600))
        let server = try TestServer(viewerTokens: tokens)
        defer { server.stop() }
        #expect(try open(server).status == 401)
        let cookie = try open(server, headers: ["Cookie": "theme=dark; deltafeed_token=\(own)"])
        #expect(cookie.status == 200)
        #expect(try cookie.nextEvent()?.name == "reset")
        #expect(try open(server, headers: ["Authorization": "Bearer \(own)"]).status == 200)
        #expect(try open(server, headers: ["Cookie": "deltafeed_token=\(others)"]).status == 403)
        // The feed routes themselves still want the header.
        let feed = try server.request("GET", "/v1/users/4/feed", token: nil, headers: ["Cookie": "deltafeed_token=\(own)"])
        #expect(feed.status == 401)
    }

    @Test("With viewer tokens, a valid token in the URL does not open the stream: 401, as without one")
    func tokenInTheURLIsRefused() async throws {
        let tokens = try await ViewerTokens(secret: String(repeating: "s", count: 32))
        let own = try await tokens.token(viewer: LiveStreamTests.viewer, expiresAt: Date(timeIntervalSinceNow: 600))
        let server = try TestServer(viewerTokens: tokens)
        defer { server.stop() }
        // Access logs, proxies and the browser's history keep URLs: a token is never read from one.
        for name in ["token", "access_token", "deltafeed_token"] {
            let reader = try open(server, "?\(name)=\(own)")
            #expect(reader.status == 401, "\(name)=")
        }
        // The same token where the server reads it opens the stream.
        #expect(try open(server, headers: ["Cookie": "deltafeed_token=\(own)"]).status == 200)
    }

    @Test("Shutdown sends every stream event: shutdown and ends it")
    func shutdownEndsStreams() throws {
        let server = try TestServer()
        let reader = try open(server, "?limit=6")
        #expect(try reader.nextEvent()?.name == "reset")
        let stopped = Thread { server.stop() }
        stopped.start()
        let event = try #require(try reader.nextEvent(timeout: 5))
        #expect(event.name == "shutdown")
        #expect(try reader.endsWithin(5), "the stream ended")
    }
}
