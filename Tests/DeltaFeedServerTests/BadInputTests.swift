import DeltaFeedServer
import EventHTTP
import FeedService
import FeedStore
import Foundation
import HTTPTestSupport
import Logging
import SQLiteStore
import StoreOracle
import Testing

/// A seeded store behind a running server, for tests that speak raw HTTP to it.
struct BadInputFixture {
    let store: SQLiteFeedStore
    let server: DeltaFeedServer
    static let token = "bad-input-token"

    init(retention: StorageOptions.SnapshotRetention = .init()) throws {
        store = try SQLiteFeedStore.temporary(options: StorageOptions(snapshotRetention: retention))
        _ = try store.seed(DemoSeed(users: 30, videos: 200, ads: 3, seed: 11))
        var http = HTTPServerConfiguration()
        http.port = 0
        http.threads = 2
        http.maxBodySize = 64 << 10
        http.logger.logLevel = .critical
        server = try DeltaFeedServer.start(
            configuration: DeltaFeedServerConfiguration(
                service: FeedService(store: store), adminToken: BadInputFixture.token, http: http))
    }

    func client() throws -> RawHTTPClient { try RawHTTPClient(port: server.http.port) }

    func write(_ method: String, _ path: String, _ body: String, token: String? = BadInputFixture.token) throws -> RawHTTPClient.Response {
        var headers = [("Content-Type", "application/json")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return try client().request(method, path, headers: headers, body: Array(body.utf8))
    }

    func snapshot(viewer: Int) throws -> String {
        let feed = try client().request("GET", "/v1/users/\(viewer)/feed")
        let etag = try #require(feed.header("ETag"))
        return String(etag.dropFirst().dropLast())
    }
}

/// Asserts the status and the machine code of an error response.
func expectError(_ response: RawHTTPClient.Response, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(response.status == status, "body: \(response.bodyText)", sourceLocation: sourceLocation)
    #expect(response.bodyText.hasPrefix(#"{"error":{"code":"\#(code)""#), "body: \(response.bodyText)", sourceLocation: sourceLocation)
}

@Suite("Bad input gets an exact status and error code", .serialized)
struct BadInputTests {
    let fixture: BadInputFixture
    let video = #"{"author_id":1,"title":"ok","thumbnail_url":"https://x.example/t.jpg","duration_seconds":10}"#

    init() throws { fixture = try BadInputFixture() }

