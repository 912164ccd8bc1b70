import ArgumentParser
import DeltaFeedClient
import Foundation
import Synchronization
import Testing

// @testable: these tests drive the command's option groups and proof helpers, which are internal to
// the executable target (a command's parsing is its own business, not an API).
@testable import deltafeed

/// The pieces of `deltafeed prove` that can be checked without servers: its arguments, its
/// arithmetic, its ledger, and above all that its check catches a delta that does not lead to
/// what a fresh fetch returns (a proof that cannot fail proves nothing). The real check is
/// running it: scripts/cluster-test.
@Suite("deltafeed prove")
struct ProveTests {
    // MARK: Arguments

    @Test("URLs are split at commas, repeated, trimmed, and refused unless http://host[:port] once each")
    func urls() throws {
        let urls = try ProveTargets.parse(["http://127.0.0.1:8080/, http://127.0.0.1:8081", "http://localhost:9000"], option: "--url")
        #expect(urls.map(\.absoluteString) == ["http://127.0.0.1:8080", "http://127.0.0.1:8081", "http://localhost:9000"])
        for bad in [["https://127.0.0.1:8080"], ["127.0.0.1:8080"], ["http://a:1,"], ["http://a:1", "http://a:1/"], ["http://a:1/?x=1"], [""]] {
            #expect(throws: (any Error).self, "\(bad)") { try ProveTargets.parse(bad, option: "--url") }
        }
    }

    @Test("Arguments out of range are refused before anything is sent")
    func validation() throws {
        let refused: [[String]] = [
            ["--viewers", "0"], ["--viewers", "30", "--viewer-ids", "10"], ["--writes-per-round", "0"], ["--rounds", "-1"],
            ["--duration", "0"], ["--threads", "0"], ["--settle-timeout", "0"], ["--lag-p99-ms", "200"],
            ["--lag-samples", "10", "--lag-p99-ms", "-1"], ["--url", "ftp://example.com"], ["--replica", "http://a:1,http://a:1"],
            ["--max-write-errors", "-1"],
        ]
        for arguments in refused {
            #expect(throws: (any Error).self, "\(arguments)") { try Prove.parse(arguments) }
        }
        let prove = try Prove.parse(["--url", "http://127.0.0.1:1,http://127.0.0.1:2", "--lag-samples", "10", "--lag-p99-ms", "200"])
        #expect(prove.urls == ["http://127.0.0.1:1,http://127.0.0.1:2"] && prove.viewers == 20 && prove.lagP99Ms == 200)
    }

    // MARK: Arithmetic

    @Test("The proof fails on a lost write, a mismatch, a form never applied or a missed lag target, and passes otherwise")
    func reportFailures() {
        var counts = ProveCounters.Counts()
        for format in FeedDelta.Format.allCases { counts.applied[format] = 3 }
        func report(
            _ counts: ProveCounters.Counts, lost: Int = 0, lag: [Double]? = nil, target: Double? = nil
        ) -> [String] {
            var verification = WriteVerification(records: 10, uncertain: 0)
            verification.lost = lost
            return ProveReport(
                counts: counts, rounds: 5, seconds: 1, verification: verification,
                lag: lag.map { ConvergenceLag(pairs: "a->b", milliseconds: $0) }, lagTarget: target, maxWriteErrors: 0, replicaCount: 1
            ).failures
        }
        #expect(report(counts) == [])
        #expect(report(counts, lost: 2) == ["2 acknowledged writes not found"])
        var mismatched = counts
        mismatched.mismatches = 1
        #expect(report(mismatched) == ["1 mismatches"])
        var unproven = counts
        unproven.applied[.jsonpatch] = 0
        #expect(report(unproven) == ["no jsonpatch delta applied: nothing proven for that form"])
        let lag = (1...100).map(Double.init)
        #expect(report(counts, lag: lag, target: 99) == [])
        #expect(report(counts, lag: lag, target: 98.5) == ["convergence lag p99 99.0 ms is above the target of 98.5 ms"])
    }

