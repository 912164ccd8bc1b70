// The wire types — FeedDocument, FeedDelta and their decoders, the apply functions and
// DeltaApplyError — live in FeedWire beside the server's writers, over ListDiff's update types
// (ItemPath, Move, SectionedBatchUpdate, ApplyError…) and JSONBytes' JSONValue, the type of
// every item's data: clients get all of them with `import DeltaFeedClient`.
@_exported import FeedWire
public import Foundation
@_exported import JSONBytes
@_exported import ListDiff

/// A reference client of a deltafeed server: it fetches one page of a viewer's feed, keeps it,
/// and keeps it current with deltas, the way an app's list screen would.
///
///     let client = DeltaFeedClient(baseURL: URL(string: "http://localhost:8080")!, viewer: 1, format: .batch)
///     try client.fetch()                       // GET /v1/users/1/feed
///     // … later, on pull-to-refresh or a timer:
///     switch try client.refresh() {            // GET /v1/users/1/feed/delta?since=…
///     case .unchanged: break                   // 304: nothing to animate
///     case .applied(let delta): animate(delta) // performBatchUpdates / ListUpdateCallback
///     case .refetched: reloadData()            // 410: the server forgot the snapshot
///     }
///     client.document                          // always what a fresh fetch would return
///
/// Or keep it live as the server pushes changes (Server-Sent Events, see ``live(options:)``):
///
///     for try await document in client.live() { render(document) }
///
/// Networking goes through a ``FeedHTTPTransport``; the default, ``URLSessionTransport``, is
/// Foundation's `URLSession` (`FoundationNetworking` on Linux) made synchronous, so call the
/// client from a background thread, never the main thread of an app.
///
/// Not thread-safe: use one client from one thread at a time (each screen its own client).
public final class DeltaFeedClient {
    /// The server, e.g. `http://localhost:8080` (a path prefix is kept).
    public let baseURL: URL
    /// Whose feed the client shows.
    public let viewer: Int64
    /// The delta form asked for and applied.
    public let format: FeedDelta.Format
    /// Which page and layout the client asks for.
    public let query: FeedQuery
    /// How requests reach the server.
    public let transport: any FeedHTTPTransport
    /// Sent as `Authorization: Bearer …` with every request: a viewer token, for a server started
    /// with `--viewer-secret` (nil sends none).
    public let bearerToken: String?
    /// The feed page held: nil before the first ``fetch()``.
    public private(set) var document: FeedDocument?

    /// Creates a client; nothing is sent until ``fetch()``.
    ///
    /// - Parameters:
    ///   - baseURL: the server's base URL.
    ///   - viewer: the viewer's user id.
    ///   - format: the delta form to ask for (default batch).
    ///   - query: page size, cursor, width and ad stacking (default: the server's defaults).
    ///   - transport: the HTTP stack (default ``URLSessionTransport``).
    ///   - bearerToken: the viewer token to send, if the server wants one (`deltafeed token`).
    public init(
        baseURL: URL, viewer: Int64, format: FeedDelta.Format = .batch, query: FeedQuery = FeedQuery(),
        transport: any FeedHTTPTransport = URLSessionTransport(), bearerToken: String? = nil
    ) {
        self.bearerToken = bearerToken
        self.baseURL = baseURL
        self.viewer = viewer
        self.format = format
        self.query = query
        self.transport = transport
    }

    /// What a refresh did.
    public enum RefreshOutcome: Hashable, Sendable {
        /// The server answered 304: the held document is current.
        case unchanged
        /// The server answered with this delta; it has been applied to ``document``.
        case applied(FeedDelta)
        /// The server no longer knew the held snapshot (410); the feed was fetched again.
        case refetched
    }

    // MARK: - Requests

    /// Fetches the feed page (`GET /v1/users/{viewer}/feed`) and keeps it as ``document``.
    ///
    /// - Returns: The document fetched.
    /// - Throws: ``DeltaFeedClientError``.
    @discardableResult
    public func fetch() throws(DeltaFeedClientError) -> FeedDocument {
        let response = try send(FeedHTTPRequest(method: "GET", url: url("feed", query.items)))
        guard response.status == 200 else { throw DeltaFeedClientError.unexpected(response) }
        let fetched: FeedDocument
        do {
            fetched = try FeedDocument(parsing: response.body)
        } catch {
            throw .invalidResponse("feed: \(error)\(DeltaFeedClient.excerpt(of: response.body, around: error))")
        }
        document = fetched
        return fetched
    }

