import DeltaFeedClient
import DeltaFeedServer
import Deterministic
import EventHTTP
import FeedService
import FeedStore
import Foundation
import Logging
import SQLiteStore

/// A seeded store behind a running server on a free port, with an HTTP transport to talk to it.
/// Call ``stop()`` when done (tests use `defer`).
final class TestServer: @unchecked Sendable {  // immutable after init; requests may come from any thread
    static let adminToken = "t"

    let store: SQLiteFeedStore
    let server: DeltaFeedServer
    let baseURL: URL
    let transport: TimingTransport

    /// Which HTTP stack the test's requests and clients use.
    enum Stack {
        /// ``SocketTransport``: fast, one connection per request.
        case sockets
        /// ``URLSessionTransport`` (libcurl on Linux), connections kept alive.
        case urlSession
    }

    init(
        seed: DemoSeed = DemoSeed(users: 60, videos: 400, ads: 5, seed: 7), stack: Stack = .sockets,
        storeOptions: StorageOptions = StorageOptions(), viewerTokens: ViewerTokens? = nil, demo: Bool = true,
        longPollCapacity: Int = 10_000, live: LiveLimits = LiveLimits(), requestTimeout: Duration = .seconds(10),
        groupCommit: GroupCommit.Limits? = nil, isReady: @escaping @Sendable () -> Bool = { true }
    ) throws {
        store = try SQLiteFeedStore.temporary(options: storeOptions)
        try store.seed(seed)
        var configuration = DeltaFeedServerConfiguration(
            service: try FeedService(store: store), adminToken: TestServer.adminToken, viewerTokens: viewerTokens,
            http: {
                var http = HTTPServerConfiguration()
                http.port = 0
                http.threads = 2
                http.requestTimeout = requestTimeout
                http.logger.logLevel = .error
                return http
            }())
        configuration.demo = demo
        configuration.longPollCapacity = longPollCapacity
        configuration.live = live
        if let groupCommit { configuration.groupCommit = groupCommit }
        configuration.isReady = isReady
        server = try DeltaFeedServer.start(configuration: configuration)
        baseURL = URL(string: "http://127.0.0.1:\(server.http.port)")!
        switch stack {
        case .sockets: transport = TimingTransport(SocketTransport(timeout: 20))
        case .urlSession: transport = TimingTransport(URLSessionTransport(timeout: 20))
        }
    }

    func stop() {
        server.shutdown()
    }

    /// A client of this server.
    func client(
        viewer: Int64, format: FeedDelta.Format, query: FeedQuery = FeedQuery(limit: 30), bearerToken: String? = nil
    ) -> DeltaFeedClient {
        DeltaFeedClient(baseURL: baseURL, viewer: viewer, format: format, query: query, transport: transport, bearerToken: bearerToken)
    }

    /// Sends `method path` (path with its query), with a JSON body and the admin token unless
    /// told otherwise.
    @discardableResult
    func request(
        _ method: String, _ path: String, json: JSONValue? = nil, raw: String? = nil,
        token: String? = TestServer.adminToken, headers: [String: String] = [:]
    ) throws -> FeedHTTPResponse {
        var allHeaders = headers
        if let token { allHeaders["Authorization"] = "Bearer \(token)" }
        var body: [UInt8]?
        if let json { body = json.serialized() }
        if let raw { body = Array(raw.utf8) }
        if body != nil { allHeaders["Content-Type"] = "application/json" }
        return try transport.send(FeedHTTPRequest(method: method, url: URL(string: baseURL.absoluteString + path)!, headers: allHeaders, body: body))
    }

    /// The feed page for `viewer` asked for with `query`: the raw JSON and the document.
    func freshFeed(viewer: Int64, query: FeedQuery) throws -> (json: JSONValue, document: FeedDocument) {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)!
        components.path = "/v1/users/\(viewer)/feed"
        components.queryItems = query.items.isEmpty ? nil : query.items
        let response = try transport.send(FeedHTTPRequest(method: "GET", url: components.url!))
        guard response.status == 200 else {
            throw TestFailure("GET feed answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        let json = try response.json()
        return (json, try FeedDocument(json: json))
    }
}

/// A transport that counts requests and the time spent waiting for responses, by route.
final class TimingTransport: FeedHTTPTransport, @unchecked Sendable {
    let base: any FeedHTTPTransport
    private let lock = NSLock()
    private var _requests = 0
    private var _waiting = Duration.zero
    private var _byKind: [String: (count: Int, time: Duration)] = [:]

    init(_ base: any FeedHTTPTransport) {
        self.base = base
    }

    var requests: Int { lock.withLock { _requests } }
    var waiting: Duration { lock.withLock { _waiting } }
    /// Requests and waiting time by method and route (ids replaced by `{id}`).
    var byKind: [String: (count: Int, time: Duration)] { lock.withLock { _byKind } }

    func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse {
        let start = ContinuousClock.now
        defer {
            let elapsed = ContinuousClock.now - start
            let route = request.url.path.split(separator: "/").map { $0.allSatisfy(\.isNumber) ? "{id}" : String($0) }.joined(separator: "/")
            let kind = "\(request.method) /\(route)" + (request.url.query?.contains("since=") == true ? "?since" : "")
            lock.withLock {
                _requests += 1
                _waiting += elapsed
                _byKind[kind, default: (0, .zero)].count += 1
                _byKind[kind, default: (0, .zero)].time += elapsed
            }
        }
        return try base.send(request)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension FeedDocument {
    /// Where two documents first differ, for failure messages.
    func firstDifference(from other: FeedDocument) -> String {
        if snapshot != other.snapshot { return "snapshot \(snapshot) vs \(other.snapshot)" }
        if viewer != other.viewer { return "viewer \(viewer) vs \(other.viewer)" }
        if nextCursor != other.nextCursor { return "next_cursor \(nextCursor ?? "null") vs \(other.nextCursor ?? "null")" }
        if sections.count != other.sections.count {
            return
                "\(sections.count) sections vs \(other.sections.count): [\(sections.map(\.id).joined(separator: ","))] vs [\(other.sections.map(\.id).joined(separator: ","))]"
        }
        for (index, (mine, theirs)) in zip(sections, other.sections).enumerated() where mine != theirs {
            if mine.id != theirs.id || mine.kind != theirs.kind || mine.columns != theirs.columns {
                return "section \(index): \(mine.id)/\(mine.kind)/\(mine.columns) vs \(theirs.id)/\(theirs.kind)/\(theirs.columns)"
            }
            if mine.items.map(\.id) != theirs.items.map(\.id) {
                return
                    "section \(index) (\(mine.id)) items [\(mine.items.map(\.id).joined(separator: ","))] vs [\(theirs.items.map(\.id).joined(separator: ","))]"
            }
            if let item = zip(mine.items, theirs.items).first(where: { $0 != $1 }) {
                return "section \(index) (\(mine.id)) item \(item.0.id): \(item.0.json.jsonText) vs \(item.1.json.jsonText)"
            }
            return "section \(index) (\(mine.id)) version \(mine.version) vs \(theirs.version)"
        }
        return "no difference"
    }
}
