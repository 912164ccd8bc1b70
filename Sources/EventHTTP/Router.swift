#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
    /// A class: a match hands the route on (to the exchange, for its metrics), and copying a
    /// struct of five references retained each of them.
    final class Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        let segments: [Segment]
        let handler: HTTPHandler
        /// Its place in the order routes were added: a key for per-route state (metrics).
        let index: Int
        /// Whether any segment is a parameter (a match then builds the parameters).
        let hasParameters: Bool
        /// Each segment's bytes if it is a literal.
        let literals: [LiteralBytes?]

        init(method: HTTPMethod, pattern: String, segments: [Segment], handler: @escaping HTTPHandler, index: Int) {
            self.method = method
            self.pattern = pattern
            self.segments = segments
            self.handler = handler
            self.index = index
            self.hasParameters = segments.contains { if case .parameter = $0 { true } else { false } }
            self.literals = segments.map { segment -> LiteralBytes? in
                guard case .literal(let literal) = segment else { return nil }
                return LiteralBytes(bytes: Array(literal.utf8), isASCII: literal.utf8.allSatisfy { $0 < 0x80 })
            }
        }
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// A literal segment's bytes, and whether they are all ASCII (then byte equality is String
    /// equality).
    struct LiteralBytes: Sendable {
        let bytes: [UInt8]
        let isASCII: Bool
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

    /// ``Match`` with the route itself, for the server.
    enum Lookup {
        case found(Route, parameters: [String: String])
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    /// Routes by their number of segments (index), literal segments first within each.
    private var routesBySegmentCount: [[Route]] = []
    /// How many routes have been added.
    private(set) var count = 0

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
        while routesBySegmentCount.count <= segments.count { routesBySegmentCount.append([]) }
        routesBySegmentCount[segments.count].append(Route(method: method, pattern: pattern, segments: segments, handler: handler, index: count))
        count += 1
        // Literal segments first so `/v1/feed/latest` beats `/v1/feed/{id}`.
        routesBySegmentCount[segments.count].sort { lhs, rhs in
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
        switch lookup(method: method, path: path) {
        case .found(let route, let parameters): .found(handler: route.handler, pattern: route.pattern, parameters: parameters)
        case .methodNotAllowed(let allowed): .methodNotAllowed(allowed: allowed)
        case .notFound: .notFound
        }
    }

    /// ``match(method:path:)`` with the route that matched.
    ///
    /// Runs for every request, so it reads the path's bytes in place: the segments are found by
    /// bytes (on the stack, no array of Substrings), literal segments compared by bytes, and
    /// parameters are built only for a route that has them.
    func lookup(method: HTTPMethod, path: String) -> Lookup {
        var allowed: [String] = []
        var found: Route?
        var parameters: [String: String] = [:]
        forEachRoute(matching: path) { route, segment in
            if route.method == method {
                found = route
                if route.hasParameters { parameters = route.parameters(segment) }
                return false
            }
            if !allowed.contains(route.method.rawValue) {
                allowed.append(route.method.rawValue)
                if route.method == .get { allowed.append("HEAD") }
            }
            return true
        }
        if let found { return .found(found, parameters: parameters) }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    /// The methods that have a route for the raw `path` (GET brings HEAD), as a 405's `Allow`
    /// lists them; empty when nothing matches the path.
    public func allowedMethods(path: String) -> [String] {
        var allowed: [String] = []
        forEachRoute(matching: path) { route, _ in
            if !allowed.contains(route.method.rawValue) {
                allowed.append(route.method.rawValue)
                if route.method == .get { allowed.append("HEAD") }
            }
            return true
        }
        return allowed
    }

    /// Calls `body` with each route whose pattern fits `path`, in order (with a function giving
    /// the path's segment at an index); stops when `body` returns false.
    private func forEachRoute(matching path: String, _ body: (Route, (Int) -> Substring) -> Bool) {
        // No route has more segments than this.
        let most = routesBySegmentCount.count - 1
        guard most >= 0 else { return }
        var path = path
        path.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: most + 1) { ranges in
                // Segments are the runs between slashes, empty ones skipped (`//a/` is `["a"]`).
                var count = 0
                var start = -1
                for offset in 0..<bytes.count {
                    if bytes[offset] == UInt8(ascii: "/") {
                        if start >= 0 {
                            guard count < most else { return }
                            ranges[count] = start..<offset
                            count += 1
                            start = -1
                        }
                    } else if start < 0 {
                        start = offset
                    }
                }
                if start >= 0 {
                    guard count < most else { return }
                    ranges[count] = start..<bytes.count
                    count += 1
                }
                func segment(_ index: Int) -> Substring {
                    Substring(String(decoding: UnsafeBufferPointer(rebasing: bytes[ranges[index]]), as: UTF8.self))
                }
                let candidates = routesBySegmentCount[count]
                for route in candidates where route.fits(bytes, ranges) {
                    guard body(route, segment) else { return }
                }
            }
        }
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

    /// Whether the path whose segments are `ranges` of `bytes` fits this pattern. Literals are
    /// compared by bytes when both sides are ASCII; otherwise as Strings are (canonical
    /// equivalence), as they always were.
    func fits(_ bytes: UnsafeBufferPointer<UInt8>, _ ranges: UnsafeMutableBufferPointer<Range<Int>>) -> Bool {
        for index in literals.indices {
            guard let literal = literals[index] else { continue }
            let part = UnsafeBufferPointer(rebasing: bytes[ranges[index]])
            let equal = literal.bytes.withUnsafeBufferPointer { literalBytes in
                if literalBytes.count == part.count, let left = literalBytes.baseAddress, let right = part.baseAddress,
                    memcmp(left, right, part.count) == 0
                {
                    return true
                }
                if literal.isASCII && part.allSatisfy({ $0 < 0x80 }) { return false }
                return String(decoding: literalBytes, as: UTF8.self) == String(decoding: part, as: UTF8.self)
            }
            if !equal { return false }
        }
        return true
    }

    /// The path parameters, percent-decoded, from the path's segments.
    func parameters(_ segment: (Int) -> Substring) -> [String: String] {
        var parameters: [String: String] = [:]
        for (index, part) in segments.enumerated() {
            if case .parameter(let name) = part {
                parameters[name] = percentDecode(segment(index))
            }
        }
        return parameters
    }
}