    /// Brings ``document`` up to date with a delta since its snapshot, which the server
    /// remembers (`GET /v1/users/{viewer}/feed/delta?since=…&format=…`).
    ///
    /// With `waitingUpTo` seconds (1…60), a long poll (`&wait=`): the server holds the request
    /// until the feed changes, so the call returns as soon as there is something to animate, or
    /// ``RefreshOutcome/unchanged`` after that long. Calling it again in a loop keeps the
    /// document live. The transport's timeout must be longer than the wait.
    ///
    /// - Returns: ``RefreshOutcome/unchanged`` on 304, ``RefreshOutcome/applied(_:)`` on 200
    ///   (the delta applied), ``RefreshOutcome/refetched`` on 410 (snapshot expired or unknown:
    ///   the feed is fetched whole).
    /// - Throws: ``DeltaFeedClientError/noDocument`` before the first fetch;
    ///   ``DeltaFeedClientError/apply(_:delta:)`` when the delta does not apply (the document is
    ///   left as it was; ``fetch()`` to recover); other ``DeltaFeedClientError``s.
    @discardableResult
    public func refresh(waitingUpTo seconds: Int = 0) throws(DeltaFeedClientError) -> RefreshOutcome {
        guard let document else { throw .noDocument }
        var items = [URLQueryItem(name: "since", value: document.snapshot), URLQueryItem(name: "format", value: format.rawValue)]
        if seconds > 0 { items.append(URLQueryItem(name: "wait", value: String(min(seconds, 60)))) }
        let response = try send(FeedHTTPRequest(method: "GET", url: url("feed/delta", items)))
        if response.status == 410 {
            try fetch()
            return .refetched
        }
        return try handleDelta(response, to: document)
    }

    /// What ``refreshPosting(sending:)`` puts in the request body.
    public enum PostedBody: Hashable, Sendable {
        /// Only what the server diffs against: each section's id, kind and version and each
        /// item's id and version (about a tenth of the document's bytes, for mobile uplinks).
        case structure
        /// The whole document as held.
        case document
    }

    /// Brings ``document`` up to date by sending what it holds to the server, which computes the
    /// delta from that without relying on remembered snapshots
    /// (`POST /v1/users/{viewer}/feed/delta?format=…&limit=…` with the page's query). Useful
    /// after a 410, or with servers that share no snapshot state.
    ///
    /// - Parameter body: the structure (default) or the whole document.
    /// - Returns: ``RefreshOutcome/unchanged`` or ``RefreshOutcome/applied(_:)``.
    /// - Throws: as ``refresh(waitingUpTo:)``.
    @discardableResult
    public func refreshPosting(sending body: PostedBody = .structure) throws(DeltaFeedClientError) -> RefreshOutcome {
        guard let document else { throw .noDocument }
        let items = [URLQueryItem(name: "format", value: format.rawValue)] + query.items
        let payload = body == .document ? document.json : document.structureJSON
        let response = try send(
            FeedHTTPRequest(
                method: "POST", url: url("feed/delta", items),
                headers: ["Content-Type": "application/json"], body: payload.serialized()))
        return try handleDelta(response, to: document)
    }

    private func handleDelta(_ response: FeedHTTPResponse, to document: FeedDocument) throws(DeltaFeedClientError) -> RefreshOutcome {
        switch response.status {
        case 304:
            return .unchanged
        case 200:
            let delta: FeedDelta
            do {
                delta = try FeedDelta(parsing: response.body, format: format, since: document.snapshot)
            } catch {
                throw .invalidResponse("delta: \(error)\(DeltaFeedClient.excerpt(of: response.body, around: error))")
            }
            do {
                self.document = try document.applying(delta)
            } catch {
                throw .apply(error, delta: delta)
            }
            return .applied(delta)
        default:
            throw DeltaFeedClientError.unexpected(response)
        }
    }

    /// Holds `document` from now on, as if a fetch had returned it: a page from
    /// ``live(options:)``, kept so the next ``refresh(waitingUpTo:)`` or ``live(options:)``
    /// resumes from it. It must be a page of this client's viewer and query.
    public func adopt(_ document: FeedDocument) {
        self.document = document
    }

    // MARK: - Plumbing

    /// For a JSON syntax error, the bytes around it (so a bad response can be diagnosed).
    private static func excerpt(of body: [UInt8], around error: any Error) -> String {
        guard let error = error as? JSONParseError else { return "" }
        let start = max(0, error.offset - 120)
        let end = min(body.count, error.offset + 120)
        return " (near: …\(String(decoding: body[start..<end], as: UTF8.self))…)"
    }

