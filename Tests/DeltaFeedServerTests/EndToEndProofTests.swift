import DeltaFeedClient
import Deterministic
import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

/// The end-to-end proof: a client that only ever applies the server's deltas holds, after every
/// write, exactly the feed a fresh fetch returns — in all three delta forms, for the remembered
/// (GET) and the stateless (POST) variants, on the first and the second page, with and without a
/// screen width and stacked ads, refreshing after every write or only now and then.
///
/// Replay a failure with `DELTAFEED_PROOF_SEED=<seed>` (the seed is in every failure message);
/// `DELTAFEED_PROOF_STEPS` changes the number of writes.
@Suite("End-to-end proof", .serialized)
struct EndToEndProofTests {
    @Test("After each of 200 random writes, every delta form applied by the client equals a fresh fetch")
    func deltasAppliedByTheClientEqualAFreshFetchAfterEveryRandomWrite() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["DELTAFEED_PROOF_SEED"].flatMap { UInt64($0) } ?? 0x00DE_17AF_EED0_0001
        let steps = environment["DELTAFEED_PROOF_STEPS"].flatMap { Int($0) } ?? 200
        let started = ContinuousClock.now
        let server = try TestServer(stack: .urlSession)
        defer { server.stop() }
        var proof = try Proof(server: server, seed: seed)
        try proof.start()
        for step in 1...steps {
            try proof.step(step)
        }
        let elapsed = ContinuousClock.now - started
        print(
            """
            End-to-end proof, seed \(seed): \(steps) writes, viewer \(proof.viewer); \
            \(proof.appliedDeltas) deltas applied (\(proof.changes) changes), \(proof.unchanged) × 304, \
            \(proof.refetches) × 410 refetch; \(proof.failures) failures\(proof.failuresByClient.isEmpty ? "" : " (" + proof.failuresByClient.sorted(by: { $0.key < $1.key }).map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"); \(elapsed)
            HTTP: \(server.transport.requests) requests, \(server.transport.waiting) waiting for responses: \
            \(server.transport.byKind.sorted(by: { $0.key < $1.key }).map { "\($0.key) \($0.value.count) × \($0.value.time / $0.value.count)" }.joined(separator: ", "))
            Writes: \(proof.writeCounts.sorted(by: { $0.key < $1.key }).map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            """)
        #expect(proof.failures == 0, "seed \(seed): \(proof.failures) failures (see the issues above)")
        #expect(proof.appliedDeltas > steps, "seed \(seed): too few deltas applied to prove anything")
    }
}

/// The state of one run: the server, the clients, what the PRNG picks from.
private struct Proof {
    /// Failures recorded as issues per kind of client (the rest are only counted).
    static let maxReportedFailures = 3

    /// One way of asking for the feed, with the clients that hold it.
    struct Viewpoint {
        let name: String
        let query: FeedQuery
        /// Checked after every `every` writes (1: after each).
        let every: Int
        /// Refreshed with a GET delta at every check.
        var everyStep: [DeltaFeedClient]
        /// Refreshed every `lag` writes, with a GET delta (`posting` false) or a POST.
        var occasional: [(client: DeltaFeedClient, lag: Int, posting: Bool)]
    }

    let server: TestServer
    let seed: UInt64
    var random: SplitMix64
    let viewer: Int64
    var viewpoints: [Viewpoint] = []
    var videos: [Int64] = []
    var ads: [Int64] = []
    var users: [Int64] = []

    var appliedDeltas = 0
    var changes = 0
    var unchanged = 0
    var refetches = 0
    var failures = 0
    var failuresByClient: [String: Int] = [:]
    /// Which kind of client is being checked ("batch GET", "jsonpatch POST"…).
    var currentClient = ""
    var writeCounts: [String: Int] = [:]

    init(server: TestServer, seed: UInt64) throws {
        self.server = server
        self.seed = seed
        random = SplitMix64(seed: seed)
        // A viewer chosen by the seed among those following at least 8 people (a long feed of
        // followed videos before the popular ones), or DELTAFEED_PROOF_VIEWER.
        let candidates = try (1...60).map(Int64.init).filter { viewer in try server.store.read { try $0.followees(of: viewer) }.count >= 8 }
        let chosen = candidates.isEmpty ? 1 : candidates.randomElement(using: &random)!
        viewer = ProcessInfo.processInfo.environment["DELTAFEED_PROOF_VIEWER"].flatMap { Int64($0) } ?? chosen
        videos = Array(1...400)
        ads = Array(1...5)
        users = Array(1...60)
    }

