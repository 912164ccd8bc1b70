import DeltaFeedClient
import Deterministic
import Dispatch
import Foundation
import Synchronization
import WritePlanning

/// One viewer: three clients, one per delta form, each following its own snapshot chain.
/// Touched by one thread at a time (the round's checks hand each viewer to one worker).
final class ProvedViewer: @unchecked Sendable {
    let id: Int64
    let clients: [DeltaFeedClient]

    init(id: Int64, clients: [DeltaFeedClient]) {
        self.id = id
        self.clients = clients
    }
}

struct ProofRun {
    let urls: [URL]
    let replicas: [URL]
    let token: String
    let seed: UInt64
    let counters: ProveCounters
    let settleTimeout: Double
    let threads: Int
    /// Reads and writes rotate over the --url list; each client starts at its own place in it.
    let transport: ProveTransport
    var random: SplitMix64
    var viewers: [ProvedViewer] = []
    var ledger = WriteLedger()
    var planner: WritePlanner

    init(urls: [URL], replicas: [URL], token: String, seed: UInt64, counters: ProveCounters, settleTimeout: Double, threads: Int) {
        self.urls = urls
        self.replicas = replicas
        self.token = token
        self.seed = seed
        self.counters = counters
        self.settleTimeout = settleTimeout
        self.threads = threads
        transport = ProveTransport(bases: urls, counters: counters)
        random = SplitMix64(seed: seed)
        planner = WritePlanner(seed: seed ^ 0x5EED_0F_17E5, mix: .prove)
    }

    /// A client of `viewer` at `base` (or rotating over the --url list).
    func client(viewer: Int64, format: FeedDelta.Format = .batch, probing base: URL? = nil, offset: Int = 0) -> DeltaFeedClient {
        Self.client(
            viewer: viewer, format: format, bases: base.map { [$0] } ?? urls, offset: offset, counters: counters, token: token,
            role: base == nil ? .client : .probe)
    }

    static func client(
        viewer: Int64, format: FeedDelta.Format, bases: [URL], offset: Int, counters: ProveCounters, token: String,
        role: ProveTransport.Role = .client
    ) -> DeltaFeedClient {
        let transport = ProveTransport(bases: bases, counters: counters, offset: offset, role: role)
        return DeltaFeedClient(
            baseURL: bases[0], viewer: viewer, format: format, query: query(for: viewer), transport: transport, bearerToken: token)
    }

    /// How each viewer's clients (and the probes checking them) ask for the feed: every page laid
    /// out for a screen width, so frames, headers and footers are proven with the rest; odd
    /// viewers with a capability set that leaves ads and the header out (and names a kind from a
    /// newer app, which the server ignores) and a short viewport.
    static func query(for viewer: Int64) -> FeedQuery {
        viewer % 2 == 0
            ? FeedQuery(width: 390)
            : FeedQuery(width: 360, kinds: ["video", "user", "section_title", "see_all", "reel"], viewport: 640)
    }

    mutating func start(viewers count: Int, idsUpTo upper: Int64) throws {
        var ids: [Int64] = []
        while ids.count < count {
            let id = Int64(random.next(below: UInt64(upper))) + 1
            if !ids.contains(id) { ids.append(id) }
        }
        for (index, id) in ids.sorted().enumerated() {
            let clients = FeedDelta.Format.allCases.enumerated().map { position, format in
                client(viewer: id, format: format, offset: 3 * index + position)
            }
            for client in clients {
                do {
                    try client.fetch()
                } catch {
                    throw CommandFailure("cannot fetch viewer \(id)'s feed through \(urls[0].absoluteString): \(error)")
                }
            }
            viewers.append(ProvedViewer(id: id, clients: clients))
        }
    }

    /// Writes, waits for the replicas to agree, then checks every client.
    mutating func round(_ round: Int, writes: Int) throws {
        var lastViewer: Int64?
        for _ in 0..<writes {
            let viewer = viewers[Int(random.next(below: UInt64(viewers.count)))]
            guard let document = viewer.clients[0].document, let planned = planner.next(WriteOptions(viewer: viewer.id, feed: document)),
                let write = ProveWrite(planned)
            else { continue }
            try perform(write)
            lastViewer = viewer.id
        }
        if let lastViewer { waitForReplicasToAgree(viewer: lastViewer) }
        let (viewers, counters, settleTimeout, urls, token) = (self.viewers, self.counters, self.settleTimeout, self.urls, self.token)
        ProofRun.forEach(viewers.count, threads: threads) { index in
            let viewer = viewers[index]
            for (position, client) in viewer.clients.enumerated() {
                // The fresh fetch starts elsewhere in the rotation than the client's delta.
                let fresh = ProofRun.client(
                    viewer: viewer.id, format: .batch, bases: urls, offset: round + index + position + 1, counters: counters, token: token)
                ProofRun.check(client, fresh: fresh, round: round, counters: counters, settleTimeout: settleTimeout)
            }
        }
    }

