import ArgumentParser
import DeltaFeedClient
import Foundation
import WritePlanning

#if canImport(Glibc)
import Glibc
#endif

/// `deltafeed simulate`: a stream of realistic writes through the HTTP API, aimed at what one
/// viewer sees, so a feed page (`/demo`) or any client following that viewer visibly moves.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write to a running server at a steady rate: likes, new videos by followed authors, follows, title edits.",
        discussion: """
            Every write goes through the HTTP API with the admin token, so the server's index, \
            caches and snapshots see it as they would any client's. Before each write the \
            viewer's feed is read, and the write is drawn from what it shows: likes on its \
            videos (popular ones change places), a new video by an author of its newest videos, \
            following a suggested user or unfollowing a followed author (sections move), a new \
            title (an item changes in place). A 503 is retried after its Retry-After. Stops \
            after --count writes or --duration seconds, whichever comes first, and prints one \
            summary line.
            """
    )

    @Option(help: "Base URL of the server", .serverURL)
    var url: Setting<String>

    @OptionGroup var access: WriteAccess

    @Option(help: "Whose feed the writes are aimed at.")
    var viewer: Int64 = 1

    @Option(help: "Writes per second (0.1…1000).")
    var rate: Double = 5

    @Option(help: "Stop after this many seconds (default 60 when --count is not given).")
    var duration: Double?

    @Option(help: "Stop after this many writes.")
    var count: Int?

    @Option(help: "Seed of the random choices (default: a new one each run, printed).")
    var seed: UInt64?

    func validate() throws {
        try check("--rate", rate, in: 0.1...1000, unit: " writes per second")
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds.") }
        if let count, count <= 0 { throw ValidationError("--count must be positive.") }
        guard viewer > 0 else { throw ValidationError("--viewer must be a positive user id.") }
    }

    func run() throws {
        let base = try url.value
        guard let baseURL = URL(string: base.hasSuffix("/") ? String(base.dropLast()) : base), baseURL.scheme == "http", baseURL.host != nil else {
            throw ValidationError("--url must be an http:// URL such as http://127.0.0.1:8080, not \(base).")
        }
        let token = try access.token()
        let seed = self.seed ?? UInt64.random(in: 1...UInt64.max >> 1)
        let api = SimulationAPI(baseURL: baseURL, token: token, transport: SocketTransport(timeout: 10))
        var planner = WritePlanner(seed: seed, mix: .simulate)
        let limitSeconds = duration ?? (count == nil ? 60 : .infinity)
        let limitCount = count ?? .max
        let interval = 1 / rate
        var tally = SimulationTally()
        let progress = SimulationProgress()
        let start = Date()
        var next = start
        FileHandle.standardError.write(Data("simulate: writing to \(base) for viewer \(viewer) at \(rate)/s (seed \(seed))\n".utf8))
        while tally.written + tally.failed < limitCount, Date().timeIntervalSince(start) < limitSeconds {
            let feed = try api.feed(viewer: viewer)
            guard let write = planner.next(WriteOptions(viewer: viewer, feed: feed)) else {
                throw CommandFailure("viewer \(viewer)'s feed shows nothing to write to (no videos, no suggestions).")
            }
            try api.perform(write, tally: &tally)
            progress.update(tally, elapsed: Date().timeIntervalSince(start))
            next += interval
            let wait = next.timeIntervalSinceNow
            if wait > 0 { Thread.sleep(forTimeInterval: wait) } else { next = Date() }
        }
        progress.finish()
        print(tally.summary(elapsed: Date().timeIntervalSince(start)))
    }
}

/// `--admin-token` of the commands that write through the API: `simulate` and `prove`.
struct WriteAccess: ParsableArguments {
    @Option(help: "Bearer token of the write routes", .adminToken)
    var adminToken: Setting<String>

    /// The token, from the flag or the variable; without either, an error before anything is sent.
    func token() throws -> String {
        guard let token = try adminToken.valueIfSet else {
            throw ValidationError("writes need the server's admin token: pass --admin-token or set DELTAFEED_ADMIN_TOKEN.")
        }
        return token
    }
}