    @Test("Percentiles are nearest-rank: p99 of 1…100 is 99, the maximum is p100")
    func percentiles() {
        let hundred = Percentiles((1...100).reversed().map(Double.init))
        #expect(hundred.value(50) == 50 && hundred.value(95) == 95 && hundred.value(99) == 99 && hundred.value(100) == 100)
        #expect(Percentiles([7]).value(99) == 7)
        #expect(Percentiles([]).value(50) == nil)
        #expect(Percentiles([1, 2, 3]).value(50) == 2)
    }

    // MARK: Ledger

    @Test("The ledger keeps the last acknowledged value per field, forgets fields of unknown outcome, and survives a file")
    func ledger() throws {
        var ledger = WriteLedger()
        let created = ProveWrite(
            kind: "new video", method: "POST", path: "/v1/videos",
            body: ["author_id": 3, "title": "first", "thumbnail_url": "https://x/y.jpg", "duration_seconds": 5, "like_count": 1], record: .none)
        ledger.acknowledged(created, answer: ["id": 42, "title": "first"])
        ledger.acknowledged(ProveWrite(kind: "like", method: "PATCH", path: "/v1/videos/42", body: ["like_count": 9], record: .video(42)), answer: nil)
        #expect(ledger.records["/v1/videos/42"] == ["title": "first", "like_count": 9])
        ledger.unknownOutcome(ProveWrite(kind: "title", method: "PATCH", path: "/v1/videos/42", body: ["title": "lost?"], record: .video(42)))
        #expect(ledger.records["/v1/videos/42"] == ["like_count": 9])
        #expect(ledger.uncertain == 1)
        ledger.acknowledged(
            ProveWrite(kind: "new user", method: "POST", path: "/v1/users", body: ["handle": "h", "display_name": "H"], record: .none), answer: ["id": 7])
        ledger.acknowledged(ProveWrite(kind: "follow", method: "PUT", path: "/v1/users/1/follows/2", body: nil, record: .none), answer: nil)
        #expect(ledger.records.keys.sorted() == ["/v1/users/7", "/v1/videos/42"])

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("prove-ledger-\(UInt32.random(in: 0...UInt32.max)).json").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try WriteLedger(loading: file) == WriteLedger())
        try ledger.save(to: file)
        #expect(try WriteLedger(loading: file) == ledger)
    }

    // MARK: The check

    @Test("A delta that leads to what a fresh fetch returns passes")
    func honestDelta() {
        let server = FakeFeedServer(delta: Self.patch(to: Self.after), fresh: [Self.after])
        let counters = check(server)
        #expect(counters.mismatches == 0 && counters.applied[.jsonpatch] == 1 && counters.messages.isEmpty)
    }

    @Test("A delta whose result differs from a fresh fetch of the same snapshot is a mismatch")
    func lyingDelta() {
        var wrong = Self.after
        wrong.sections[0].items[0].data = ["video": ["id": 1, "title": "not what the server holds"]]
        let server = FakeFeedServer(delta: Self.patch(to: wrong), fresh: [Self.after])
        let counters = check(server)
        #expect(counters.mismatches == 1)
        #expect(counters.messages.first?.contains("differs from a fresh fetch") == true)
    }

    @Test("A fresh fetch from a replica that has not caught up is asked again, not counted")
    func laggingReplica() {
        let server = FakeFeedServer(delta: Self.patch(to: Self.after), fresh: [Self.before, Self.before, Self.after])
        let counters = check(server)
        #expect(counters.mismatches == 0 && counters.settleRetries == 2 && counters.unchanged == 2)
    }

    @Test("Replicas that never agree within the settle timeout are a mismatch")
    func neverAgrees() {
        let server = FakeFeedServer(delta: Self.patch(to: Self.after), fresh: [Self.before])
        let counters = check(server, settleTimeout: 0.2)
        #expect(counters.mismatches == 1)
    }

    @Test("A 503 is retried after its Retry-After and counted, not failed")
    func retried503() {
        let server = FakeFeedServer(delta: Self.patch(to: Self.after), fresh: [Self.after], unavailable: 2)
        let counters = check(server)
        #expect(counters.mismatches == 0 && counters.retried503 == 2 && counters.codes503["storage_unavailable"] == 2 && counters.read5xx == 0)
    }

    private func check(_ server: FakeFeedServer, settleTimeout: Double = 2) -> ProveCounters.Counts {
        let counters = ProveCounters()
        let base = URL(string: "http://replica.test")!
        let transport = ProveTransport(bases: [base], counters: counters, inner: server)
        let client = DeltaFeedClient(baseURL: base, viewer: 1, format: .jsonpatch, transport: transport)
        #expect(throws: Never.self) { try client.fetch() }
        let fresh = DeltaFeedClient(baseURL: base, viewer: 1, transport: transport)
        server.startFreshFetches()
        ProofRun.check(client, fresh: fresh, round: 1, counters: counters, settleTimeout: settleTimeout)
        return counters.snapshot()
    }

    static let before = FeedDocument(
        snapshot: String(repeating: "a", count: 32), viewer: 1,
        sections: [
            .init(
                id: "grid-0", kind: "video_grid", version: "0000000000000001", columns: 2,
                items: [.init(id: "video:1", kind: "video", version: "1", data: ["video": ["id": 1, "title": "old"]])])
        ], nextCursor: nil)

    static let after = FeedDocument(
        snapshot: String(repeating: "b", count: 32), viewer: 1,
        sections: [
            .init(
                id: "grid-0", kind: "video_grid", version: "0000000000000002", columns: 2,
                items: [.init(id: "video:1", kind: "video", version: "2", data: ["video": ["id": 1, "title": "new"]])])
        ], nextCursor: nil)

    /// A JSON Patch delta from ``before`` to `target`, claiming `after`'s snapshot.
    static func patch(to target: FeedDocument) -> FeedDelta {
        .jsonPatch(
            FeedDelta.JSONPatch(
                header: FeedDelta.Header(
                    since: before.snapshot, snapshot: after.snapshot, nextCursor: nil, sectionVersions: [0: target.sections[0].version], changeCount: 1),
                operations: [
                    PatchOperation(op: .replace, path: "/sections/0", value: target.sections[0].json),
                    PatchOperation(op: .replace, path: "/snapshot", value: .string(after.snapshot)),
                ]))
    }
}