    /// Runs `body` for every index below `count`, on at most `threads` threads, each taking the
    /// next index when it is done with one (the checks of a round take uneven times).
    static func forEach(_ count: Int, threads: Int, _ body: @Sendable (Int) -> Void) {
        let claimed = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: min(threads, count)) { _ in
            while true {
                let index = claimed.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < count else { return }
                body(index)
            }
        }
    }

    /// Refreshes `client` and compares its document with a fresh fetch; while the two answers
    /// come from servers at different change-log positions (different snapshot ids), refreshes
    /// again until `settleTimeout`.
    static func check(_ client: DeltaFeedClient, fresh: DeltaFeedClient, round: Int, counters: ProveCounters, settleTimeout: Double) {
        let deadline = ContinuousClock.now + .seconds(settleTimeout)
        let context = "round \(round), viewer \(client.viewer), \(client.format.rawValue)"
        var attempts = 0
        while true {
            attempts += 1
            let before = client.document?.snapshot ?? "-"
            do {
                switch try client.refresh() {
                case .unchanged: counters.update { $0.unchanged += 1 }
                case .applied: counters.update { $0.applied[client.format, default: 0] += 1 }
                case .refetched: counters.update { $0.refetched += 1 }
                }
            } catch {
                if case .apply(let reason, let delta) = error {
                    counters.fail(
                        "\(context): the delta from \(before) to \(delta.header.snapshot) does not apply: \(reason); delta: \(String(delta.json.jsonText.prefix(2000)))"
                    )
                } else {
                    counters.fail("\(context): refresh failed: \(error)", as: ProofRun.problem(error))
                }
                _ = try? client.fetch()
                return
            }
            let truth: FeedDocument
            do {
                truth = try fresh.fetch()
            } catch {
                counters.fail("\(context): fresh fetch failed: \(error)", as: ProofRun.problem(error))
                return
            }
            guard let held = client.document else { return }
            if held.snapshot == truth.snapshot {
                if held != truth {
                    counters.fail("\(context): the applied document differs from a fresh fetch: \(ProofRun.firstDifference(held, truth))")
                    _ = try? client.fetch()
                }
                return
            }
            // Two servers at different positions (one has not caught up yet): ask again.
            if ContinuousClock.now >= deadline {
                counters.fail(
                    "\(context): after \(attempts) refreshes in \(settleTimeout) s the client holds \(held.snapshot) and a fresh fetch answers \(truth.snapshot)"
                )
                _ = try? client.fetch()
                return
            }
            counters.update { $0.settleRetries += 1 }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// What a client's error counts as: 5xx and requests without an answer are counted by the
    /// transport already.
    static func problem(_ error: DeltaFeedClientError) -> ProveCounters.Problem {
        switch error {
        case .transport: .counted
        case .unexpectedStatus(let status, _, _) where status >= 500: .counted
        case .apply: .mismatch
        default: .error
        }
    }

    /// Where two documents with the same snapshot id first differ.
    static func firstDifference(_ held: FeedDocument, _ truth: FeedDocument) -> String {
        if held.viewer != truth.viewer { return "viewer \(held.viewer) vs \(truth.viewer)" }
        if held.nextCursor != truth.nextCursor { return "next_cursor \(held.nextCursor ?? "null") vs \(truth.nextCursor ?? "null")" }
        let ids = (held.sections.map(\.id), truth.sections.map(\.id))
        if ids.0 != ids.1 { return "sections [\(ids.0.joined(separator: ","))] vs [\(ids.1.joined(separator: ","))]" }
        for (mine, theirs) in zip(held.sections, truth.sections) where mine != theirs {
            if mine.items.map(\.id) != theirs.items.map(\.id) {
                return "section \(mine.id) items [\(mine.items.map(\.id).joined(separator: ","))] vs [\(theirs.items.map(\.id).joined(separator: ","))]"
            }
            if let pair = zip(mine.items, theirs.items).first(where: { $0 != $1 }) {
                return "section \(mine.id) item \(pair.0.id): \(pair.0.json.jsonText) vs \(pair.1.json.jsonText)"
            }
            return "section \(mine.id): kind/columns/version \(mine.kind)/\(mine.columns)/\(mine.version) vs \(theirs.kind)/\(theirs.columns)/\(theirs.version)"
        }
        return "no difference found"
    }

    /// Waits until every reachable replica composes `viewer`'s feed with the same snapshot id
    /// (the writes of the round have reached all of them), for at most `settleTimeout`.
    func waitForReplicasToAgree(viewer: Int64) {
        guard replicas.count > 1 else { return }
        let deadline = ContinuousClock.now + .seconds(settleTimeout)
        while ContinuousClock.now < deadline {
            var snapshots: Set<String> = []
            for replica in replicas {
                if let document = try? client(viewer: viewer, probing: replica).fetch() { snapshots.insert(document.snapshot) }
            }
            if snapshots.count <= 1 { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}
