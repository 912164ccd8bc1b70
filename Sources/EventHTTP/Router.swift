/// Answers one request on the worker thread that read it. Throw ``HTTPError`` to answer with an
/// error; any other error becomes a 500.
public typealias HTTPHandler = @Sendable (HTTPRequest) throws -> HTTPResponse

/// Maps method + path pattern to handlers.
///
/// Patterns are `/`-separated segments; a segment `{name}` captures one non-empty path segment
/// (percent-decoded) as a path parameter. Literal segments win over parameters when both match.
/// A path that matches a pattern but not its method is a 405 with an `Allow` header; HEAD is
/// answered by the GET route. Build the router before starting the server; it is immutable
/// while serving.
public struct Router: Sendable {
    struct Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        let segments: [Segment]
        let handler: HTTPHandler
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// The result of matching a request line.
    public enum Match {
        /// A route matched: its handler, pattern and captured parameters.
        case found(handler: HTTPHandler, pattern: String, parameters: [String: String])
        /// The path matched, the method did not; the methods that would.
        case methodNotAllowed(allowed: [String])
        /// Nothing matched.
        case notFound
    }

    private var routesBySegmentCount: [Int: [Route]] = [:]

    /// Creates an empty router.
    public init() {}

    /// Adds a route. A later route with the same method and pattern replaces nothing: the
    /// first one added wins, so register specific routes first.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping HTTPHandler) {
        let segments = Router.split(pattern[...]).map { segment -> Segment in
            if segment.hasPrefix("{") && segment.hasSuffix("}") {
                return .parameter(String(segment.dropFirst().dropLast()))
            }
            return .literal(String(segment))
        }
        routesBySegmentCount[segments.count, default: []].append(
            Route(method: method, pattern: pattern, segments: segments, handler: handler))
        // Literal segments first so `/v1/feed/latest` beats `/v1/feed/{id}`.
        routesBySegmentCount[segments.count]!.sort { lhs, rhs in
            lhs.specificity > rhs.specificity
        }
    }

    /// Adds a GET route (HEAD is answered by it too).
    public mutating func get(_ pattern: String, _ handler: @escaping HTTPHandler) { add(.get, pattern, handler) }
    /// Adds a POST route.
    public mutating func post(_ pattern: String, _ handler: @escaping HTTPHandler) { add(.post, pattern, handler) }
    /// Adds a PUT route.
    public mutating func put(_ pattern: String, _ handler: @escaping HTTPHandler) { add(.put, pattern, handler) }
    /// Adds a PATCH route.
    public mutating func patch(_ pattern: String, _ handler: @escaping HTTPHandler) { add(.patch, pattern, handler) }
    /// Adds a DELETE route.
    public mutating func delete(_ pattern: String, _ handler: @escaping HTTPHandler) { add(.delete, pattern, handler) }

    /// Finds the route for `method` and the raw (still percent-encoded) `path`.
    ///
    /// - Complexity: O(routes with the same segment count × segments).
    public func match(method: HTTPMethod, path: String) -> Match {
        let segments = Router.split(path[...])
        guard let candidates = routesBySegmentCount[segments.count] else { return .notFound }
        var allowed: [String] = []
        for route in candidates {
            guard let parameters = route.capture(segments) else { continue }
            if route.method == method {
                return .found(handler: route.handler, pattern: route.pattern, parameters: parameters)
            }
            if !allowed.contains(route.method.rawValue) {
                allowed.append(route.method.rawValue)
                if route.method == .get { allowed.append("HEAD") }
            }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    /// The methods that have a route for the raw `path` (GET brings HEAD), as a 405's `Allow`
    /// lists them; empty when nothing matches the path.
    public func allowedMethods(path: String) -> [String] {
        let segments = Router.split(path[...])
        var allowed: [String] = []
        for route in routesBySegmentCount[segments.count] ?? [] where route.capture(segments) != nil {
            if !allowed.contains(route.method.rawValue) {
                allowed.append(route.method.rawValue)
                if route.method == .get { allowed.append("HEAD") }
            }
        }
        return allowed
    }

    /// Path segments without empty ones (`//a/` → `["a"]`).
    static func split(_ path: Substring) -> [Substring] {
        // By bytes: splitting by Character walked grapheme boundaries on every request.
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map { Substring($0) }
    }
}

extension Router.Route {
    /// How many literal segments the pattern has; more literals = more specific.
    var specificity: Int {
        segments.reduce(0) { count, segment in
            if case .literal = segment { return count + 1 }
            return count
        }
    }

    /// The path parameters if `path` fits this pattern.
    func capture(_ path: [Substring]) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, path) {
            switch segment {
            case .literal(let literal):
                if literal != part { return nil }
            case .parameter(let name):
                parameters[name] = percentDecode(part)
            }
        }
        return parameters
    }
}