    @Test("Malformed JSON is 400") func malformedJSONIs400() throws {
        expectError(try fixture.write("POST", "/v1/videos", #"{"author_id":1,"title":"#), 400, "invalid_json")
    }

    @Test("Empty body is 400") func emptyBodyIs400() throws {
        expectError(try fixture.write("POST", "/v1/videos", ""), 400, "invalid_json")
    }

    @Test("Invalid UTF-8 is 400") func invalidUTF8Is400() throws {
        var body = Array(#"{"author_id":1,"title":""#.utf8)
        body += [0xC3, 0x28, 0xFF]
        body += Array(#"","thumbnail_url":"https://x.example/t.jpg","duration_seconds":10}"#.utf8)
        let response = try fixture.client().request(
            "POST", "/v1/videos", headers: [("Authorization", "Bearer \(BadInputFixture.token)")], body: body)
        expectError(response, 400, "invalid_json")
    }

    @Test("Wrong JSON type is 422 naming the field") func wrongJSONTypeIs422NamingTheField() throws {
        let response = try fixture.write("POST", "/v1/videos", #"{"author_id":1,"title":5,"thumbnail_url":"https://x.example/t.jpg","duration_seconds":10}"#)
        expectError(response, 422, "invalid_field")
        #expect(response.bodyText.contains("title: must be a string, not number"))
        let boolAsNumber = try fixture.write(
            "POST", "/v1/videos", #"{"author_id":true,"title":"t","thumbnail_url":"https://x.example/t.jpg","duration_seconds":10}"#)
        expectError(boolAsNumber, 422, "invalid_field")
    }

    @Test("A posted feed document names its snapshot: as handed out it is 304, named otherwise (an earlier release's) every section's version comes back")
    func postedDocumentsSnapshotIsRead() throws {
        let page = try fixture.client().request("GET", "/v1/users/1/feed")
        #expect(page.status == 200)
        #expect(try fixture.write("POST", "/v1/users/1/feed/delta", page.bodyText, token: nil).status == 304)
        var document = try #require(try JSONSerialization.jsonObject(with: Data(page.body)) as? [String: Any])
        let sections = try #require(document["sections"] as? [Any])
        document["snapshot"] = String(repeating: "0123456789abcdef", count: 2)
        let body = String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self)
        let delta = try fixture.write("POST", "/v1/users/1/feed/delta?format=batch", body, token: nil)
        #expect(delta.status == 200, "\(delta.bodyText)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(delta.body)) as? [String: Any])
        #expect((answer["section_versions"] as? [String: String])?.count == sections.count, "\(delta.bodyText)")
        #expect(answer["change_count"] as? Int == 0)
    }

    @Test("A posted document whose item version was not handed out (not 16 lowercase hex digits) is 422 naming the item")
    func postedDocumentWithAMalformedVersionIs422() throws {
        for version in ["v1", "0123456789ABCDEF", "0123456789abcdef0", ""] {
            let body = #"{"sections":[{"id":"header","kind":"header","items":[{"id":"header","version":"\#(version)"}]}]}"#
            let response = try fixture.write("POST", "/v1/users/1/feed/delta", body, token: nil)
            expectError(response, 422, "invalid_snapshot")
            #expect(response.bodyText.contains("sections[0].items[0]"), "\(version): \(response.bodyText)")
        }
        let valid = #"{"sections":[{"id":"header","kind":"header","items":[{"id":"header","version":"0123456789abcdef"}]}]}"#
        #expect(try fixture.write("POST", "/v1/users/1/feed/delta", valid, token: nil).status == 200)
    }

    @Test("Unknown field is 422") func unknownFieldIs422() throws {
        let response = try fixture.write("PATCH", "/v1/videos/1", #"{"titel":"typo"}"#)
        expectError(response, 422, "unknown_field")
        #expect(response.bodyText.contains("titel"))
    }

    @Test("Validation failure names the field and changes nothing") func validationFailureNamesTheFieldAndChangesNothing() throws {
        let before = fixture.store.changeVersion
        let response = try fixture.write("POST", "/v1/videos", #"{"author_id":1,"title":"","thumbnail_url":"https://x.example/t.jpg","duration_seconds":10}"#)
        expectError(response, 422, "invalid_field")
        #expect(response.bodyText.contains("title:"))
        #expect(fixture.store.changeVersion == before)
    }

    @Test("Body over the limit is 413") func bodyOverTheLimitIs413() throws {
        let padding = String(repeating: "a", count: 70 << 10)
        let response = try fixture.write("POST", "/v1/videos", #"{"title":"\#(padding)"}"#)
        #expect(response.status == 413)
    }

    @Test("Hundred kilobyte query string is refused") func hundredKilobyteQueryStringIsRefused() throws {
        let query = String(repeating: "x", count: 100 << 10)
        let response = try? fixture.client().request("GET", "/v1/users/1/feed?limit=5&junk=\(query)")
        // libevent refuses a request line past the header limit before routing (400 or a close).
        #expect(response == nil || response!.status == 400 || response!.status == 431 || response!.status == 414)
        // And the server is still fine.
        #expect(try fixture.client().request("GET", "/healthz").status == 200)
    }

    @Test("Path traversal and malformed ids are 400", arguments: ["..", "..%2F..%2Fetc%2Fpasswd", "-1", "0", "1e3", "99999999999999999999", "%00", "1;DROP"])
    func pathTraversalAndMalformedIdsAre400(id: String) throws {
        expectError(try fixture.client().request("GET", "/v1/users/\(id)/feed"), 400, "invalid_id")
    }

    @Test("Out of range limit is 400", arguments: ["-1", "0", "201", "99999999999999999999999", "ten"])
    func outOfRangeLimitIs400(limit: String) throws {
        expectError(try fixture.client().request("GET", "/v1/users/1/feed?limit=\(limit)"), 400, "invalid_parameter")
    }

    @Test(
        "A kinds list that names nothing, or a viewport out of range, is 400 on the feed, delta and live routes",
        arguments: ["kinds=", "kinds=,", "kinds=,,,", "viewport=99", "viewport=4001", "viewport=tall"])
    func badCapabilitiesAre400(query: String) throws {
        let since = try fixture.snapshot(viewer: 1)
        for target in ["/v1/users/1/feed?\(query)", "/v1/users/1/feed/delta?since=\(since)&\(query)", "/v1/users/1/feed/live?\(query)"] {
            let response = try fixture.client().request("GET", target)
            expectError(response, 400, "invalid_parameter")
            #expect(response.bodyText.contains(query.hasPrefix("kinds") ? "kinds" : "viewport"), "\(target): \(response.bodyText)")
        }
    }

    @Test("A kind this server does not know is ignored: the page is the one of the kinds it knows")
    func unknownKindsAreIgnored() throws {
        let known = try fixture.client().request("GET", "/v1/users/1/feed?kinds=video,user")
        let newer = try fixture.client().request("GET", "/v1/users/1/feed?kinds=video,reel,user,story")
        #expect(known.status == 200 && newer.status == 200)
        #expect(known.header("ETag") == newer.header("ETag"))
        let everything = try fixture.client().request("GET", "/v1/users/1/feed")
        #expect(everything.header("ETag") != known.header("ETag"), "a capability set has snapshots of its own")
    }

    @Test("Malformed snapshot id is 400", arguments: ["abc", "0123456789abcdef", String(repeating: "a", count: 33), String(repeating: "A", count: 32)])
    func malformedSnapshotIdIs400(since: String) throws {
        expectError(try fixture.client().request("GET", "/v1/users/1/feed/delta?since=\(since)"), 400, "invalid_parameter")
    }

    @Test("Unknown format is 400") func unknownFormatIs400() throws {
        let since = try fixture.snapshot(viewer: 1)
        expectError(try fixture.client().request("GET", "/v1/users/1/feed/delta?since=\(since)&format=xml"), 400, "invalid_parameter")
    }

    @Test("Snapshot of another viewer is 410 and leaks nothing") func snapshotOfAnotherViewerIs410AndLeaksNothing() throws {
        let since = try fixture.snapshot(viewer: 2)
        let response = try fixture.client().request("GET", "/v1/users/3/feed/delta?since=\(since)")
        expectError(response, 410, "snapshot_expired")
        #expect(!response.bodyText.contains("video:"))
    }

    @Test("Write routes refuse missing and wrong tokens") func writeRoutesRefuseMissingAndWrongTokens() throws {
        let routes: [(String, String, String)] = [
            ("POST", "/v1/users", #"{"handle":"x","display_name":"X"}"#),
            ("PUT", "/v1/users/1/follows/2", ""), ("DELETE", "/v1/users/1/follows/2", ""),
            ("POST", "/v1/videos", video), ("PATCH", "/v1/videos/1", #"{"title":"t"}"#), ("DELETE", "/v1/videos/1", ""),
            ("POST", "/v1/ads", #"{"advertiser":"a","title":"t","image_url":"https://x.example/i.jpg","target_url":"https://x.example"}"#),
            ("PATCH", "/v1/ads/1", #"{"title":"t"}"#), ("DELETE", "/v1/ads/1", ""),
        ]
        let before = fixture.store.changeVersion
        for (method, path, body) in routes {
            expectError(try fixture.write(method, path, body, token: nil), 401, "unauthorized")
            expectError(try fixture.write(method, path, body, token: "wrong"), 403, "forbidden")
            expectError(try fixture.write(method, path, body, token: BadInputFixture.token + "x"), 403, "forbidden")
        }
        #expect(fixture.store.changeVersion == before, "no refused write changed anything")
    }

    @Test("Untrusted body parsers survive the fuzz corpus") func untrustedBodyParsersSurviveTheFuzzCorpus() throws {
        // Every input in Tests/FuzzCorpus (seeds, and any crash scripts/fuzz finds) plus a few
        // hostile shapes must be answered or refused with an HTTPError, never crash.
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("FuzzCorpus")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        #expect(files.count >= 4)
        var inputs = try files.map { [UInt8](try Data(contentsOf: $0)) }
        let hostile: [String] = [
            #"{"old":[1,2,3],"new":[3,2,1]}"#, #"{"old":[{"id":1}],"new":[{"id":1}],"key":["id","id"]}"#,
            #"{"old":[{"a":1}],"new":[2],"key":"a"}"#, #"{"sections":[{"id":"s","kind":"k","items":[{"id":1}]}]}"#,
            #"[]"#, #"{"old":[[[[[[[]]]]]]],"new":[]}"#, "\u{0}\u{FF}",
        ]
        inputs += hostile.map { Array($0.utf8) }
        for input in inputs {
            _ = try? UntrustedBodies.diff(input)
            _ = try? UntrustedBodies.postedSnapshot(input)
        }
    }
}

@Suite("Snapshot expiry")
struct SnapshotExpiryTests {
    @Test("Pruned snapshot is 410") func prunedSnapshotIs410() throws {
        let fixture = try BadInputFixture(retention: .init(maxPerViewer: 1))
        let first = try fixture.snapshot(viewer: 1)
        // A new video by someone viewer 1 follows makes the next feed a new snapshot, and keeping
        // one snapshot per viewer prunes the first.
        let followee = try #require(try fixture.store.read { try $0.followees(of: 1) }.first)
        _ = try fixture.write(
            "POST", "/v1/videos", #"{"author_id":\#(followee),"title":"new","thumbnail_url":"https://x.example/t.jpg","duration_seconds":10}"#)
        let second = try fixture.snapshot(viewer: 1)
        #expect(first != second)
        expectError(try fixture.client().request("GET", "/v1/users/1/feed/delta?since=\(first)"), 410, "snapshot_expired")
        #expect(try fixture.client().request("GET", "/v1/users/1/feed/delta?since=\(second)").status == 304)
    }
}