    /// `{baseURL}/v1/users/{viewer}/{suffix}?{items}`.
    func url(_ suffix: String, _ items: [URLQueryItem]) -> URL {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)!
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        components.path = path + "/v1/users/\(viewer)/\(suffix)"
        components.queryItems = items.isEmpty ? nil : items
        return components.url!
    }

    private func send(_ request: FeedHTTPRequest) throws(DeltaFeedClientError) -> FeedHTTPResponse {
        var request = request
        if let bearerToken { request.headers["Authorization"] = "Bearer \(bearerToken)" }
        do {
            return try transport.send(request)
        } catch {
            throw .transport("\(error)")
        }
    }
}

/// Which page of the feed a client holds and how it is laid out: the query of
/// `GET /v1/users/{id}/feed`. Deltas keep the page's parameters (the server stores them with
/// the snapshot), so a client asks for its page once.
public struct FeedQuery: Hashable, Sendable {
    /// Sections per page (1…200), or nil for the server's default (20).
    public var limit: Int?
    /// The cursor of the page (a previous page's `next_cursor`), or nil for the first page.
    public var cursor: String?
    /// The screen width in points (200…4000); when set, every item carries its cell size.
    public var width: Int?
    /// Whether ads are stacked into the preceding grid section instead of standing alone.
    public var stackAds: Bool
    /// The item and view kinds the app renders (`kinds=`): the server leaves every other kind
    /// out, so an app never meets a kind from a newer server. By default, every kind this module
    /// knows (``FeedQuery/knownKinds``); nil sends none (the server then sends every kind).
    public var kinds: [String]?
    /// The viewport's height in points (100…4000), for the page's `prefetch` hint; nil for the
    /// server's default (844).
    public var viewport: Int?

    /// Every item and view kind this version of the module knows.
    public static let knownKinds = ItemKind.allCases.map(\.rawValue)

    /// Creates a query; every member is optional.
    public init(
        limit: Int? = nil, cursor: String? = nil, width: Int? = nil, stackAds: Bool = false, kinds: [String]? = FeedQuery.knownKinds,
        viewport: Int? = nil
    ) {
        self.limit = limit
        self.cursor = cursor
        self.width = width
        self.stackAds = stackAds
        self.kinds = kinds
        self.viewport = viewport
    }

    /// The query items (`limit`, `cursor`, `width`, `stack_ads`, `kinds`, `viewport`), only those set.
    public var items: [URLQueryItem] {
        var items: [URLQueryItem] = []
        if let limit { items.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let cursor { items.append(URLQueryItem(name: "cursor", value: cursor)) }
        if let width { items.append(URLQueryItem(name: "width", value: String(width))) }
        if stackAds { items.append(URLQueryItem(name: "stack_ads", value: "true")) }
        if let kinds { items.append(URLQueryItem(name: "kinds", value: kinds.joined(separator: ","))) }
        if let viewport { items.append(URLQueryItem(name: "viewport", value: String(viewport))) }
        return items
    }
}

/// Why a ``DeltaFeedClient`` call failed.
public enum DeltaFeedClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// ``DeltaFeedClient/refresh(waitingUpTo:)`` before any ``DeltaFeedClient/fetch()``.
    case noDocument
    /// No response (connection refused, timeout…).
    case transport(String)
    /// A status the call does not expect, with the server's error code and message when the
    /// body is the usual `{"error":{"code","message"}}`.
    case unexpectedStatus(Int, code: String?, message: String?)
    /// A response body that is not what the call expects.
    case invalidResponse(String)
    /// The server's delta does not apply to the held document (a server bug, or a document
    /// changed behind the client's back).
    case apply(DeltaApplyError, delta: FeedDelta)
    /// The server ended a live stream for good, with this code: `viewer_not_found` when the
    /// viewer was deleted (`event: gone`).
    case gone(String)

    static func unexpected(_ response: FeedHTTPResponse) -> DeltaFeedClientError {
        let error = (try? response.json())?["error"]
        var code: String?
        var message: String?
        if case .string(let value)? = error?["code"] { code = value }
        if case .string(let value)? = error?["message"] { message = value }
        return .unexpectedStatus(response.status, code: code, message: message)
    }

    /// A sentence saying what failed.
    public var description: String {
        switch self {
        case .noDocument: "no feed held yet: call fetch() first"
        case .transport(let reason): "no response: \(reason)"
        case .unexpectedStatus(let status, let code, let message):
            "HTTP \(status)" + (code.map { " \($0)" } ?? "") + (message.map { ": \($0)" } ?? "")
        case .invalidResponse(let reason): "invalid response: \(reason)"
        case .apply(let error, _): "the delta does not apply: \(error)"
        case .gone(let code): "the server ended the live stream for good: \(code)"
        }
    }
}
