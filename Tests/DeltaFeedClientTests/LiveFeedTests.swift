import DeltaFeedClient
import DeltaFeedServer
import Foundation
import Testing

/// `DeltaFeedClient.live()` and `liveUpdates()` against an in-process server (and, for cuts and
/// silences a real server does not make on demand, a scripted one).
@Suite("Live feeds over Server-Sent Events")
struct LiveFeedTests {
    static let openStreams = "deltafeed_live_streams_open"
    static let resets = #"deltafeed_live_events_total{event="reset"}"#
    static let deltas = #"deltafeed_live_events_total{event="delta"}"#

    @Test("The live sequence starts with the whole page, then yields the page after each write, equal to a fresh GET, in every format")
    func resetThenDeltas() async throws {
        let server = try LiveTestServer()
        defer { server.stop() }
        for (round, format) in FeedDelta.Format.allCases.enumerated() {
            let client = server.client(viewer: 3, format: format)
            let recorder = LiveRecorder(client.liveUpdates())
            defer { recorder.cancel() }
            let first = try await recorder.element(1)
            #expect(first.change == .reset)
            #expect(first.document == (try server.freshFeed(viewer: 3)))
            for like in 0..<2 {
                try server.likeAVideoShown(to: 3, by: 10 + Int64(round * 2 + like))
                let update = try await recorder.element(2 + like)
                guard case .delta(let delta) = update.change else {
                    Issue.record("\(format): \(update.change)")
                    continue
                }
                #expect(delta.format == format)
                let fresh = try server.freshFeed(viewer: 3)
                #expect(update.document == fresh, "\(format): \(update.document.snapshot) vs \(fresh.snapshot)")
            }
            #expect(recorder.elements.count == 3, "one event per write")
        }
    }

    @Test("live() yields the documents themselves: the page, then the page after a like")
    func documents() async throws {
        let server = try LiveTestServer()
        defer { server.stop() }
        let client = server.client(viewer: 5, format: .sequential)
        let recorder = LiveRecorder(client.live())
        defer { recorder.cancel() }
        let page = try await recorder.element(1)
        #expect(page == (try server.freshFeed(viewer: 5)))
        try server.likeAVideoShown(to: 5, by: 30)
        let after = try await recorder.element(2)
        #expect(after != page)
        #expect(after == (try server.freshFeed(viewer: 5)))
        #expect(client.document == nil, "the client's own document is left alone")
    }

