import DeltaFeedClient
import Foundation
import Testing

/// The request metrics EventHTTP keeps per route (handles made on a route's first request) as
/// Prometheus shows them.
@Suite("Request metrics on /metrics")
struct RequestMetricsTests {
    /// What `/metrics` shows now.
    func metricsText(_ server: TestServer) throws -> String {
        String(decoding: try server.request("GET", "/metrics", token: nil).body, as: UTF8.self)
    }

    /// The value on the line that starts with `line` (a name with its labels), if any.
    static func value(of line: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap { Double($0.dropFirst(line.count + 1)) }
    }

    /// The values of counter `name` by its `how` label.
    func metric(_ server: TestServer, _ name: String, how labels: [String]) throws -> [String: Double] {
        let text = try metricsText(server)
        var found: [String: Double] = [:]
        for how in labels { found[how] = Self.value(of: name + #"{how=""# + how + #""}"#, in: text) }
        return found
    }

    @Test("How the pages of answers were made is counted (composed, patched in place, shifted for a new video), and the changes judged")
    func pageWorkIsCounted() throws {
        let server = try TestServer()
        defer { server.stop() }
        func values() throws -> [String: Double] {
            var found = try metric(server, "deltafeed_pages_total", how: ["composed", "patched", "shifted"])
            found["judged"] = Self.value(of: "deltafeed_changes_judged_total", in: try metricsText(server))
            return found
        }
        let query = "/v1/users/4/feed?limit=12"
        let page = try server.request("GET", query, token: nil)
        #expect(page.status == 200)
        let start = try values()
        #expect(start["composed"] == 1, "\(start)")
        // A like on a video the page shows patches it in place; a new video by a followee shifts it.
        let document = try FeedDocument(parsing: page.body)
        let video = try #require(document.sections.flatMap(\.items).first { $0.kind == "video" })
        #expect(try server.request("PATCH", "/v1/videos/\(video.id.dropFirst("video:".count))", raw: #"{"like_count":4321}"#).status == 200)
        #expect(try server.request("GET", query, token: nil).status == 200)
        #expect(try values()["judged"] == 1, "the like was the one change judged against the page")
        // The page's first video is the newest of a followee's.
        let author = try #require(video.data["author"]?["id"]?.int64Value)
        #expect(
            try server.request(
                "POST", "/v1/videos", raw: #"{"author_id":\#(author),"title":"new","thumbnail_url":"https://x.example/t.jpg","duration_seconds":5}"#
            ).status == 201)
        #expect(try server.request("GET", query, token: nil).status == 200)
        let end = try values()
        #expect(end["composed"] == 1, "\(end)")
        #expect(end["patched"] == 1, "\(end)")
        #expect(end["shifted"] == 1, "\(end)")
    }

    @Test("How deltas were built is counted: from a patch's items, from a shift's section edits, or by a diff")
    func deltaWorkIsCounted() throws {
        let server = try TestServer()
        defer { server.stop() }
        func counts() throws -> [String: Double] { try metric(server, "deltafeed_deltas_total", how: ["patched", "edited", "diffed"]) }
        /// The delta since `snapshot`, and the snapshot it leads to.
        func delta(since snapshot: String) throws -> String {
            let response = try server.request("GET", "/v1/users/4/feed/delta?since=\(snapshot)&limit=12", token: nil)
            #expect(response.status == 200)
            guard case .string(let next)? = try response.json()["snapshot"] else { throw TestFailure("no snapshot in the delta") }
            return next
        }
        let first = try FeedDocument(parsing: try server.request("GET", "/v1/users/4/feed?limit=12", token: nil).body)
        #expect(try counts() == ["patched": 0, "edited": 0, "diffed": 0])
        // A like on a video the page shows: the client one write behind gets the patched item.
        let video = try #require(first.sections.flatMap(\.items).first { $0.kind == "video" })
        let id = video.id.dropFirst("video:".count)
        #expect(try server.request("PATCH", "/v1/videos/\(id)", raw: #"{"like_count":4321}"#).status == 200)
        let second = try delta(since: first.snapshot)
        #expect(try counts() == ["patched": 1, "edited": 0, "diffed": 0])
        // A followee's new video slides the grids on: the client one write behind gets the edits.
        let author = try #require(video.data["author"]?["id"]?.int64Value)
        #expect(
            try server.request(
                "POST", "/v1/videos", raw: #"{"author_id":\#(author),"title":"new","thumbnail_url":"https://x.example/t.jpg","duration_seconds":5}"#
            ).status == 201)
        _ = try delta(since: second)
        #expect(try counts() == ["patched": 1, "edited": 1, "diffed": 0])
        // Two writes behind: diffed.
        _ = try delta(since: first.snapshot)
        #expect(try counts() == ["patched": 1, "edited": 1, "diffed": 1])
    }