    mutating func start() throws {
        let firstPage = try server.freshFeed(viewer: viewer, query: FeedQuery(limit: 30)).document
        guard let cursor = firstPage.nextCursor else { throw TestFailure("seed \(seed): the first page has no next page") }
        // The first page is checked after every write; the others (each one more page to
        // compose per check) after every fourth, with deltas spanning four writes.
        let queries: [(String, FeedQuery, Int)] = [
            ("page 1", FeedQuery(limit: 30), 1),
            ("page 2", FeedQuery(limit: 30, cursor: cursor), 4),
            ("page 1 at width 390 with stacked ads", FeedQuery(limit: 30, width: 390, stackAds: true), 4),
        ]
        for (index, (name, query, every)) in queries.enumerated() {
            var viewpoint = Viewpoint(name: name, query: query, every: every, everyStep: [], occasional: [])
            for format in FeedDelta.Format.allCases {
                viewpoint.everyStep.append(server.client(viewer: viewer, format: format, query: query))
                if index == 0 {
                    viewpoint.occasional.append((server.client(viewer: viewer, format: format, query: query), 12, true))
                    viewpoint.occasional.append((server.client(viewer: viewer, format: format, query: query), 4, false))
                }
            }
            for client in viewpoint.everyStep + viewpoint.occasional.map(\.client) {
                try client.fetch()
            }
            viewpoints.append(viewpoint)
        }
    }

    mutating func step(_ step: Int) throws {
        let write = try performRandomWrite()
        writeCounts[write.kind, default: 0] += 1
        for viewpoint in viewpoints where step % viewpoint.every == 0 {
            let fresh = try server.freshFeed(viewer: viewer, query: viewpoint.query)
            if fresh.document.json != fresh.json {
                fail("seed \(seed), step \(step), \(viewpoint.name): the feed's JSON has members FeedDocument does not model")
            }
            var checked: [(DeltaFeedClient, String)] = viewpoint.everyStep.map { ($0, "GET") }
            for entry in viewpoint.occasional where step % entry.lag == 0 {
                // Posting clients send the structure, and the whole document every fourth time.
                let posted = step % (4 * entry.lag) == 0 ? "POST document" : "POST"
                checked.append((entry.client, entry.posting ? posted : "GET every \(entry.lag)"))
            }
            for (client, variant) in checked {
                let before = client.document!
                let context = "seed \(seed), step \(step) (\(write.description)), \(viewpoint.name), \(client.format.rawValue) \(variant)"
                currentClient = "\(client.format.rawValue) \(variant)"
                check(client, variant: variant, before: before, fresh: fresh, context: context)
            }
        }
    }

    /// Refreshes `client` and compares its document with the fresh fetch.
    mutating func check(_ client: DeltaFeedClient, variant: String, before: FeedDocument, fresh: (json: JSONValue, document: FeedDocument), context: String) {
        let outcome: DeltaFeedClient.RefreshOutcome
        do {
            switch variant {
            case "POST": outcome = try client.refreshPosting(sending: .structure)
            case "POST document": outcome = try client.refreshPosting(sending: .document)
            default: outcome = try client.refresh()
            }
        } catch {
            var message = "\(context): refresh failed: \(error)"
            if case .apply(_, let delta) = error {
                message += "\nstarting from: \(before.sections.map { "\($0.id)(\($0.items.count))" }.joined(separator: " "))"
                message += "\ndelta: \(String(delta.json.jsonText.prefix(6000)))"
            }
            fail(message)
            _ = try? client.fetch()
            return
        }
        switch outcome {
        case .unchanged:
            unchanged += 1
            if before.snapshot != fresh.document.snapshot {
                fail("\(context): 304 although the feed moved from \(before.snapshot) to \(fresh.document.snapshot)")
            }
        case .applied(let delta):
            appliedDeltas += 1
            changes += delta.header.changeCount
            if before.snapshot == fresh.document.snapshot {
                fail("\(context): a delta (\(delta.header.changeCount) changes) although the feed did not change")
            }
        case .refetched:
            refetches += 1
            fail("\(context): 410 for a snapshot issued a few writes ago (\(before.snapshot))")
        }
        guard let document = client.document else { return }
        if document != fresh.document {
            var message = "\(context): the client's document differs from a fresh fetch: \(document.firstDifference(from: fresh.document))"
            if case .applied(let delta) = outcome {
                message += "\nstarting from: \(before.sections.map { "\($0.id)(\($0.items.count))" }.joined(separator: " "))"
                message += "\ndelta: \(String(delta.json.jsonText.prefix(6000)))"
            }
            fail(message)
            _ = try? client.fetch()
        }
    }

