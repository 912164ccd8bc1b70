/// A request as a handler sees it: fully read, immutable, owned by the handler's thread.
public struct HTTPRequest: Sendable {
    /// The method (`GET`, `POST`…). HEAD requests are routed as GET; see ``isHead``.
    public var method: HTTPMethod
    /// True when the client sent HEAD: the server sends the GET response's headers only.
    public var isHead: Bool
    /// The path as sent, still percent-encoded, without the query (`/v1/users/1/feed`).
    public var path: String
    /// The query, split into decoded name/value pairs in order.
    public var query: QueryParameters
    /// Path parameters captured by the route pattern, percent-decoded (`{id}` → `["id": "1"]`).
    public var pathParameters: [String: String]
    /// Request headers.
    public var headers: HTTPHeaders
    /// The body bytes (empty when none was sent).
    public var body: [UInt8]
    /// The request id: the client's `X-Request-Id` when it sent a sane one, else one made here.
    public var requestID: String
    /// The route pattern that matched (`/v1/users/{id}/feed`), for logs and metrics.
    public var route: String

    /// Creates a request; the server builds these, tests may too.
    public init(
        method: HTTPMethod, path: String, query: QueryParameters = QueryParameters(""),
        headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], requestID: String = "test",
        isHead: Bool = false
    ) {
        self.method = method
        self.isHead = isHead
        self.path = path
        self.query = query
        self.pathParameters = [:]
        self.headers = headers
        self.body = body
        self.requestID = requestID
        self.route = path
    }
}

/// The HTTP methods the server accepts.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET"
    case post = "POST"
    case put = "PUT"
    case patch = "PATCH"
    case delete = "DELETE"
    case options = "OPTIONS"
    /// Accepted so the router answers it (405 with `Allow`, or 404) instead of libevent's 501
    /// HTML page; routes are not expected to register it (a TRACE echo would reflect headers).
    case trace = "TRACE"
}

/// Request headers: name/value pairs in the order received; lookups ignore case.
public struct HTTPHeaders: Sendable, Sequence {
    private var pairs: [(name: String, value: String)]

    /// Creates headers from pairs.
    public init(_ pairs: [(String, String)] = []) {
        self.pairs = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`, compared case-insensitively.
    public subscript(_ name: String) -> String? {
        for pair in pairs where asciiCaseInsensitiveEquals(pair.name, name) {
            return pair.value
        }
        return nil
    }

    /// Makes room for `count` headers in all.
    mutating func reserveCapacity(_ count: Int) {
        pairs.reserveCapacity(count)
    }

    /// Appends a header.
    public mutating func append(name: String, value: String) {
        pairs.append((name: name, value: value))
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        pairs.makeIterator()
    }
}

/// A parsed query string (`a=1&b=x%20y`): decoded pairs in order, first value wins on lookup.
public struct QueryParameters: Sendable {
    /// The decoded pairs in order. A name without `=` has an empty value.
    public let pairs: [(name: String, value: String)]

    /// Parses a raw query string (without the `?`). `+` decodes to a space; malformed
    /// percent escapes are kept literally. Split on the bytes `&` and `=` (not on characters: a
    /// combining mark after a separator does not hide it, and no grapheme breaking is paid on
    /// every request).
    public init(_ raw: Substring) {
        // Most requests have no query: nothing to split.
        guard !raw.isEmpty else {
            self.pairs = []
            return
        }
        var raw = raw
        self.pairs = raw.withUTF8 { bytes in
            var pairs: [(name: String, value: String)] = []
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "&") { end += 1 }
                if end > start {
                    let part = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    if let eq = part.firstIndex(of: UInt8(ascii: "=")) {
                        pairs.append(
                            (
                                percentDecode(UnsafeBufferPointer(rebasing: part[..<eq]), plusAsSpace: true),
                                percentDecode(UnsafeBufferPointer(rebasing: part[(eq + 1)...]), plusAsSpace: true)
                            ))
                    } else {
                        pairs.append((percentDecode(part, plusAsSpace: true), ""))
                    }
                }
                start = end + 1
            }
            return pairs
        }
    }

    /// Parses a raw query string.
    public init(_ raw: String) {
        self.init(raw[...])
    }

    /// The first value for `name`, or nil.
    public subscript(_ name: String) -> String? {
        pairs.first(where: { $0.name == name })?.value
    }
}

/// Decodes `%XX` escapes (and `+` as space when asked). Invalid escapes stay as they are;
/// byte sequences that are not UTF-8 become U+FFFD.
public func percentDecode(_ text: Substring, plusAsSpace: Bool = false) -> String {
    var text = text
    return text.withUTF8 { percentDecode($0, plusAsSpace: plusAsSpace) }
}

/// ``percentDecode(_:plusAsSpace:)`` of UTF-8 bytes.
func percentDecode(_ utf8: UnsafeBufferPointer<UInt8>, plusAsSpace: Bool) -> String {
    if !utf8.contains(UInt8(ascii: "%")) && !(plusAsSpace && utf8.contains(UInt8(ascii: "+"))) {
        return String(decoding: utf8, as: UTF8.self)
    }
    func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(utf8.count)
    var index = 0
    while index < utf8.count {
        let byte = utf8[index]
        if byte == UInt8(ascii: "%"), index + 2 < utf8.count, let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2]) {
            out.append(high << 4 | low)
            index += 3
            continue
        }
        out.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
        index += 1
    }
    return String(decoding: out, as: UTF8.self)
}
