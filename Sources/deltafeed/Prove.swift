import ArgumentParser
import DeltaFeedClient
import Deterministic
import Dispatch
import Foundation
import Synchronization

/// `deltafeed prove`: the end-to-end proof over HTTP, against one server, a load balancer, or
/// several replicas at once. Viewers hold their own snapshots and poll in every delta form, a
/// writer lands random writes spread over the URLs, and after each round every document the
/// reference client built from deltas must equal a fresh fetch. Optionally measures how long a
/// write acknowledged by one replica takes to show in another's feeds (the convergence lag).
struct Prove: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Prove over HTTP that every delta form, applied by the reference client, equals a fresh fetch, under random writes.",
        discussion: """
            Each round lands --writes-per-round random writes (likes, titles, new videos, \
            follows, unfollows, ad edits, new users) through the write API, spread over the \
            --url list in turn; waits until the --replica servers agree; then every viewer's \
            three clients (batch, sequential, jsonpatch, each with its own snapshot) refresh \
            with a delta and must hold exactly what a fresh fetch returns. Requests rotate over \
            the --url list, so a snapshot handed out by one server is polled on another. A \
            503 is retried after its Retry-After (counted); a client whose replica has not \
            caught up yet refreshes again until --settle-timeout. At the end every \
            acknowledged write (video titles and like counts, new users) is read back from \
            every replica, and --lag-samples measures the convergence lag: a write through \
            one replica, then the next replica's feed polled until it shows it. Prints what it \
            counted; exits 1 on a mismatch, a 5xx not retried, a read without an answer, a \
            lost write, or a missed --lag-p99-ms target.
            """
    )

    @Option(
        name: .customLong("url"),
        help: Setting<String>.serverURL.help("Base URL to prove through; repeat it or separate with commas"))
    var urls: [String] = []

    @Option(
        name: .customLong("replica"),
        help: "A replica's own base URL, behind the --url balancer; repeat or separate with commas (default: the --url list).")
    var replicas: [String] = []

    @OptionGroup var access: WriteAccess

    @Option(help: "Viewers, each with three clients (one per delta form) holding their own snapshots.")
    var viewers: Int = 20

    @Option(help: "Viewers are drawn from user ids 1…this (they must exist).")
    var viewerIds: Int64 = 200

    @Option(help: "Rounds of writes and checks (default 30, or until --duration when that is given).")
    var rounds: Int?

    @Option(help: "Stop starting rounds after this many seconds.")
    var duration: Double?

    @Option(help: "Writes in each round.")
    var writesPerRound: Int = 5

    @Option(
        help:
            "Seconds from the start of one round to the next at least: give servers that persist snapshots in batches time to share them (0: no pause)."
    )
    var roundInterval: Double = 1.0

    @Option(help: "Seconds a client keeps refreshing while the servers it reaches disagree, before it counts a mismatch.")
    var settleTimeout: Double = 5

    @Option(help: "Threads the viewers' checks run on.")
    var threads: Int = 4

    @Option(help: "Convergence-lag samples after the rounds (0: none).")
    var lagSamples: Int = 0

    @Option(help: "Fail when the convergence lag's p99 is above this many milliseconds.")
    var lagP99Ms: Double?

    @Option(help: "Writes answered 5xx (not retried) or not answered that are tolerated, e.g. when a replica is killed mid-write.")
    var maxWriteErrors: Int = 0

    @Option(
        help:
            "A file of acknowledged writes to continue and update (created if missing), so runs one after another are checked together; with --rounds 0 a run only reads them back."
    )
    var ledger: String?

    @Option(help: "Seed of the random choices (default: a new one each run, printed).")
    var seed: UInt64?

    func validate() throws {
        try check("--viewers", viewers, in: 1...1000)
        guard viewerIds >= Int64(viewers) else { throw ValidationError("--viewer-ids (\(viewerIds)) must be at least --viewers (\(viewers)).") }
        if let rounds, rounds < 0 { throw ValidationError("--rounds must not be negative.") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds.") }
        try check("--writes-per-round", writesPerRound, in: 1...100)
        guard roundInterval >= 0, roundInterval <= 60 else { throw ValidationError("--round-interval must be 0…60 seconds.") }
        guard settleTimeout > 0, settleTimeout <= 120 else { throw ValidationError("--settle-timeout must be more than 0 and at most 120 seconds.") }
        try check("--threads", threads, in: 1...64)
        try check("--lag-samples", lagSamples, in: 0...100_000)
        if let lagP99Ms, !(lagP99Ms > 0) { throw ValidationError("--lag-p99-ms must be positive.") }
        if lagP99Ms != nil, lagSamples == 0 { throw ValidationError("--lag-p99-ms needs --lag-samples.") }
        guard maxWriteErrors >= 0 else { throw ValidationError("--max-write-errors must not be negative.") }
        if !urls.isEmpty { _ = try ProveTargets.parse(urls, option: "--url") }
        if !replicas.isEmpty { _ = try ProveTargets.parse(replicas, option: "--replica") }
    }

    func run() throws {
        let fallback = try Setting<String>.serverURL.value
        let urls = try ProveTargets.parse(self.urls.isEmpty ? [fallback] : self.urls, option: "--url")
        let replicas = self.replicas.isEmpty ? urls : try ProveTargets.parse(self.replicas, option: "--replica")
        let token = try access.token()
        let seed = self.seed ?? UInt64.random(in: 1...UInt64.max >> 1)
        let rounds = self.rounds ?? (duration == nil ? 30 : .max)
        let counters = ProveCounters()
        var proof = ProofRun(
            urls: urls, replicas: replicas, token: token, seed: seed, counters: counters, settleTimeout: settleTimeout, threads: threads)
        let started = ContinuousClock.now
        log(
            "prove: \(urls.count) URL(s) \(urls.map(\.absoluteString).joined(separator: ", ")), \(replicas.count) replica(s), \(viewers) viewers × 3 forms, seed \(seed)"
        )
        if let ledger { proof.ledger = try WriteLedger(loading: ledger) }
        try proof.start(viewers: viewers, idsUpTo: viewerIds)
        var round = 0
        while round < rounds {
            if let duration, started.duration(to: .now) >= .seconds(duration) { break }
            round += 1
            let roundStart = ContinuousClock.now
            try proof.round(round, writes: writesPerRound)
            if round % 10 == 0 { log("prove: round \(round): \(counters.snapshot().progressLine)") }
            let elapsed = roundStart.duration(to: .now)
            if elapsed < .seconds(roundInterval) { Thread.sleep(forTimeInterval: roundInterval - elapsed.seconds) }
        }
        var lag: ConvergenceLag?
        if lagSamples > 0 {
            lag = try proof.measureLag(samples: lagSamples)
        }
        // The lag's own writes are in the ledger too: read everything back last.
        let verification = proof.verifyAcknowledgedWrites()
        if let ledger { try proof.ledger.save(to: ledger) }
        let report = ProveReport(
            counts: counters.snapshot(), rounds: round, seconds: started.duration(to: .now).seconds, verification: verification, lag: lag,
            lagTarget: lagP99Ms, maxWriteErrors: maxWriteErrors, replicaCount: replicas.count)
        print(report.text)
        if !report.failures.isEmpty { throw ExitCode(1) }
    }

    private func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

// MARK: - Targets

/// The base URLs given on the command line.
enum ProveTargets {
    /// Splits `values` at commas, trims them and checks each is an `http://host[:port]` URL
    /// (a trailing slash dropped). Order is kept, duplicates are refused.
    static func parse(_ values: [String], option: String) throws -> [URL] {
        let pieces = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !pieces.isEmpty else { throw ValidationError("\(option) needs at least one URL.") }
        var seen: Set<String> = []
        return try pieces.map { piece in
            var text = piece
            while text.hasSuffix("/") { text.removeLast() }
            guard !text.isEmpty else { throw ValidationError("\(option): an empty URL in \(values.joined(separator: ",")).") }
            guard let url = URL(string: text), url.scheme == "http", let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil
            else {
                throw ValidationError("\(option) must be an http:// URL such as http://127.0.0.1:8080, not \(piece).")
            }
            guard seen.insert(url.absoluteString).inserted else { throw ValidationError("\(option): \(url.absoluteString) is given twice.") }
            return url
        }
    }
}

// MARK: - Counting

/// What a run counted, shared by every thread.
final class ProveCounters: Sendable {
    struct Counts {
        var requests = 0
        var applied: [FeedDelta.Format: Int] = [:]
        var unchanged = 0
        var refetched = 0
        var gone = 0  // 410 answers seen on the wire
        var retried503 = 0
        /// The error codes of the 503s retried, and how many came without Retry-After.
        var codes503: [String: Int] = [:]
        var missingRetryAfter = 0
        var read5xx = 0
        var write5xx = 0
        var readNoResponse = 0
        var writeNoResponse = 0
        var writesAcknowledged = 0
        var writesRefused = 0
        var writesByKind: [String: Int] = [:]
        var mismatches = 0
        var errors = 0
        var settleRetries = 0
        var unreachableReplicas: Set<String> = []
        var messages: [String] = []

        var progressLine: String {
            let forms = FeedDelta.Format.allCases.map { "\($0.rawValue) \(applied[$0, default: 0])" }.joined(separator: ", ")
            return "deltas applied \(forms); writes \(writesAcknowledged); 5xx \(read5xx + write5xx); 410 \(gone); mismatches \(mismatches)"
        }
    }

    private let state = Mutex(Counts())

    func update(_ body: (inout Counts) -> Void) {
        state.withLock { body(&$0) }
    }

    /// What a problem counts as.
    enum Problem {
        /// A document that differs from a fresh fetch, or a delta that does not apply.
        case mismatch
        /// Any other failed request or answer the proof cannot use.
        case error
        /// Already counted where it was seen (a 5xx, a request without an answer, a lost write).
        case counted
    }

    /// Counts a problem and keeps its message (the first 20 are printed at the end; each one on
    /// standard error as it happens).
    func fail(_ message: String, as problem: Problem = .mismatch) {
        FileHandle.standardError.write(Data("prove: \(message)\n".utf8))
        state.withLock {
            switch problem {
            case .mismatch: $0.mismatches += 1
            case .error: $0.errors += 1
            case .counted: break
            }
            if $0.messages.count < 20 { $0.messages.append(message) }
        }
    }

    func snapshot() -> Counts {
        state.withLock { $0 }
    }
}

// MARK: - Transport

/// Sends each request to the next base URL in turn (or to one, when pinned), retries 503s after
/// their Retry-After, and counts what came back.
final class ProveTransport: FeedHTTPTransport {
    /// Whose requests these are: a client's (every answer counts) or the proof's own probes of
    /// one replica (convergence, read-back), which may find it down without anyone failing.
    enum Role {
        case client
        case probe
    }

    let bases: [URL]
    let role: Role
    /// The base the clients were created with; replaced by the chosen one in every request.
    let primary: URL
    let counters: ProveCounters
    private let next: Atomic<Int>
    /// What actually sends: plain sockets (a test passes a fake server).
    private let inner: any FeedHTTPTransport
    /// 503 answers retried per request before the 503 counts.
    static let maximumRetries = 30

    init(
        bases: [URL], counters: ProveCounters, offset: Int = 0, role: Role = .client, inner: any FeedHTTPTransport = SocketTransport(timeout: 10)
    ) {
        precondition(!bases.isEmpty)
        self.inner = inner
        self.bases = bases
        self.role = role
        self.primary = bases[0]
        self.counters = counters
        self.next = Atomic(offset)
    }

    func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse {
        let isRead = request.method == "GET" || request.method == "HEAD" || request.url.path.hasSuffix("/feed/delta")
        var attempt = 0
        while true {
            let base = bases[abs(next.wrappingAdd(1, ordering: .relaxed).oldValue) % bases.count]
            var routed = request
            routed.url = rebased(request.url, onto: base)
            let response: FeedHTTPResponse
            do {
                response = try inner.send(routed)
            } catch {
                guard role == .client else { throw error }
                counters.update {
                    $0.requests += 1
                    if isRead { $0.readNoResponse += 1 } else { $0.writeNoResponse += 1 }
                }
                throw error
            }
            counters.update { $0.requests += 1 }
            guard role == .client else { return response }
            if response.status == 503, attempt < Self.maximumRetries {
                attempt += 1
                let code = (try? response.json())?["error"]?["code"].flatMap { if case .string(let code) = $0 { code } else { nil } }
                let retryAfter = response.header("Retry-After").flatMap(Double.init)
                counters.update {
                    $0.retried503 += 1
                    $0.codes503[code ?? "(no code)", default: 0] += 1
                    if retryAfter == nil { $0.missingRetryAfter += 1 }
                }
                let seconds = retryAfter ?? 1
                Thread.sleep(forTimeInterval: min(max(seconds, 0.05), 5))
                continue
            }
            if response.status >= 500 {
                let body = String(decoding: response.body.prefix(200), as: UTF8.self)
                counters.update { if isRead { $0.read5xx += 1 } else { $0.write5xx += 1 } }
                counters.fail("\(request.method) \(routed.url.absoluteString) answered \(response.status): \(body)", as: .counted)
            }
            if response.status == 410 { counters.update { $0.gone += 1 } }
            return response
        }
    }

    private func rebased(_ url: URL, onto base: URL) -> URL {
        let text = url.absoluteString
        let prefix = primary.absoluteString
        guard base != primary, text.hasPrefix(prefix) else { return url }
        return URL(string: base.absoluteString + text.dropFirst(prefix.count)) ?? url
    }
}

// MARK: - The proof

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
    var planner: ProveWritePlanner

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
        planner = ProveWritePlanner(seed: seed ^ 0x5EED_0F_17E5)
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
        return DeltaFeedClient(baseURL: bases[0], viewer: viewer, format: format, transport: transport, bearerToken: token)
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
            guard let document = viewer.clients[0].document, let write = planner.next(viewer: viewer.id, feed: document) else { continue }
            try perform(write)
            lastViewer = viewer.id
        }
        if let lastViewer { waitForReplicasToAgree(viewer: lastViewer) }
        let (viewers, counters, settleTimeout, urls, token) = (self.viewers, self.counters, self.settleTimeout, self.urls, self.token)
        let claimed = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: min(threads, viewers.count)) { _ in
            while true {
                let index = claimed.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < viewers.count else { return }
                let viewer = viewers[index]
                for (position, client) in viewer.clients.enumerated() {
                    // The fresh fetch starts elsewhere in the rotation than the client's delta.
                    let fresh = ProofRun.client(
                        viewer: viewer.id, format: .batch, bases: urls, offset: round + index + position + 1, counters: counters, token: token)
                    ProofRun.check(client, fresh: fresh, round: round, counters: counters, settleTimeout: settleTimeout)
                }
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

    // MARK: Writes

    mutating func perform(_ write: ProveWrite) throws {
        var request = FeedHTTPRequest(
            method: write.method, url: URL(string: urls[0].absoluteString + write.path)!, headers: ["Authorization": "Bearer \(token)"])
        if let body = write.body {
            request.body = JSONValue.object(body).serialized()
            request.headers["Content-Type"] = "application/json"
        }
        let response: FeedHTTPResponse
        do {
            response = try transport.send(request)
        } catch {
            ledger.unknownOutcome(write)
            counters.fail("\(write.method) \(write.path): no answer (outcome unknown): \(error)", as: .counted)
            return
        }
        switch response.status {
        case 200...299:
            counters.update {
                $0.writesAcknowledged += 1
                $0.writesByKind[write.kind, default: 0] += 1
            }
            ledger.acknowledged(write, answer: try? response.json())
        case 401, 403:
            throw CommandFailure("\(write.method) \(write.path) answered \(response.status): check the admin token.")
        case 500...:
            ledger.unknownOutcome(write)  // counted and reported by the transport
        default:
            // 404/409/422: the write raced another (following someone already followed); nothing changed.
            counters.update { $0.writesRefused += 1 }
        }
    }

    /// Reads every acknowledged write back from every replica (retrying while they catch up).
    func verifyAcknowledgedWrites() -> WriteVerification {
        var verification = WriteVerification(records: ledger.records.count, uncertain: ledger.uncertain)
        for replica in replicas {
            let pinned = ProveTransport(bases: [replica], counters: counters, role: .probe)
            let health = try? pinned.send(FeedHTTPRequest(method: "GET", url: URL(string: replica.absoluteString + "/healthz")!))
            guard health?.status == 200 else {
                verification.unreachable.append(replica.absoluteString)
                counters.update { $0.unreachableReplicas.insert(replica.absoluteString) }
                continue
            }
            verification.replicasChecked += 1
            for (key, expected) in ledger.records.sorted(by: { $0.key < $1.key }) {
                let deadline = ContinuousClock.now + .seconds(settleTimeout)
                var last = ""
                while true {
                    let url = URL(string: replica.absoluteString + key)!
                    let response = try? pinned.send(FeedHTTPRequest(method: "GET", url: url, headers: ["Authorization": "Bearer \(token)"]))
                    let json = response.flatMap { $0.status == 200 ? try? $0.json() : nil }
                    if let json, expected.allSatisfy({ json[$0.key] == $0.value }) { break }
                    last = response.map { "\($0.status) \(String(decoding: $0.body.prefix(300), as: UTF8.self))" } ?? "no answer"
                    if ContinuousClock.now >= deadline {
                        verification.lost += 1
                        counters.fail(
                            "acknowledged write lost on \(replica.absoluteString): \(key) should have \(JSONValue.object(expected).jsonText), answered \(last)",
                            as: .counted)
                        break
                    }
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
        }
        return verification
    }

    // MARK: Convergence lag

    /// Retitles a video in a viewer's feed through one replica, then polls the next replica's
    /// feed until the title shows: the time from the write's acknowledgement to the first feed
    /// that has it.
    mutating func measureLag(samples: Int) throws -> ConvergenceLag {
        guard let viewer = viewers.first(where: { ProveWritePlanner.videos(in: $0.clients[0].document).isEmpty == false }),
            let video = ProveWritePlanner.videos(in: viewer.clients[0].document).first
        else {
            throw CommandFailure("no viewer's feed shows a video to retitle for the convergence lag")
        }
        var lag = ConvergenceLag(pairs: replicas.count > 1 ? "write on one replica, read the next" : "write and read on \(replicas[0].absoluteString)")
        let readers = replicas.map { ProveTransport(bases: [$0], counters: counters, role: .probe) }
        let timeout = max(settleTimeout, 5)
        for sample in 0..<samples {
            let writer = replicas[sample % replicas.count]
            let reader = readers[(sample + 1) % replicas.count]
            let title = "lag \(seed % 100_000) \(sample) \(random.next(below: 1 << 30))"
            let write = ProveWrite(
                kind: "lag title", method: "PATCH", path: "/v1/videos/\(video)", body: ["title": .string(title)], record: .video(video))
            var request = FeedHTTPRequest(method: "PATCH", url: URL(string: writer.absoluteString + write.path)!, headers: ["Authorization": "Bearer \(token)"])
            request.body = write.body.map { JSONValue.object($0).serialized() }
            request.headers["Content-Type"] = "application/json"
            guard let response = try? ProveTransport(bases: [writer], counters: counters).send(request), response.status == 200 else {
                ledger.unknownOutcome(write)
                lag.failedWrites += 1
                continue
            }
            ledger.acknowledged(write, answer: try? response.json())
            let acknowledged = ContinuousClock.now
            let needle = Array(title.utf8)
            let feed = URL(string: reader.bases[0].absoluteString + "/v1/users/\(viewer.id)/feed")!
            while true {
                let answer = try? reader.send(FeedHTTPRequest(method: "GET", url: feed, headers: ["Authorization": "Bearer \(token)"]))
                let elapsed = acknowledged.duration(to: .now)
                if let answer, answer.status == 200, answer.body.firstRange(of: needle) != nil {
                    lag.milliseconds.append(elapsed.seconds * 1000)
                    break
                }
                if elapsed >= .seconds(timeout) {
                    lag.timedOut += 1
                    break
                }
                Thread.sleep(forTimeInterval: 0.002)
            }
            // Land the next write at a random point of any catch-up period.
            Thread.sleep(forTimeInterval: Double(random.next(below: 40)) / 1000)
        }
        return lag
    }
}

// MARK: - Writes and what they should leave behind

/// One write through the API, and which readable record it sets.
struct ProveWrite: Equatable {
    enum Record: Hashable, Comparable {
        case video(Int64)
        case user(Int64)
        /// Nothing readable by id (follows, ads): proven by the feeds alone.
        case none

        var path: String {
            switch self {
            case .video(let id): "/v1/videos/\(id)"
            case .user(let id): "/v1/users/\(id)"
            case .none: ""
            }
        }
    }

    var kind: String
    var method: String
    var path: String
    var body: [String: JSONValue]?
    var record: Record
}

/// The last acknowledged value of every field the proof wrote and can read back by id. Writes
/// are sent one at a time, so the last acknowledged one is what every replica must show.
struct WriteLedger: Equatable {
    /// Fields expected, per resource path (`/v1/videos/7` → title, like_count).
    private(set) var records: [String: [String: JSONValue]] = [:]
    /// Writes whose outcome is unknown (5xx not retried, or no answer): their fields are not checked.
    private(set) var uncertain = 0

    init() {}

    /// The ledger saved at `path`, or an empty one when there is no such file.
    init(loading path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let json = try JSONValue(parsing: Array(bytes))
        guard case .object(let records)? = json["records"], let uncertain = json["uncertain"]?.int64Value else {
            throw ValidationError("\(path) is not a ledger written by deltafeed prove.")
        }
        for (path, fields) in records {
            guard case .object(let fields) = fields else { throw ValidationError("\(path) is not a ledger written by deltafeed prove.") }
            self.records[path] = fields
        }
        self.uncertain = Int(uncertain)
    }

    func save(to path: String) throws {
        let json: JSONValue = ["records": .object(records.mapValues { .object($0) }), "uncertain": .int(Int64(uncertain))]
        try Data(json.serialized()).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// A 2xx: a created record's fields come from the answer (it has the id), an update's from its body.
    mutating func acknowledged(_ write: ProveWrite, answer: JSONValue?) {
        var record = write.record
        if write.method == "POST", let id = answer?["id"]?.int64Value {
            record = write.path == "/v1/users" ? .user(id) : write.path == "/v1/videos" ? .video(id) : .none
        }
        guard record != .none, let body = write.body else { return }
        let tracked = body.filter { ["title", "like_count", "handle", "display_name"].contains($0.key) }
        records[record.path, default: [:]].merge(tracked) { _, new in new }
    }

    mutating func unknownOutcome(_ write: ProveWrite) {
        uncertain += 1
        guard write.record != .none, let body = write.body else { return }
        for key in body.keys { records[write.record.path]?[key] = nil }
        if records[write.record.path]?.isEmpty == true { records[write.record.path] = nil }
    }
}

/// Draws writes from what a viewer's feed shows, so most of them change some feed.
struct ProveWritePlanner {
    private var random: SplitMix64
    private var counter = 0

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    static func videos(in document: FeedDocument?) -> [Int64] {
        (document?.sections ?? []).flatMap(\.items).compactMap { $0.kind == "video" ? $0.data["video"]?["id"]?.int64Value : nil }
    }

    mutating func next(viewer: Int64, feed: FeedDocument) -> ProveWrite? {
        counter += 1
        let videos = Self.videos(in: feed)
        let grids = feed.sections.filter { $0.kind.hasPrefix("video_grid") }
        let recentAuthors = grids.first?.items.compactMap { $0.data["author"]?["id"]?.int64Value } ?? []
        let suggested = feed.sections.filter { $0.kind == "follow_suggestions" }.flatMap(\.items).compactMap { $0.data["user"]?["id"]?.int64Value }
        let ads = feed.sections.flatMap(\.items).compactMap { $0.kind == "ad" ? $0.data["id"]?.int64Value ?? $0.data["ad"]?["id"]?.int64Value : nil }
        var kinds: [(String, UInt64)] = [("user", 4)]
        if !videos.isEmpty { kinds += [("like", 30), ("title", 20)] }
        if !recentAuthors.isEmpty { kinds += [("video", 14), ("unfollow", 8)] }
        if !suggested.isEmpty { kinds.append(("follow", 10)) }
        if !ads.isEmpty { kinds.append(("ad", 10)) }
        var pick = random.next(below: kinds.reduce(0) { $0 + $1.1 })
        var kind = kinds[0].0
        for (name, weight) in kinds {
            if pick < weight {
                kind = name
                break
            }
            pick -= weight
        }
        let tag = "\(counter)-\(random.next(below: 1 << 20))"
        switch kind {
        case "like":
            let video = videos[choose(videos.count)]
            let likes = Int64(random.next(below: 1_000_000))
            return ProveWrite(kind: "like", method: "PATCH", path: "/v1/videos/\(video)", body: ["like_count": .int(likes)], record: .video(video))
        case "title":
            let video = videos[choose(videos.count)]
            return ProveWrite(
                kind: "title edit", method: "PATCH", path: "/v1/videos/\(video)", body: ["title": .string("Proof title \(tag) ✓")], record: .video(video))
        case "video":
            let author = recentAuthors[choose(recentAuthors.count)]
            let body: [String: JSONValue] = [
                "author_id": .int(author), "title": .string("Proof video \(tag)"), "thumbnail_url": .string("https://cdn.example/proof/\(tag).jpg"),
                "duration_seconds": .int(Int64(5 + random.next(below: 300))), "like_count": .int(Int64(random.next(below: 50_000))),
            ]
            return ProveWrite(kind: "new video", method: "POST", path: "/v1/videos", body: body, record: .none)
        case "unfollow":
            let author = recentAuthors[choose(recentAuthors.count)]
            return ProveWrite(kind: "unfollow", method: "DELETE", path: "/v1/users/\(viewer)/follows/\(author)", body: nil, record: .none)
        case "follow":
            let user = suggested[choose(suggested.count)]
            return ProveWrite(kind: "follow", method: "PUT", path: "/v1/users/\(viewer)/follows/\(user)", body: nil, record: .none)
        case "ad":
            let ad = ads[choose(ads.count)]
            let body: [String: JSONValue] =
                random.next(below: 2) == 0 ? ["title": .string("Proof ad \(tag)")] : ["weight": .int(Int64(1 + random.next(below: 1000)))]
            return ProveWrite(kind: "ad edit", method: "PATCH", path: "/v1/ads/\(ad)", body: body, record: .none)
        default:
            let body: [String: JSONValue] = ["handle": .string("proof_\(tag.replacingOccurrences(of: "-", with: "_"))"), "display_name": "Proof Person"]
            return ProveWrite(kind: "new user", method: "POST", path: "/v1/users", body: body, record: .none)
        }
    }

    private mutating func choose(_ count: Int) -> Int {
        Int(random.next(below: UInt64(count)))
    }
}

// MARK: - Results

struct WriteVerification {
    var records: Int
    var uncertain: Int
    var replicasChecked = 0
    var unreachable: [String] = []
    var lost = 0
}

struct ConvergenceLag {
    var pairs: String
    var milliseconds: [Double] = []
    var timedOut = 0
    var failedWrites = 0
}

/// Nearest-rank percentiles of a sample.
struct Percentiles {
    let sorted: [Double]

    init(_ samples: [Double]) {
        sorted = samples.sorted()
    }

    /// The smallest sample at or above `percent` % of them (nil for no samples).
    func value(_ percent: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}

struct ProveReport {
    let counts: ProveCounters.Counts
    let rounds: Int
    let seconds: Double
    let verification: WriteVerification
    let lag: ConvergenceLag?
    let lagTarget: Double?
    let maxWriteErrors: Int
    let replicaCount: Int

    var failures: [String] {
        var failures: [String] = []
        let forms = FeedDelta.Format.allCases
        if counts.mismatches > 0 { failures.append("\(counts.mismatches) mismatches") }
        if counts.errors > 0 { failures.append("\(counts.errors) other failed requests") }
        if counts.read5xx > 0 { failures.append("\(counts.read5xx) reads answered 5xx") }
        if counts.readNoResponse > 0 { failures.append("\(counts.readNoResponse) reads without an answer") }
        if counts.missingRetryAfter > 0 { failures.append("\(counts.missingRetryAfter) 503s without Retry-After") }
        if counts.write5xx + counts.writeNoResponse > maxWriteErrors {
            failures.append("\(counts.write5xx + counts.writeNoResponse) writes answered 5xx or not at all (tolerated: \(maxWriteErrors))")
        }
        if verification.lost > 0 { failures.append("\(verification.lost) acknowledged writes not found") }
        if rounds > 0, let missing = forms.first(where: { counts.applied[$0, default: 0] == 0 }) {
            failures.append("no \(missing.rawValue) delta applied: nothing proven for that form")
        }
        if let lag {
            if lag.timedOut > 0 { failures.append("\(lag.timedOut) writes not visible within the lag timeout") }
            if lag.failedWrites > 0 { failures.append("\(lag.failedWrites) lag writes failed") }
            if let lagTarget, let p99 = Percentiles(lag.milliseconds).value(99), p99 > lagTarget {
                failures.append("convergence lag p99 \(Self.ms(p99)) ms is above the target of \(Self.ms(lagTarget)) ms")
            }
        }
        return failures
    }

    static func ms(_ value: Double) -> String { String(format: "%.1f", value) }

    var text: String {
        let forms = FeedDelta.Format.allCases
        let applied = forms.map { "\($0.rawValue) \(counts.applied[$0, default: 0])" }.joined(separator: ", ")
        let kinds = counts.writesByKind.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        var lines = [
            "prove: \(rounds) rounds in \(String(format: "%.1f", seconds)) s, \(counts.requests) requests",
            "deltas applied: \(applied); unchanged (304) \(counts.unchanged); refetched after 410 \(counts.refetched) (410s seen \(counts.gone)); settle retries \(counts.settleRetries)",
            "writes acknowledged: \(counts.writesAcknowledged) (\(kinds.isEmpty ? "none" : kinds)); refused 4xx \(counts.writesRefused); outcome unknown \(verification.uncertain)",
            "503 retried after Retry-After: \(counts.retried503)\(counts.codes503.isEmpty ? "" : " (" + counts.codes503.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") + ")"); 5xx seen: \(counts.read5xx + counts.write5xx) (reads \(counts.read5xx), writes \(counts.write5xx)); no answer: reads \(counts.readNoResponse), writes \(counts.writeNoResponse)",
            "acknowledged writes read back: \(verification.records) records on \(verification.replicasChecked) of \(replicaCount) replicas\(verification.unreachable.isEmpty ? "" : " (unreachable: \(verification.unreachable.joined(separator: ", ")))"), lost \(verification.lost)",
            "mismatches: \(counts.mismatches); other failed requests: \(counts.errors)",
        ]
        if let lag {
            let p = Percentiles(lag.milliseconds)
            let figures = [50.0, 95, 99, 100].map { p.value($0).map(Self.ms) ?? "-" }
            lines.append(
                "convergence lag (\(lag.pairs)), \(lag.milliseconds.count) samples: p50 \(figures[0]) ms, p95 \(figures[1]) ms, p99 \(figures[2]) ms, max \(figures[3]) ms; timed out \(lag.timedOut), failed writes \(lag.failedWrites)"
            )
        }
        for message in counts.messages { lines.append("  first problems: \(message)") }
        var result =
            "RESULT rounds=\(rounds) applied_batch=\(counts.applied[.batch, default: 0]) applied_sequential=\(counts.applied[.sequential, default: 0]) applied_jsonpatch=\(counts.applied[.jsonpatch, default: 0]) unchanged=\(counts.unchanged) gone=\(counts.gone) writes_acked=\(counts.writesAcknowledged) writes_uncertain=\(verification.uncertain) retried_503=\(counts.retried503) retried_503_storage_unavailable=\(counts.codes503["storage_unavailable", default: 0]) read_5xx=\(counts.read5xx) write_5xx=\(counts.write5xx) read_no_answer=\(counts.readNoResponse) write_no_answer=\(counts.writeNoResponse) mismatches=\(counts.mismatches) errors=\(counts.errors) verified_records=\(verification.records) verified_replicas=\(verification.replicasChecked) lost=\(verification.lost)"
        if let lag {
            let p = Percentiles(lag.milliseconds)
            result +=
                " lag_samples=\(lag.milliseconds.count) lag_p50_ms=\(p.value(50).map(Self.ms) ?? "-") lag_p95_ms=\(p.value(95).map(Self.ms) ?? "-") lag_p99_ms=\(p.value(99).map(Self.ms) ?? "-") lag_max_ms=\(p.value(100).map(Self.ms) ?? "-") lag_timed_out=\(lag.timedOut)"
        }
        lines.append(result)
        let failures = self.failures
        lines.append(failures.isEmpty ? "prove: PASS" : "prove: FAIL: \(failures.joined(separator: "; "))")
        return lines.joined(separator: "\n")
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
