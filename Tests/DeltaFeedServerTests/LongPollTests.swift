import DeltaFeedClient
import Foundation
import Testing

/// `GET …/feed/delta?since=S&wait=N`: the request waits, off the event loop, until the viewer's
/// feed changes (then the delta, as without `wait`) or the wait ends (304).
@Suite("Long polls")
struct LongPollTests {
    /// A request run on another thread, with how long its answer took.
    final class Pending: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private(set) var response: FeedHTTPResponse?
        private(set) var error: (any Error)?
        private(set) var seconds: Double = 0

        init(_ send: @escaping @Sendable () throws -> FeedHTTPResponse) {
            Thread {
                let start = Date()
                do { self.response = try send() } catch { self.error = error }
                self.seconds = Date().timeIntervalSince(start)
                self.done.signal()
            }.start()
        }

        func wait(upTo seconds: Double = 30) throws -> FeedHTTPResponse {
            guard done.wait(timeout: .now() + seconds) == .success else { throw TestFailure("no answer in \(seconds) s") }
            if let error { throw error }
            return response!
        }
    }

    func snapshot(_ server: TestServer, viewer: Int64) throws -> String {
        try server.freshFeed(viewer: viewer, query: FeedQuery()).document.snapshot
    }

    @Test("A waiting delta request is answered as soon as a write changes the feed, with the delta")
    func answeredWhenTheFeedChanges() throws {
        let server = try TestServer()
        defer { server.stop() }
        let since = try snapshot(server, viewer: 4)
        let poll = Pending { try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=20", token: nil) }
        Thread.sleep(forTimeInterval: 0.5)
        // Viewer 4 follows someone new: their feed changes.
        let follow = try server.request("PUT", "/v1/users/4/follows/9")
        #expect(follow.status == 201)
        let response = try poll.wait()
        #expect(response.status == 200)
        #expect(poll.seconds >= 0.4, "it waited for the write: \(poll.seconds) s")
        #expect(poll.seconds < 10, "it did not wait for the end: \(poll.seconds) s")
        let delta = try FeedDelta(json: try response.json(), format: .batch, since: since)
        #expect(delta.header.snapshot != since)
        // The same answer a delta request without wait gets now.
        let plain = try server.request("GET", "/v1/users/4/feed/delta?since=\(since)", token: nil)
        #expect(plain.status == 200)
        #expect(try FeedDelta(json: try plain.json(), format: .batch, since: since).header.snapshot == delta.header.snapshot)
    }

    @Test("Without a change, a waiting request gets 304 when its wait ends; writes the feed does not show keep it waiting")
    func unchangedUntilTheWaitEnds() throws {
        let server = try TestServer()
        defer { server.stop() }
        let since = try snapshot(server, viewer: 4)
        let poll = Pending { try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=2", token: nil) }
        Thread.sleep(forTimeInterval: 0.3)
        // A new user with no videos and no followers: nothing viewer 4's feed shows.
        #expect(try server.request("POST", "/v1/users", json: ["handle": "newcomer", "display_name": "Newcomer"]).status == 201)
        #expect(try server.request("GET", "/v1/users/4/feed/delta?since=\(since)", token: nil).status == 304, "the feed did not change")
        let response = try poll.wait()
        #expect(response.status == 304)
        #expect(response.headers["etag"] == "\"\(since)\"")
        #expect(poll.seconds >= 1.9 && poll.seconds < 10, "\(poll.seconds) s")
    }

    @Test("Waiting is the server's time: a wait longer than the request timeout ends in 304, not a cut connection")
    func waitOutlastsTheRequestTimeout() throws {
        let server = try TestServer(requestTimeout: .seconds(1))
        defer { server.stop() }
        let since = try snapshot(server, viewer: 4)
        let poll = Pending { try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=3", token: nil) }
        let response = try poll.wait()
        #expect(response.status == 304)
        #expect(response.headers["etag"] == "\"\(since)\"")
        #expect(poll.seconds >= 2.9, "it waited all three seconds, three request timeouts: \(poll.seconds) s")
    }

    @Test("A feed that changed already is answered at once, wait or not")
    func changedAlreadyIsAnsweredAtOnce() throws {
        let server = try TestServer()
        defer { server.stop() }
        let since = try snapshot(server, viewer: 4)
        #expect(try server.request("PUT", "/v1/users/4/follows/9").status == 201)
        let poll = Pending { try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=30", token: nil) }
        #expect(try poll.wait().status == 200)
        #expect(poll.seconds < 5)
    }

    @Test("DeltaFeedClient's refresh(waitingUpTo:) returns when a write changes the feed, with the delta applied")
    func clientLongPolls() throws {
        let server = try TestServer()
        defer { server.stop() }
        for format in FeedDelta.Format.allCases {
            let client = server.client(viewer: 4, format: format)
            let shown = try client.fetch()
            // A like of a video the page shows, by a different user each round: the page changes.
            let items: [FeedDocument.Item] = shown.sections.flatMap { $0.items }
            let video = try #require(items.first { $0.kind == "video" }.flatMap { Int64($0.id.dropFirst("video:".count)) })
            let liker = 10 + FeedDelta.Format.allCases.firstIndex(of: format)!
            let writer = Thread {
                Thread.sleep(forTimeInterval: 0.3)
                _ = try? server.request("PUT", "/v1/videos/\(video)/likes/\(liker)")
            }
            let start = Date()
            writer.start()
            let outcome = try client.refresh(waitingUpTo: 20)
            #expect(Date().timeIntervalSince(start) < 10)
            guard case .applied = outcome else {
                Issue.record("\(format): \(outcome)")
                continue
            }
            // What the client holds is what a fresh fetch returns.
            #expect(client.document == (try server.freshFeed(viewer: 4, query: FeedQuery(limit: 30)).document))
        }
    }

    @Test("/metrics counts write groups, grouped writes and long polls by outcome")
    func metricsCountGroupsAndLongPolls() throws {
        let server = try TestServer()
        defer { server.stop() }
        let since = try snapshot(server, viewer: 4)
        #expect(try server.request("PUT", "/v1/users/4/follows/9").status == 201)
        #expect(try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=5", token: nil).status == 200)
        let current = try snapshot(server, viewer: 4)
        #expect(try server.request("GET", "/v1/users/4/feed/delta?since=\(current)&wait=1", token: nil).status == 304)
        let text = String(decoding: try server.request("GET", "/metrics", token: nil).body, as: UTF8.self)
        func value(_ line: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap { Double($0.dropFirst(line.count + 1)) }
        }
        #expect((value("deltafeed_write_groups_total") ?? 0) >= 1, "\(text)")
        #expect((value("deltafeed_grouped_writes_total") ?? 0) >= 1)
        #expect(value(#"deltafeed_long_polls_answered_total{outcome="unchanged"}"#) == 1)
        #expect(value("deltafeed_long_polls_waiting") == 0)
    }

    @Test("A write is checked against the waiting requests whose page it may touch, not against every waiting request")
    func writesCheckOnlyTheRequestsTheyMayTouch() throws {
        let server = try TestServer()
        defer { server.stop() }
        // Ten viewers wait, each on its first page; likes land on videos of one page only.
        let viewers: [Int64] = Array(1...10)
        let pages = try viewers.map { viewer -> (snapshot: String, videos: Set<Int64>) in
            let document = try server.freshFeed(viewer: viewer, query: FeedQuery()).document
            let videos = document.sections.flatMap(\.items).filter { $0.kind == "video" }.map { Int64($0.id.dropFirst("video:".count))! }
            return (document.snapshot, Set(videos))
        }
        /// The videos of page `index` that no other page shows.
        func onlyOn(_ index: Int) -> Set<Int64> {
            pages.indices.filter { $0 != index }.reduce(into: pages[index].videos) { $0.subtract(pages[$1].videos) }
        }
        let own = try #require(pages.indices.first { onlyOn($0).count >= 4 }, "a page with 4 videos no other page shows")
        let onlyHere = Array(onlyOn(own)).sorted()
        let polls = zip(viewers, pages).map { viewer, page in
            Pending { try server.request("GET", "/v1/users/\(viewer)/feed/delta?since=\(page.snapshot)&wait=6", token: nil) }
        }
        func checks() throws -> Double {
            let text = String(decoding: try server.request("GET", "/metrics", token: nil).body, as: UTF8.self)
            let line = text.split(separator: "\n").first { $0.hasPrefix("deltafeed_long_poll_checks_total ") }
            return line.flatMap { Double($0.dropFirst("deltafeed_long_poll_checks_total ".count)) } ?? 0
        }
        Thread.sleep(forTimeInterval: 0.5)
        let before = try checks()
        for video in onlyHere.prefix(4) {
            #expect(try server.request("PUT", "/v1/videos/\(video)/likes/30").status == 201)
            Thread.sleep(forTimeInterval: 0.1)
        }
        let ownAnswer = try polls[own].wait(upTo: 10)
        #expect(ownAnswer.status == 200, "the page the likes are on changed")
        let after = try checks()
        // Every waiting request after every like would be at least 4 × 9 more.
        #expect(after - before <= 12, "checks for 4 likes on one page of 10 waiting: \(after - before)")
        for (index, poll) in polls.enumerated() where index != own {
            let viewer = viewers[index]
            #expect(try poll.wait(upTo: 10).status == 304, "viewer \(viewer)'s page did not change")
        }
    }

    @Test("wait must be whole seconds from 0 to 60")
    func waitIsChecked() throws {
        let server = try TestServer()
        defer { server.stop() }
        let since = try snapshot(server, viewer: 4)
        for wait in ["61", "-1", "1.5", "x", "", "007"] {
            let response = try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=\(wait)", token: nil)
            #expect(response.status == 400, "wait=\(wait)")
        }
        #expect(try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=0", token: nil).status == 304)
    }

    @Test("Past --long-poll-max waiting requests, one more gets 503 with Retry-After")
    func boundedByCapacity() throws {
        let server = try TestServer(longPollCapacity: 1)
        defer { server.stop() }
        let since = try snapshot(server, viewer: 4)
        let first = Pending { try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=3", token: nil) }
        Thread.sleep(forTimeInterval: 0.5)
        let second = try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=3", token: nil)
        #expect(second.status == 503)
        #expect(second.headers["retry-after"] != nil)
        #expect(try first.wait().status == 304)
    }

    @Test("Shutting down answers waiting requests with 304 at once")
    func shutdownReleasesWaiters() throws {
        let server = try TestServer()
        let since = try snapshot(server, viewer: 4)
        let poll = Pending { try server.request("GET", "/v1/users/4/feed/delta?since=\(since)&wait=60", token: nil) }
        Thread.sleep(forTimeInterval: 0.5)
        let start = Date()
        server.stop()
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(try poll.wait(upTo: 10).status == 304)
        #expect(poll.seconds < 20)
    }
}