    @Test("A client holding a page resumes from its snapshot: no reset, the first element is the first change; an adopted page resumes too")
    func resumeWithoutReset() async throws {
        let server = try LiveTestServer()
        defer { server.stop() }
        let client = server.client(viewer: 6, format: .jsonpatch)
        _ = try client.fetch()
        let recorder = LiveRecorder(client.liveUpdates())
        try await until("the stream opens") { try server.metric(LiveFeedTests.openStreams) == 1 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(recorder.elements.map(\.change.name) == [], "nothing changed since the held snapshot")
        try server.likeAVideoShown(to: 6, by: 31)
        let update = try await recorder.element(1)
        recorder.cancel()
        guard case .delta = update.change else {
            Issue.record("\(update.change)")
            return
        }
        #expect(update.document == (try server.freshFeed(viewer: 6)))

        // Another client given that page resumes from it.
        let next = server.client(viewer: 6, format: .jsonpatch)
        next.adopt(update.document)
        let resumed = LiveRecorder(next.liveUpdates())
        defer { resumed.cancel() }
        try server.likeAVideoShown(to: 6, by: 32)
        let change = try await resumed.element(1)
        guard case .delta = change.change else {
            Issue.record("\(change.change)")
            return
        }
        #expect(change.document == (try server.freshFeed(viewer: 6)))
        #expect(try server.metric(LiveFeedTests.resets) == 0, "the server sent no reset")
        #expect(try server.metric(LiveFeedTests.deltas) == 2)
    }

    @Test("Cancelling the consuming task, or leaving the loop, closes the connection: the server counts no open stream and admits the next")
    func cancellationClosesTheConnection() async throws {
        // One stream per viewer: a connection left open would make the next one a 503.
        let server = try LiveTestServer(live: LiveLimits(perViewer: 1))
        defer { server.stop() }
        let client = server.client(viewer: 7)
        for _ in 0..<3 {
            let recorder = LiveRecorder(client.liveUpdates())
            #expect(try await recorder.element(1).change == .reset)
            #expect(try server.metric(LiveFeedTests.openStreams) == 1)
            recorder.cancel()
            #expect(try await recorder.end() == nil, "a cancelled sequence ends without an error")
            try await until("the server sees the stream closed") { try server.metric(LiveFeedTests.openStreams) == 0 }
        }
        for try await document in client.live() {
            #expect(document.viewer == 7)
            break
        }
        try await until("the server sees the stream closed") { try server.metric(LiveFeedTests.openStreams) == 0 }
    }

    @Test("Answers other than 200 end the sequence with the status and the server's error code; the bearer token is sent")
    func refusals() async throws {
        let tokens = try await ViewerTokens(secret: "a viewer secret long enough for HS256 and for HS384 too")
        let server = try LiveTestServer(live: LiveLimits(perViewer: 1), viewerTokens: tokens)
        defer { server.stop() }
        let own = try await tokens.token(viewer: 8, expiresAt: Date(timeIntervalSinceNow: 600))
        func failure(_ client: DeltaFeedClient) async throws -> DeltaFeedClientError? {
            let recorder = LiveRecorder(client.live())
            let error = try await recorder.end()
            #expect(recorder.elements.isEmpty)
            return error as? DeltaFeedClientError
        }
        let anonymous = try await failure(server.client(viewer: 8))
        guard case .unexpectedStatus(401, "unauthorized", _)? = anonymous else {
            Issue.record("no token: \(String(describing: anonymous))")
            return
        }
        let refused = try await failure(server.client(viewer: 9, token: own))
        guard case .unexpectedStatus(403, "forbidden", _)? = refused else {
            Issue.record("another viewer's token: \(String(describing: refused))")
            return
        }
        let missing = try await failure(server.client(viewer: 999_999, token: LiveTestServer.adminToken))
        guard case .unexpectedStatus(404, "not_found", _)? = missing else {
            Issue.record("an unknown viewer: \(String(describing: missing))")
            return
        }
        let malformed = try await failure(server.client(viewer: 8, query: FeedQuery(limit: 0), token: own))
        guard case .unexpectedStatus(400, _, _)? = malformed else {
            Issue.record("limit=0: \(String(describing: malformed))")
            return
        }

        // The viewer's own token opens the stream; a second stream passes the per-viewer limit.
        let open = LiveRecorder(server.client(viewer: 8, token: own).live())
        defer { open.cancel() }
        #expect(try await open.element(1).viewer == 8)
        let overloaded = try await failure(server.client(viewer: 8, token: own))
        guard case .unexpectedStatus(503, "overloaded", let message?)? = overloaded else {
            Issue.record("a second stream: \(String(describing: overloaded))")
            return
        }
        #expect(message.contains("live streams"))
    }

    @Test("When the server shuts down, the sequence reconnects after the server's retry: to the next server on the same store, without a reset")
    func reconnectsAfterShutdown() async throws {
        let server = try LiveTestServer(live: LiveLimits(retry: .milliseconds(100)))
        defer { server.stop() }
        let client = server.client(viewer: 9, format: .batch)
        // The client's own retry is long: only the server's `retry: 100` brings it back in time.
        let recorder = LiveRecorder(client.liveUpdates(options: DeltaFeedClient.LiveOptions(retry: 30)))
        defer { recorder.cancel() }
        let first = try await recorder.element(1)
        #expect(first.change == .reset)
        let start = Date()
        try server.restart()
        try await until("the client reconnects to the new server") { try server.metric(LiveFeedTests.openStreams) == 1 }
        // The client's own retry is 30 s: well under that, it was the server's.
        #expect(Date().timeIntervalSince(start) < 20)
        try server.likeAVideoShown(to: 9, by: 34)
        let update = try await recorder.element(2)
        guard case .delta = update.change else {
            Issue.record("after the restart: \(update.change)")
            return
        }
        #expect(update.document == (try server.freshFeed(viewer: 9)))
        #expect(try server.metric(LiveFeedTests.resets) == 0, "the new server resumed the held snapshot")
    }

    // MARK: - Against a scripted server

    static let snapshot = "0123456789abcdef0123456789abcdef"
    static let page = FeedDocument(snapshot: snapshot, viewer: 2, sections: [], nextCursor: nil)
    static let eventStreamHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// One chunk of a chunked body.
    static func chunk(_ text: String) -> String {
        String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n"
    }

    @Test("After the server closes the stream, the sequence reconnects after its retry: with since, Last-Event-ID and the bearer token")
    func reconnectsAfterTheStreamCloses() async throws {
        let json = String(decoding: LiveFeedTests.page.serialized(), as: UTF8.self)
        let comma = try #require(json.firstIndex(of: ","))
        let server = try ScriptedServer { index, _ in
            if index == 0 {
                // Read until the server closes, CR LF lines, the page cut over two data lines.
                let body = "retry: 50\r\n\r\nevent: reset\r\nid: \(LiveFeedTests.snapshot)\r\ndata: \(json[..<comma])\r\ndata: \(json[comma...])\r\n\r\n"
                return (Array(("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + body).utf8), true)
            }
            return (Array((LiveFeedTests.eventStreamHead + LiveFeedTests.chunk(": connected\n\n")).utf8), false)
        }
        defer { server.stop() }
        let client = DeltaFeedClient(
            baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, viewer: 2, format: .sequential, query: FeedQuery(limit: 7), bearerToken: "token-2")
        // No idle timeout within the test: on a loaded machine (the whole suite in parallel) this
        // task may wait long enough between steps for a silent connection to be reopened.
        let recorder = LiveRecorder(client.liveUpdates(options: DeltaFeedClient.LiveOptions(idleTimeout: 3600, retry: 30)))
        defer { recorder.cancel() }
        #expect(try await recorder.element(1) == DeltaFeedClient.LiveUpdate(change: .reset, document: LiveFeedTests.page))
        try await until("a second connection") { server.requests.count >= 2 }
        let (first, second) = (server.requests[0], server.requests[1])
        // The client says which kinds it renders: every kind this module knows.
        let kinds = FeedQuery.knownKinds.joined(separator: ",")
        #expect(first.hasPrefix("GET /v1/users/2/feed/live?format=sequential&limit=7&kinds=\(kinds) HTTP/1.1\r\n"))
        #expect(!first.contains("Last-Event-ID"))
        #expect(second.hasPrefix("GET /v1/users/2/feed/live?format=sequential&limit=7&kinds=\(kinds)&since=\(LiveFeedTests.snapshot) HTTP/1.1\r\n"))
        #expect(second.contains("\r\nLast-Event-ID: \(LiveFeedTests.snapshot)\r\n"))
        for request in [first, second] {
            #expect(request.contains("\r\nAuthorization: Bearer token-2\r\n"))
            #expect(request.contains("\r\nAccept: text/event-stream\r\n"))
        }
        recorder.cancel()
        try await until("the client closes the held connection") { server.closedByClient.contains(1) }
        #expect(server.requests.count == 2)
    }

    @Test("A connection silent past the idle timeout is opened again; event: gone ends the sequence with the server's code")
    func idleTimeoutAndGone() async throws {
        let json = String(decoding: LiveFeedTests.page.serialized(), as: UTF8.self)
        let server = try ScriptedServer { index, _ in
            if index == 0 {
                // The page, then silence: no heartbeat.
                let events = "retry: 10\n\nevent: reset\nid: \(LiveFeedTests.snapshot)\ndata: \(json)\n\n"
                return (Array((LiveFeedTests.eventStreamHead + LiveFeedTests.chunk(events)).utf8), false)
            }
            let gone = LiveFeedTests.chunk("event: gone\ndata: {\"error\":\"viewer_not_found\"}\n\n") + "0\r\n\r\n"
            return (Array((LiveFeedTests.eventStreamHead + gone).utf8), true)
        }
        defer { server.stop() }
        let client = DeltaFeedClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, viewer: 2)
        let start = Date()
        let recorder = LiveRecorder(client.live(options: DeltaFeedClient.LiveOptions(idleTimeout: 0.4, retry: 30)))
        defer { recorder.cancel() }
        #expect(try await recorder.element(1) == LiveFeedTests.page)
        let error = try await recorder.end()
        #expect(error as? DeltaFeedClientError == .gone("viewer_not_found"))
        #expect(Date().timeIntervalSince(start) >= 0.4, "it waited for the idle timeout")
        #expect(server.requests.count == 2)
        #expect(server.requests.last?.contains("Last-Event-ID: \(LiveFeedTests.snapshot)") == true)
        #expect(server.closedByClient.contains(0), "the silent connection was closed")
    }

    @Test("Failed attempts back off, and after maximumFailures the sequence throws a transport error; https:// is refused at once")
    func givesUpAfterMaximumFailures() async throws {
        // Port 1 on loopback: nothing listens there.
        let client = DeltaFeedClient(baseURL: URL(string: "http://127.0.0.1:1")!, viewer: 1)
        let start = Date()
        let recorder = LiveRecorder(client.live(options: DeltaFeedClient.LiveOptions(retry: 0.05, maximumFailures: 4)))
        let error = try await recorder.end()
        guard case .transport(let reason)? = error as? DeltaFeedClientError else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(reason.contains("4 attempts"), "\(reason)")
        // Waits of 0.05, 0.1 and 0.2 s between the four attempts.
        #expect(Date().timeIntervalSince(start) >= 0.35)

        let secure = DeltaFeedClient(baseURL: URL(string: "https://127.0.0.1:1")!, viewer: 1)
        let refused = try await LiveRecorder(secure.live()).end()
        guard case .transport(let message)? = refused as? DeltaFeedClientError else {
            Issue.record("\(String(describing: refused))")
            return
        }
        #expect(message.contains("http://"))
    }
}

extension DeltaFeedClient.LiveUpdate.Change {
    /// `reset` or `delta`, for short failure messages.
    fileprivate var name: String {
        if case .delta = self { return "delta" }
        return "reset"
    }
}
