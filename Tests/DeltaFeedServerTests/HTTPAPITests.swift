import DeltaFeedClient
import DeltaFeedServer
import FeedService
import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

/// The HTTP API's behaviour as a client sees it: conditional requests, expired and foreign
/// snapshots, authentication and validation of writes, and `POST /v1/diff`.
@Suite("HTTP API behaviour", .serialized)
struct HTTPAPITests {
    @Test("GET feed with If-None-Match of the current ETag answers 304 with the ETag and no body")
    func feedAnswers304ForMatchingIfNoneMatch() throws {
        let server = try TestServer()
        defer { server.stop() }
        let first = try server.request("GET", "/v1/users/3/feed?limit=10", token: nil)
        #expect(first.status == 200)
        let etag = try #require(first.header("ETag"))
        let snapshot = try FeedDocument(parsing: first.body).snapshot
        #expect(first.header("Content-Encoding") == "gzip")
        #expect(etag == "\"\(snapshot)\"")

        let again = try server.request("GET", "/v1/users/3/feed?limit=10", token: nil, headers: ["If-None-Match": etag])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == etag)

        let other = try server.request("GET", "/v1/users/3/feed?limit=10", token: nil, headers: ["If-None-Match": "\"0123456789abcdef0123456789abcdef\""])
        #expect(other.status == 200)
    }

    @Test("PUT a like counts it once per user, DELETE takes it back; a repeated like is 409, a missing one 404")
    func likesCountOncePerUser() throws {
        let server = try TestServer()
        defer { server.stop() }
        func likeCount(_ response: FeedHTTPResponse) throws -> Int? {
            try (JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["like_count"] as? Int
        }
        let before = try #require(try likeCount(server.request("GET", "/v1/videos/7", token: nil)))
        let liked = try server.request("PUT", "/v1/videos/7/likes/3")
        #expect(liked.status == 201)
        #expect(try likeCount(liked) == before + 1)
        let again = try server.request("PUT", "/v1/videos/7/likes/3")
        #expect(again.status == 409)
        #expect(try likeCount(server.request("GET", "/v1/videos/7", token: nil)) == before + 1)
        let unliked = try server.request("DELETE", "/v1/videos/7/likes/3")
        #expect(unliked.status == 200)
        #expect(try likeCount(unliked) == before)
        #expect(try server.request("DELETE", "/v1/videos/7/likes/3").status == 404)
        #expect(try server.request("PUT", "/v1/videos/99999999/likes/3").status == 404)
        #expect(try server.request("PUT", "/v1/videos/7/likes/3", token: nil).status == 401)
    }

    @Test("A delta since the current snapshot answers 304 in every format, GET and POST")
    func unchangedDeltaAnswers304() throws {
        let server = try TestServer()
        defer { server.stop() }
        for format in FeedDelta.Format.allCases {
            let client = server.client(viewer: 4, format: format)
            let document = try client.fetch()
            let response = try server.request("GET", "/v1/users/4/feed/delta?since=\(document.snapshot)&format=\(format.rawValue)", token: nil)
            #expect(response.status == 304)
            #expect(response.body.isEmpty)
            #expect(response.header("ETag") == "\"\(document.snapshot)\"")
            #expect(try client.refresh() == .unchanged)
            #expect(try client.refreshPosting() == .unchanged)
            #expect(try client.refreshPosting(sending: .document) == .unchanged)
            #expect(client.document == document)
        }
    }

    @Test("A delta since an unknown or expired snapshot answers 410 snapshot_expired; the client refetches and can refresh again")
    func unknownSinceAnswers410() throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try server.request("GET", "/v1/users/5/feed/delta?since=0123456789abcdef0123456789abcdef", token: nil)
        #expect(response.status == 410)
        #expect(try response.json()["error"]?["code"] == "snapshot_expired")

        let malformed = try server.request("GET", "/v1/users/5/feed/delta?since=not-a-snapshot", token: nil)
        #expect(malformed.status == 400)
        #expect(try malformed.json()["error"]?["code"] == "invalid_parameter")

        // The server keeps 16 snapshots per viewer: 16 other pages push the client's out, so
        // its next refresh meets a 410 and it fetches the feed again.
        let client = server.client(viewer: 5, format: .batch)
        let held = try client.fetch()
        for limit in 1...16 {
            _ = try server.freshFeed(viewer: 5, query: FeedQuery(limit: limit))
        }
        let expired = try server.request("GET", "/v1/users/5/feed/delta?since=\(held.snapshot)", token: nil)
        #expect(expired.status == 410)
        #expect(try client.refresh() == .refetched)
        #expect(client.document == held)
        // The page fetched again is the same page, so its snapshot must be usable again: the
        // server has to remember it anew when it serves it after a 410.
        let again = try server.request("GET", "/v1/users/5/feed/delta?since=\(held.snapshot)", token: nil)
        #expect(again.status == 304, "a refetched snapshot must not stay expired: \(String(decoding: again.body, as: UTF8.self))")
        #expect(try client.refresh() == .unchanged)
    }

    @Test("A snapshot issued to one viewer is unknown (410) to another: deltas never leak another viewer's feed")
    func snapshotOfAnotherViewerAnswers410() throws {
        let server = try TestServer()
        defer { server.stop() }
        let theirs = try server.freshFeed(viewer: 6, query: FeedQuery(limit: 30)).document
        _ = try server.freshFeed(viewer: 7, query: FeedQuery(limit: 30))
        for format in FeedDelta.Format.allCases {
            let response = try server.request("GET", "/v1/users/7/feed/delta?since=\(theirs.snapshot)&format=\(format.rawValue)", token: nil)
            #expect(response.status == 410, "format \(format.rawValue)")
            #expect(try response.json()["error"]?["code"] == "snapshot_expired")
        }
        // Still valid for its own viewer.
        let own = try server.request("GET", "/v1/users/6/feed/delta?since=\(theirs.snapshot)", token: nil)
        #expect(own.status == 304)
    }

    @Test("Writes without a token answer 401 with WWW-Authenticate, with a wrong token 403, and change nothing")
    func writesNeedTheAdminToken() throws {
        let server = try TestServer()
        defer { server.stop() }
        let body: JSONValue = ["author_id": 1, "title": "Hello", "thumbnail_url": "https://cdn.example/x.jpg", "duration_seconds": 10]
        let before = try server.store.counts()

        let anonymous = try server.request("POST", "/v1/videos", json: body, token: nil)
        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate") == "Bearer")
        #expect(try anonymous.json()["error"]?["code"] == "unauthorized")

        let wrong = try server.request("POST", "/v1/videos", json: body, token: "not-the-token")
        #expect(wrong.status == 403)
        #expect(try wrong.json()["error"]?["code"] == "forbidden")

        let deleteAnonymously = try server.request("DELETE", "/v1/videos/1", token: nil)
        #expect(deleteAnonymously.status == 401)
        #expect(try server.store.counts() == before)

        let allowed = try server.request("POST", "/v1/videos", json: body)
        #expect(allowed.status == 201)
    }

    @Test(
        "An invalid write answers 422 invalid_field naming the field",
        arguments: [
            ("thumbnail_url", #"{"author_id":1,"title":"Hi","thumbnail_url":"ftp://cdn.example/x.jpg","duration_seconds":10}"#),
            ("title", #"{"author_id":1,"title":"   ","thumbnail_url":"https://cdn.example/x.jpg","duration_seconds":10}"#),
            ("duration_seconds", #"{"author_id":1,"title":"Hi","thumbnail_url":"https://cdn.example/x.jpg","duration_seconds":36001}"#),
            ("author_id", #"{"author_id":999999,"title":"Hi","thumbnail_url":"https://cdn.example/x.jpg","duration_seconds":10}"#),
        ])
    func invalidWriteNamesTheField(field: String, body: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let before = try server.store.counts()
        let response = try server.request("POST", "/v1/videos", raw: body)
        #expect(response.status == 422)
        let error = try response.json()["error"]
        #expect(error?["code"] == "invalid_field")
        guard case .string(let message)? = error?["message"] else {
            Issue.record("no message in \(String(decoding: response.body, as: UTF8.self))")
            return
        }
        #expect(message.hasPrefix(field), "\(message)")
        #expect(try server.store.counts() == before)
    }

    @Test("POST /v1/diff of IGListKit's README example: user 2 renamed Shayne → Ann is an update, not a delete + insert")
    func diffOfRenamedUserIsAnUpdate() throws {
        let server = try TestServer(seed: DemoSeed(users: 2, videos: 0, ads: 0, seed: 1))
        defer { server.stop() }
        let body: JSONValue = [
            "old": [["id": 1, "name": "Ryan"], ["id": 2, "name": "Shayne"]],
            "new": [["id": 1, "name": "Ryan"], ["id": 2, "name": "Ann"]],
            "key": "id",
        ]
        let response = try server.request("POST", "/v1/diff", json: body, token: nil)
        #expect(response.status == 200)
        let diff = try response.json()
        #expect(diff["updates"] == [1])
        #expect(diff["inserts"] == JSONValue.array([]))
        #expect(diff["deletes"] == JSONValue.array([]))
        #expect(diff["moves"] == JSONValue.array([]))
        #expect(diff["change_count"] == 1)
        #expect(diff["batch"]?["reloads"] == [1])
        #expect(diff["batch"]?["deletes"] == JSONValue.array([]))
        #expect(diff["batch"]?["inserts"] == JSONValue.array([]))
        #expect(diff["patch"] == [["op": "replace", "path": "/1", "value": ["id": 2, "name": "Ann"]]])

        // Without a key, elements are identified by their whole value: the rename is a delete + insert.
        let unkeyed = try server.request("POST", "/v1/diff", json: ["old": body["old"]!, "new": body["new"]!], token: nil)
        let unkeyedDiff = try unkeyed.json()
        #expect(unkeyedDiff["updates"] == JSONValue.array([]))
        #expect(unkeyedDiff["deletes"] == [1])
        #expect(unkeyedDiff["inserts"] == [1])
    }

    @Test("POST /v1/diff takes lists of up to 100,000 elements; one more is 413 too_many_elements naming the list")
    func diffOfTooManyElementsIs413() throws {
        let server = try TestServer(seed: DemoSeed(users: 2, videos: 0, ads: 0, seed: 1))
        defer { server.stop() }
        /// `count` zeros: two bytes each, so both lists fit in the body limit at the bound.
        func zeros(_ count: Int) -> String { "[" + Array(repeating: "0", count: count).joined(separator: ",") + "]" }
        let atTheBound = try server.request("POST", "/v1/diff", raw: #"{"old":\#(zeros(100_000)),"new":\#(zeros(100_000))}"#, token: nil)
        #expect(atTheBound.status == 200, "\(String(decoding: atTheBound.body.prefix(300), as: UTF8.self))")
        for (old, new, named) in [(100_001, 0, "old"), (0, 100_001, "new")] {
            let response = try server.request("POST", "/v1/diff", raw: #"{"old":\#(zeros(old)),"new":\#(zeros(new))}"#, token: nil)
            #expect(response.status == 413, "\(named)")
            let error = try response.json()["error"]
            #expect(error?["code"] == "too_many_elements", "\(named)")
            #expect(error?["message"] == .string("\(named): at most 100000 elements."))
        }
    }

    @Test("A write past a full write queue answers 503 overloaded with Retry-After: 1 at once and changes nothing; retried, it is stored")
    func writePastAFullQueueIsOverloaded() throws {
        let server = try TestServer(seed: DemoSeed(users: 5, videos: 10, ads: 1, seed: 3), groupCommit: GroupCommit.Limits(queueCapacity: 1))
        defer { server.stop() }
        #expect(try server.request("GET", "/v1/videos/1", token: nil).status == 200)
        // A write holds the committing thread, and one more waits: the queue of one is full.
        let (started, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        defer { release.signal() }
        let commits = server.server.commits
        #expect(
            commits.submit({ _ throws(FeedStoreError) in
                started.signal()
                release.wait()
            }) { _ in })
        started.wait()
        #expect(commits.submit({ _ throws(FeedStoreError) in }) { _ in })
        #expect(commits.waiting == 1)

        let refused = try server.request("PATCH", "/v1/videos/1", json: ["like_count": 424_242])
        #expect(refused.status == 503)
        #expect(try refused.json()["error"]?["code"] == "overloaded")
        #expect(refused.header("Retry-After") == "1")

        release.signal()
        #expect(try server.store.read { try $0.video(id: 1) }?.likeCount != 424_242, "the refused write changed nothing")
        let retried = try server.request("PATCH", "/v1/videos/1", json: ["like_count": 424_242])
        #expect(retried.status == 200)
        #expect(try server.store.read { try $0.video(id: 1) }?.likeCount == 424_242)
    }

    @Test("A user is the same object at /v1/users as in the feed (header viewer, video author), with the counts beside it")
    func userObjectIsTheSameEverywhere() throws {
        let server = try TestServer(seed: DemoSeed(users: 30, videos: 300, ads: 0, seed: 7))
        defer { server.stop() }
        func isInt(_ value: JSONValue?) -> Bool { if case .int = value { true } else { false } }
        let feed = try FeedDocument(parsing: server.request("GET", "/v1/users/1/feed?limit=50", token: nil).body)
        let viewer = try #require(feed.sections.first?.items.first?.data["viewer"])
        let profile = try server.request("GET", "/v1/users/1", token: nil).json()
        #expect(profile["user"] == viewer)
        #expect(isInt(profile["follower_count"]) && isInt(profile["following_count"]) && isInt(profile["created_at"]))

        let author = try #require(feed.sections.flatMap(\.items).compactMap { $0.data["author"] }.first)
        guard case .int(let authorID) = author["id"] else { Issue.record("author without an id: \(author)"); return }
        #expect(try server.request("GET", "/v1/users/\(authorID)", token: nil).json()["user"] == author)

        let created = try server.request("POST", "/v1/users", json: ["handle": "same_shape", "display_name": "Same Shape"])
        #expect(created.status == 201)
        #expect(try created.json()["user"] == ["id": 31, "handle": "same_shape", "display_name": "Same Shape", "avatar_url": .null])
    }
}