/// What `simulate` writes, as its summary line counts them.
enum SimulatedKind: String, CaseIterable {
    case like = "likes", video = "new videos", follow = "follows", unfollow = "unfollows", title = "title edits"

    init?(_ write: PlannedWrite) {
        switch write {
        case .setLikes: self = .like
        case .createVideo: self = .video
        case .follow: self = .follow
        case .unfollow: self = .unfollow
        case .retitle: self = .title
        default: return nil
        }
    }
}

/// Counts of writes by kind, failures and 503 retries; renders the summary line.
struct SimulationTally {
    var byKind: [SimulatedKind: Int] = [:]
    var written = 0
    var failed = 0
    var retried = 0

    func summary(elapsed: Double) -> String {
        let kinds = SimulatedKind.allCases.map { "\(byKind[$0, default: 0]) \($0.rawValue)" }.joined(separator: ", ")
        let perSecond = elapsed > 0 ? Double(written) / elapsed : 0
        return
            "simulate: \(written) writes in \(String(format: "%.1f", elapsed)) s (\(String(format: "%.1f", perSecond))/s): \(kinds); \(failed) failed, \(retried) retried after 503"
    }
}

/// The few API calls the simulation makes.
struct SimulationAPI {
    let baseURL: URL
    let token: String
    let transport: SocketTransport
    /// 503 answers retried per write before it counts as failed.
    static let maximumRetries = 10

    func feed(viewer: Int64) throws -> FeedDocument {
        // With the admin token, which also reads the feed of a server started with --viewer-secret.
        let response = try send(
            FeedHTTPRequest(
                method: "GET", url: url("/v1/users/\(viewer)/feed"), headers: ["Authorization": "Bearer \(token)"]))
        guard response.status == 200 else {
            throw CommandFailure("GET /v1/users/\(viewer)/feed answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return try FeedDocument(parsing: response.body)
    }

    func perform(_ planned: PlannedWrite, tally: inout SimulationTally) throws {
        // simulate's mix holds only writes the API has routes for.
        guard let write = planned.request else { preconditionFailure("no route for \(planned)") }
        var request = FeedHTTPRequest(method: write.method, url: url(write.path), headers: ["Authorization": "Bearer \(token)"])
        if let body = write.body {
            request.body = body.serialized()
            request.headers["Content-Type"] = "application/json"
        }
        for _ in 0...Self.maximumRetries {
            let response = try send(request)
            switch response.status {
            case 200...299:
                tally.written += 1
                if let kind = SimulatedKind(planned) { tally.byKind[kind, default: 0] += 1 }
                return
            case 401, 403:
                throw CommandFailure(
                    "\(write.method) \(write.path) answered \(response.status): check the admin token (\(String(decoding: response.body, as: UTF8.self))).")
            case 503:
                tally.retried += 1
                let seconds = response.header("Retry-After").flatMap(Double.init) ?? 1
                Thread.sleep(forTimeInterval: min(max(seconds, 0.1), 30))
            default:
                // A conflict such as following someone already followed: the feed moved on; count it.
                tally.failed += 1
                if tally.failed <= 3 {
                    FileHandle.standardError.write(
                        Data("simulate: \(write.method) \(write.path) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))\n".utf8))
                }
                return
            }
        }
        tally.failed += 1
    }

    private func url(_ path: String) -> URL {
        URL(string: baseURL.absoluteString + path)!
    }

    private func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse {
        do {
            return try transport.send(request)
        } catch {
            throw CommandFailure("cannot reach \(baseURL.absoluteString): \(error)")
        }
    }
}

/// The running count on standard error: redrawn in place on a terminal, a line every 5 s otherwise.
final class SimulationProgress {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastLine = Date.distantPast

    func update(_ tally: SimulationTally, elapsed: Double) {
        if isTerminal {
            FileHandle.standardError.write(Data("\r\(tally.summary(elapsed: elapsed))\u{1B}[K".utf8))
        } else if Date().timeIntervalSince(lastLine) >= 5 {
            lastLine = Date()
            FileHandle.standardError.write(Data("\(tally.summary(elapsed: elapsed))\n".utf8))
        }
    }

    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