    mutating func fail(_ message: String) {
        failures += 1
        failuresByClient[currentClient, default: 0] += 1
        if failuresByClient[currentClient]! <= Proof.maxReportedFailures {
            Issue.record(Comment(rawValue: message))
        }
    }

    // MARK: - Writes

    struct Write {
        let kind: String
        let description: String
    }

    /// Videos shown on the first page now (most writes aim at what the viewer sees).
    func visibleVideos() -> [Int64] {
        viewpoints.first!.everyStep.first!.document!.sections.flatMap(\.items).compactMap { item in
            item.id.hasPrefix("video:") ? Int64(item.id.dropFirst(6)) : nil
        }
    }

    mutating func pickVideo() -> Int64 {
        let visible = visibleVideos()
        if !visible.isEmpty, Int.random(in: 0..<4, using: &random) > 0 {
            return visible.randomElement(using: &random)!
        }
        return videos.randomElement(using: &random)!
    }

    mutating func title() -> String {
        let words = ["sunset", "skate", "ramen", "tiny", "cat", "drone", "café", "loop", "\"quoted\"", "jump", "🎉", "street", "rain"]
        return (0..<Int.random(in: 1...4, using: &random)).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
    }

    mutating func expectStatus(_ response: FeedHTTPResponse, _ statuses: Set<Int>, _ what: String) throws {
        guard statuses.contains(response.status) else {
            throw TestFailure("seed \(seed): \(what) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    mutating func performRandomWrite() throws -> Write {
        let followees = try server.store.read { try $0.followees(of: viewer) }
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<14:  // a new video by someone the viewer follows: lands at the top of the grid
            let author = followees.randomElement(using: &random) ?? users.randomElement(using: &random)!
            let response = try server.request(
                "POST", "/v1/videos",
                json: [
                    "author_id": .int(author), "title": .string(title()), "thumbnail_url": "https://cdn.example/t.jpg",
                    "duration_seconds": .int(Int64.random(in: 1...600, using: &random)),
                    "like_count": .int(Int64.random(in: 0...5000, using: &random)),
                ])
            try expectStatus(response, [201], "POST /v1/videos")
            guard case .int(let id)? = try response.json()["id"] else { throw TestFailure("seed \(seed): no id in \(response)") }
            videos.append(id)
            return Write(kind: "video by followee", description: "new video \(id) by followed user \(author)")
        case 14..<20:  // a new popular video by someone else
            let others = users.filter { !followees.contains($0) && $0 != viewer }
            let author = others.randomElement(using: &random) ?? users[0]
            let response = try server.request(
                "POST", "/v1/videos",
                json: [
                    "author_id": .int(author), "title": .string(title()), "thumbnail_url": "https://cdn.example/p.jpg",
                    "duration_seconds": 30, "like_count": .int(Int64.random(in: 0...90_000, using: &random)),
                    "view_count": .int(Int64.random(in: 0...9_000_000, using: &random)),
                ])
            try expectStatus(response, [201], "POST /v1/videos")
            guard case .int(let id)? = try response.json()["id"] else { throw TestFailure("seed \(seed): no id in \(response)") }
            videos.append(id)
            return Write(kind: "video by other", description: "new video \(id) by user \(author)")
        case 20..<32:
            let video = pickVideo()
            let newTitle = title()
            try expectStatus(try server.request("PATCH", "/v1/videos/\(video)", json: ["title": .string(newTitle)]), [200], "PATCH title")
            return Write(kind: "title", description: "video \(video) retitled \"\(newTitle)\"")
        case 32..<46:
            let video = pickVideo()
            var body: [String: JSONValue] = ["like_count": .int(Int64.random(in: 0...100_000, using: &random))]
            if Bool.random(using: &random) { body["view_count"] = .int(Int64.random(in: 0...10_000_000, using: &random)) }
            try expectStatus(try server.request("PATCH", "/v1/videos/\(video)", json: .object(body)), [200], "PATCH counts")
            return Write(kind: "counts", description: "video \(video) counts \(JSONValue.object(body).jsonText)")
        case 46..<50:
            let video = pickVideo()
            try expectStatus(
                try server.request(
                    "PATCH", "/v1/videos/\(video)",
                    json: [
                        "duration_seconds": .int(Int64.random(in: 1...36000, using: &random)), "thumbnail_url": "https://cdn.example/new.jpg",
                    ]), [200], "PATCH duration")
            return Write(kind: "duration", description: "video \(video) new duration and thumbnail")
        case 50..<58:
            let video = pickVideo()
            try expectStatus(try server.request("DELETE", "/v1/videos/\(video)"), [204], "DELETE video")
            videos.removeAll { $0 == video }
            return Write(kind: "delete video", description: "video \(video) deleted")
        case 58..<63:
            let response = try server.request(
                "POST", "/v1/ads",
                json: [
                    "advertiser": "Acme", "title": .string(title()), "image_url": "https://ads.example/i.jpg",
                    "target_url": "https://ads.example/go", "weight": .int(Int64.random(in: 1...1000, using: &random)),
                ])
            try expectStatus(response, [201], "POST /v1/ads")
            guard case .int(let id)? = try response.json()["id"] else { throw TestFailure("seed \(seed): no id in \(response)") }
            ads.append(id)
            return Write(kind: "ad created", description: "new ad \(id)")
        case 63..<72:
            guard let ad = ads.randomElement(using: &random) else { return try performRandomWrite() }
            let body: JSONValue =
                switch Int.random(in: 0..<4, using: &random) {
                case 0: ["title": .string(title())]
                case 1: ["weight": .int(Int64.random(in: 1...1000, using: &random))]
                case 2: ["active": false]
                default: ["active": true, "advertiser": "Globex"]
                }
            try expectStatus(try server.request("PATCH", "/v1/ads/\(ad)", json: body), [200], "PATCH ad")
            return Write(kind: "ad changed", description: "ad \(ad) \(body.jsonText)")
        case 72..<75:
            guard ads.count > 1, let ad = ads.randomElement(using: &random) else { return try performRandomWrite() }
            try expectStatus(try server.request("DELETE", "/v1/ads/\(ad)"), [204], "DELETE ad")
            ads.removeAll { $0 == ad }
            return Write(kind: "ad deleted", description: "ad \(ad) deleted")
        case 75..<84:
            let candidates = users.filter { !followees.contains($0) && $0 != viewer }
            guard let followee = candidates.randomElement(using: &random) else { return try performRandomWrite() }
            try expectStatus(try server.request("PUT", "/v1/users/\(viewer)/follows/\(followee)"), [201], "PUT follow")
            return Write(kind: "viewer follows", description: "viewer follows \(followee)")
        case 84..<93:
            guard let followee = followees.randomElement(using: &random) else { return try performRandomWrite() }
            try expectStatus(try server.request("DELETE", "/v1/users/\(viewer)/follows/\(followee)"), [204], "DELETE follow")
            return Write(kind: "viewer unfollows", description: "viewer unfollows \(followee)")
        case 93..<97:  // someone else follows or unfollows: suggestions and their counts move
            let follower = users.filter { $0 != viewer }.randomElement(using: &random)!
            let followee = (followees.isEmpty ? users : followees).filter { $0 != follower }.randomElement(using: &random)!
            if try server.store.read({ try $0.isFollowing(follower: follower, followee: followee) }) {
                try expectStatus(try server.request("DELETE", "/v1/users/\(follower)/follows/\(followee)"), [204], "DELETE follow")
                return Write(kind: "other unfollows", description: "user \(follower) unfollows \(followee)")
            }
            try expectStatus(try server.request("PUT", "/v1/users/\(follower)/follows/\(followee)"), [201], "PUT follow")
            return Write(kind: "other follows", description: "user \(follower) follows \(followee)")
        default:  // a new user (nobody follows them yet: often nothing visible changes, a 304)
            let handle = "user_\(UInt32.random(in: 0...UInt32.max, using: &random))"
            let response = try server.request("POST", "/v1/users", json: ["handle": .string(handle), "display_name": "New Person"])
            try expectStatus(response, [201], "POST /v1/users")
            guard case .int(let id)? = try response.json()["user"]?["id"] else { throw TestFailure("seed \(seed): no id in \(response)") }
            users.append(id)
            return Write(kind: "new user", description: "new user \(id)")
        }
    }
}