    @Test("Requests are counted by route, method and status, and timed by route")
    func requestsAreCountedByRouteMethodAndStatus() throws {
        let server = try TestServer()
        defer { server.stop() }
        for _ in 0..<3 { #expect(try server.request("GET", "/healthz", token: nil).status == 200) }
        #expect(try server.request("HEAD", "/healthz", token: nil).status == 200)
        #expect(try server.request("GET", "/no/such/path", token: nil).status == 404)
        #expect(try server.request("DELETE", "/healthz", token: nil).status == 405)
        #expect(try server.request("GET", "/v1/users/4/feed", token: nil).status == 200)
        #expect(try server.request("GET", "/v1/users/999999/feed", token: nil).status == 404)
        let text = try metricsText(server)
        func value(_ line: String) -> Double? { Self.value(of: line, in: text) }
        #expect(value(#"http_requests_total{route="/healthz",method="GET",status="200"}"#) == 3, "\(text)")
        #expect(value(#"http_requests_total{route="/healthz",method="HEAD",status="200"}"#) == 1)
        #expect(value(#"http_requests_total{route="unmatched",method="GET",status="404"}"#) == 1)
        #expect(value(#"http_requests_total{route="unmatched",method="DELETE",status="405"}"#) == 1)
        #expect(value(#"http_requests_total{route="/v1/users/{id}/feed",method="GET",status="200"}"#) == 1)
        #expect(value(#"http_requests_total{route="/v1/users/{id}/feed",method="GET",status="404"}"#) == 1)
        #expect(value(#"http_request_duration_seconds_count{route="/healthz"}"#) == 4)
        #expect(value(#"http_request_duration_seconds_count{route="/v1/users/{id}/feed"}"#) == 2)
        #expect(value(#"http_request_duration_seconds_count{route="unmatched"}"#) == 2)
    }

    @Test("http_requests_in_flight counts the requests being answered: a waiting long poll is one until its answer")
    func requestsInFlightAreCounted() throws {
        let server = try TestServer()
        defer { server.stop() }
        func inFlight() throws -> Double? { try server.metric("http_requests_in_flight") }
        /// The gauge once it is `value` (the loop counts a request out once its answer is written).
        func inFlight(awaiting value: Double) throws -> Double? { try server.metric("http_requests_in_flight", awaiting: value, within: 2) }
        let since = try server.freshFeed(viewer: 4, query: FeedQuery()).document.snapshot
        // The /metrics request itself is being answered when it is counted.
        let alone = try #require(try inFlight())
        let poll = LongPollTests.Pending { try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=3", token: nil) }
        let waiting = try inFlight(awaiting: alone + 1)
        #expect(waiting == alone + 1, "the waiting long poll")
        #expect(try poll.wait().status == 304)
        let answered = try inFlight(awaiting: alone)
        #expect(answered == alone, "answered, it is no longer in flight")
    }
}

extension TestServer {
    /// The value `/metrics` shows now on the line of `line` (a metric's name with its labels);
    /// nil when it is not shown.
    func metric(_ line: String) throws -> Double? {
        RequestMetricsTests.value(of: line, in: String(decoding: try request("GET", "/metrics", token: nil).body, as: UTF8.self))
    }

    /// Metric `line` once it is `value`, or as it is after `seconds`: for a metric that moves on
    /// another thread after the request that moves it has been answered.
    func metric(_ line: String, awaiting value: Double, within seconds: Double = 5) throws -> Double? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        var seen = try metric(line)
        while seen != value, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
            seen = try metric(line)
        }
        return seen
    }
}
