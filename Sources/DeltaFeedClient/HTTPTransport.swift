import Dispatch
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// An HTTP request as the client sends it.
public struct FeedHTTPRequest: Sendable, Hashable {
    /// `GET`, `POST`, `PATCH`, `PUT`, `DELETE`…
    public var method: String
    /// The absolute URL.
    public var url: URL
    /// Header fields to send (names as written; `Content-Length` is added by the transport).
    public var headers: [String: String]
    /// The body, if any.
    public var body: [UInt8]?

    /// Creates a request.
    public init(method: String, url: URL, headers: [String: String] = [:], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// An HTTP response as the client receives it.
public struct FeedHTTPResponse: Sendable, Hashable {
    /// The status code.
    public var status: Int
    /// Header fields, names lower-cased.
    public var headers: [String: String]
    /// The body (empty for 204 and 304).
    public var body: [UInt8]

    /// Creates a response; header names are lower-cased.
    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// The value of header `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }

    /// The body parsed as JSON.
    ///
    /// - Throws: ``JSONParseError``.
    public func json() throws(JSONParseError) -> JSONValue {
        try JSONValue(parsing: body)
    }
}

/// Sends one request and waits for its response. The client's only contact with the network,
/// so an app can plug in its own stack (or a test a fake).
public protocol FeedHTTPTransport: Sendable {
    /// Sends `request` and blocks until the whole response has arrived.
    ///
    /// - Throws: ``FeedHTTPTransportError`` (or the transport's own error) when no response
    ///   arrives; an HTTP error status is a response, not an error.
    func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse
}

/// Why a transport got no response.
public struct FeedHTTPTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong (connection refused, timeout…).
    public var reason: String

    /// Creates a transport error.
    public init(reason: String) {
        self.reason = reason
    }

    /// The reason.
    public var description: String { reason }
}

/// The default transport: Foundation's `URLSession` (on Linux, `FoundationNetworking`, backed by
/// libcurl), made synchronous with a semaphore.
///
/// It uses an ephemeral session with no URL cache and no cookies, so conditional requests
/// (`If-None-Match`) reach the server and `304 Not Modified` comes back as is. Redirects are
/// followed by `URLSession`. Connections are kept alive between requests.
///
/// Do not call ``send(_:)`` from the session's delegate queue (it would wait for itself); any
/// other thread is fine, several at once included.
public final class URLSessionTransport: FeedHTTPTransport {
    /// The session requests go through.
    public let session: URLSession
    /// Seconds to wait for a response before giving up.
    public let timeout: TimeInterval

    /// Creates a transport with its own ephemeral session.
    ///
    /// - Parameter timeout: seconds to wait for each response (default 30).
    public init(timeout: TimeInterval = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForRequest = timeout
        self.session = URLSession(configuration: configuration)
        self.timeout = timeout
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Sends `request` with a data task and waits for it.
    ///
    /// - Throws: ``FeedHTTPTransportError`` with `URLSession`'s error, or on timeout.
    public func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if let body = request.body {
            urlRequest.httpBody = Data(body)
        }
        let outcome = TaskOutcome()
        let task = session.dataTask(with: urlRequest) { data, response, error in
            outcome.finish(data: data, response: response, error: error)
        }
        task.resume()
        // The session's own timeout fires first; this one only guards against a lost callback.
        guard outcome.done.wait(timeout: .now() + timeout + 5) == .success else {
            task.cancel()
            throw FeedHTTPTransportError(reason: "\(request.method) \(request.url): no response within \(Int(timeout)) s")
        }
        if let error = outcome.error {
            throw FeedHTTPTransportError(reason: "\(request.method) \(request.url): \(error.localizedDescription)")
        }
        guard let http = outcome.response as? HTTPURLResponse else {
            throw FeedHTTPTransportError(reason: "\(request.method) \(request.url): not an HTTP response")
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String {
                headers[name.lowercased()] = value
            }
        }
        return FeedHTTPResponse(status: http.statusCode, headers: headers, body: outcome.data.map { Array($0) } ?? [])
    }
}

/// The result of one data task, handed from URLSession's queue to the waiting thread. The
/// semaphore orders the write before the read.
private final class TaskOutcome: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private(set) var data: Data?
    private(set) var response: URLResponse?
    private(set) var error: (any Error)?

    func finish(data: Data?, response: URLResponse?, error: (any Error)?) {
        self.data = data
        self.response = response
        self.error = error
        done.signal()
    }
}
