import DeltaFeedClient
import DeltaFeedServer
import EventHTTP
import FeedService
import FeedStore
import Foundation
import Logging
import SQLiteStore

/// A seeded store behind an in-process server on a loopback port. ``restart()`` stops the server
/// and starts another on the same store and port; ``stop()`` ends it (tests use `defer`).
final class LiveTestServer: @unchecked Sendable {
    // @unchecked: `server` changes only in restart(), called by the test's own task.
    static let adminToken = "admin"

    let store: SQLiteFeedStore
    let live: LiveLimits
    let viewerTokens: ViewerTokens?
    private(set) var server: DeltaFeedServer
    let port: Int
    let baseURL: URL
    let transport = SocketTransport(timeout: 10)

    init(live: LiveLimits = LiveLimits(), viewerTokens: ViewerTokens? = nil) throws {
        store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 40, videos: 200, ads: 3, seed: 11))
        self.live = live
        self.viewerTokens = viewerTokens
        server = try LiveTestServer.start(store: store, port: 0, live: live, viewerTokens: viewerTokens)
        port = server.http.port
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    private static func start(store: SQLiteFeedStore, port: Int, live: LiveLimits, viewerTokens: ViewerTokens?) throws -> DeltaFeedServer {
        var http = HTTPServerConfiguration()
        http.host = "127.0.0.1"
        http.port = port
        http.threads = 2
        http.logger.logLevel = .error
        var configuration = DeltaFeedServerConfiguration(
            service: try FeedService(store: store), adminToken: LiveTestServer.adminToken, viewerTokens: viewerTokens, http: http)
        configuration.live = live
        configuration.demo = false
        return try DeltaFeedServer.start(configuration: configuration)
    }

    /// Shuts the server down (its live streams get `event: shutdown`) and starts a new one on
    /// the same store and port.
    func restart() throws {
        server.shutdown()
        server = try LiveTestServer.start(store: store, port: port, live: live, viewerTokens: viewerTokens)
    }

    func stop() {
        server.shutdown()
    }

    func client(viewer: Int64, format: FeedDelta.Format = .batch, query: FeedQuery = FeedQuery(limit: 10), token: String? = nil) -> DeltaFeedClient {
        DeltaFeedClient(baseURL: baseURL, viewer: viewer, format: format, query: query, transport: transport, bearerToken: token)
    }

    /// `method path` with the admin token.
    @discardableResult
    func request(_ method: String, _ path: String) throws -> FeedHTTPResponse {
        try transport.send(
            FeedHTTPRequest(method: method, url: URL(string: baseURL.absoluteString + path)!, headers: ["Authorization": "Bearer \(LiveTestServer.adminToken)"])
        )
    }

    /// What `GET …/feed` answers now, as the client would ask for it.
    func freshFeed(viewer: Int64, query: FeedQuery = FeedQuery(limit: 10)) throws -> FeedDocument {
        let client = self.client(viewer: viewer, query: query, token: LiveTestServer.adminToken)
        return try client.fetch()
    }

    /// Likes a video `viewer`'s page shows, as `liker`: the page changes (its like count).
    func likeAVideoShown(to viewer: Int64, by liker: Int64, query: FeedQuery = FeedQuery(limit: 10)) throws {
        let page = try freshFeed(viewer: viewer, query: query)
        let ids = page.sections.flatMap(\.items).filter { $0.kind == "video" }.compactMap { Int64($0.id.dropFirst("video:".count)) }
        guard let video = ids.first else { throw LiveTestFailure("viewer \(viewer)'s page shows no video") }
        let response = try request("PUT", "/v1/videos/\(video)/likes/\(liker)")
        guard response.status == 201 else { throw LiveTestFailure("PUT like answered \(response.status)") }
    }

    /// A value of `/metrics` (`name` with its labels), or nil when it is not there.
    func metric(_ name: String) throws -> Double? {
        let text = String(decoding: try transport.send(FeedHTTPRequest(method: "GET", url: baseURL.appendingPathComponent("metrics"))).body, as: UTF8.self)
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.dropFirst(name.count + 1)) }
    }
}

/// Iterates a live sequence in a task of its own and keeps what it yields, so a test can wait
/// for the next element with a deadline.
final class LiveRecorder<Element: Sendable>: @unchecked Sendable {
    // @unchecked: the members are guarded by `lock`.
    private let lock = NSLock()
    private var _elements: [Element] = []
    private var _failure: (any Error)?
    private var _finished = false
    private var task: Task<Void, Never>?

    init(_ sequence: AsyncThrowingStream<Element, any Error>) {
        task = Task { [self] in
            do {
                for try await element in sequence {
                    lock.withLock { _elements.append(element) }
                }
            } catch {
                lock.withLock { _failure = error }
            }
            lock.withLock { _finished = true }
        }
    }

    var elements: [Element] { lock.withLock { _elements } }
    var failure: (any Error)? { lock.withLock { _failure } }
    var finished: Bool { lock.withLock { _finished } }

    /// Waits until there are `count` elements, for at most `seconds`.
    func element(_ count: Int, within seconds: Double = LiveDeadline.seconds) async throws -> Element {
        try await until(within: seconds, "element \(count)") { self.elements.count >= count || finished }
        let received = elements
        guard received.count >= count else {
            throw LiveTestFailure("the sequence ended after \(received.count) elements: \(failure.map { "\($0)" } ?? "no error")")
        }
        return received[count - 1]
    }

    /// Waits until the sequence has ended (with an error or not), for at most `seconds`.
    func end(within seconds: Double = LiveDeadline.seconds) async throws -> (any Error)? {
        try await until(within: seconds, "the end") { finished }
        return failure
    }

    func cancel() {
        task?.cancel()
    }
}

/// How long a live test waits for something before it fails. A bound on failure, not a timing:
/// the whole suite runs in parallel on as many threads as the machine has cores, and tests that
/// block those threads (seeding, PostgreSQL) can keep a waiting task from running for seconds,
/// so it is generous; a passing test never waits for it.
enum LiveDeadline {
    static let seconds: Double = 30
}

/// Polls `condition` every 10 ms until it holds, for at most `seconds`; once more after the
/// deadline, for a task that only ran again after it.
func until(within seconds: Double = LiveDeadline.seconds, _ what: String, _ condition: () throws -> Bool) async throws {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while try !condition() {
        guard Date() < deadline else {
            await Task.yield()
            if try condition() { return }
            throw LiveTestFailure("\(what): not within \(seconds) s")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

struct LiveTestFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