/// One viewer's feed as a server (or several, disagreeing) would answer it: the first fetch is
/// ``ProveTests/before``; after ``startFreshFetches()`` fetches answer `fresh` in turn (the last
/// one from then on); a delta since `before` answers `delta`, since anything else 304. The first
/// `unavailable` requests after the start answer 503 storage_unavailable with Retry-After: 0.
final class FakeFeedServer: FeedHTTPTransport {
    private struct State {
        var fresh: [FeedDocument]
        var started = false
        var unavailable: Int
    }

    private let state: Mutex<State>
    private let delta: FeedDelta

    init(delta: FeedDelta, fresh: [FeedDocument], unavailable: Int = 0) {
        self.delta = delta
        state = Mutex(State(fresh: fresh, unavailable: unavailable))
    }

    func startFreshFetches() {
        state.withLock { $0.started = true }
    }

    func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse {
        let path = request.url.path
        let query = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return state.withLock { state in
            if state.started, state.unavailable > 0 {
                state.unavailable -= 1
                return FeedHTTPResponse(
                    status: 503, headers: ["Retry-After": "0"],
                    body: Array(#"{"error":{"code":"storage_unavailable","message":"retry"}}"#.utf8))
            }
            if path.hasSuffix("/feed/delta") {
                let since = query.first { $0.name == "since" }?.value
                return since == ProveTests.before.snapshot
                    ? FeedHTTPResponse(status: 200, body: delta.json.serialized()) : FeedHTTPResponse(status: 304)
            }
            guard state.started else { return FeedHTTPResponse(status: 200, body: ProveTests.before.serialized()) }
            let document = state.fresh.count > 1 ? state.fresh.removeFirst() : state.fresh[0]
            return FeedHTTPResponse(status: 200, body: document.serialized())
        }
    }
}
