import DeltaFeedClient
import Deterministic
import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing
import WritePlanning

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
    var planner: WritePlanner
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
        planner = WritePlanner(seed: seed, mix: .endToEnd)
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
            // A capability set (with a kind from a newer app the server ignores), frames, the
            // carousel's header and footer, and a prefetch hint for a short viewport.
            (
                "page 1 at width 320 rendering videos, users and the carousel's views",
                FeedQuery(limit: 12, width: 320, kinds: ["video", "user", "section_title", "see_all", "reel"], viewport: 600), 2
            ),
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

    mutating func expectStatus(_ response: FeedHTTPResponse, _ statuses: Set<Int>, _ what: String) throws {
        guard statuses.contains(response.status) else {
            throw TestFailure("seed \(seed): \(what) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    mutating func performRandomWrite() throws -> Write {
        let followees = try server.store.read { try $0.followees(of: viewer) }
        let others = users.filter { !followees.contains($0) && $0 != viewer }
        var options = WriteOptions()
        options.follower = viewer
        options.videos = videos
        options.preferredVideos = visibleVideos()
        options.authors = followees.isEmpty ? users : followees
        options.otherAuthors = others
        options.followable = others
        options.followees = followees
        options.users = users
        options.ads = ads
        guard var planned = planner.next(options) else { throw TestFailure("seed \(seed): nothing to write") }
        if case .toggleFollow(let follower, let followee) = planned {
            // Someone's follow flips: suggestions and their counts move.
            let following = try server.store.read { try $0.isFollowing(follower: follower, followee: followee) }
            planned = following ? .unfollow(follower: follower, followee: followee) : .follow(follower: follower, followee: followee)
        }
        guard let request = planned.request else { throw TestFailure("seed \(seed): \(planned) has no route") }
        let response = try server.request(request.method, request.path, json: request.body)
        let expected = ["POST": 201, "PUT": 201, "DELETE": 204, "PATCH": 200][request.method]!
        let what = "\(request.method) \(request.path) \(request.body?.jsonText ?? "")"
        try expectStatus(response, [expected], what)
        switch planned {
        case .createVideo:
            guard case .int(let id)? = try response.json()["id"] else { throw TestFailure("seed \(seed): no id in \(response)") }
            videos.append(id)
        case .deleteVideo(let video):
            videos.removeAll { $0 == video }
        case .createAd:
            guard case .int(let id)? = try response.json()["id"] else { throw TestFailure("seed \(seed): no id in \(response)") }
            ads.append(id)
        case .deleteAd(let ad):
            ads.removeAll { $0 == ad }
        case .createUser:
            guard case .int(let id)? = try response.json()["user"]?["id"] else { throw TestFailure("seed \(seed): no id in \(response)") }
            users.append(id)
        default:
            break
        }
        return Write(kind: String(describing: planned).prefix { $0 != "(" }.description, description: what)
    }
}
