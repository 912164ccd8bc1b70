import Gzip

/// How the server compresses answers: gzip (RFC 9110 §8.4.1.3), negotiated per request from
/// `Accept-Encoding`, for bodies of a compressible type (JSON, text, JavaScript, YAML, SVG) of at
/// least ``minimumSize`` bytes that gzip makes smaller. Every answer of a compressible type says
/// `Vary: Accept-Encoding`, compressed or not (and so does a 304, which stands for such an
/// answer), so a cache keeps the two apart. `ETag`s are left as the handler set them: deltafeed's
/// name the feed's state (a snapshot id, a file's hash), the same in either coding, and the
/// server answers no range requests, the one place a strong validator must tell codings apart. A handler that answers the same bytes many times can hand them over compressed
/// already (``HTTPResponse/gzippedBody``).
public struct ResponseCompression: Sendable, Hashable {
    /// The level, 1 (fastest) … 9 (smallest), of bodies compressed once and kept, served many
    /// times (``HTTPResponse/gzippedBody``: a feed page, a static file); 0 turns compression off.
    public var level: Int
    /// The level of bodies compressed for one answer (deltas, API answers); 0 sends them as they
    /// are. Lower than ``level`` by default: compressed on every answer, on the event loop, and
    /// small enough that a higher level saves little (level 6 against 1: 0–4 % of a delta's
    /// gzipped bytes, 11 % of a page's; BENCHMARKS.md).
    public var answerLevel: Int
    /// Bodies shorter than this go as they are: below it gzip's 18 bytes of framing and the CPU
    /// are not worth what it saves (an error body of 152 B gzips to 141; a like's delta of
    /// 254 B, to about 195).
    public var minimumSize: Int

    /// Compression at `level` for kept bodies and `answerLevel` for the others, for bodies of at
    /// least `minimumSize` bytes.
    public init(level: Int = 6, answerLevel: Int = 1, minimumSize: Int = 200) {
        self.level = level
        self.answerLevel = answerLevel
        self.minimumSize = minimumSize
    }

    /// Whether answers are ever compressed.
    public var isEnabled: Bool { level > 0 }

    /// Whether `request`'s answer will be gzipped if its body is large enough: compression is on
    /// and the client accepts gzip. A handler that keeps gzipped bytes asks this first.
    public func gzips(for request: HTTPRequest) -> Bool {
        isEnabled && AcceptEncoding(request.headers["Accept-Encoding"]).accepts(.gzip)
    }

    /// Whether a body of `contentType` is worth compressing (not images, not already compressed
    /// formats).
    ///
    /// Asked of every answer (it decides `Vary`), so it reads the bytes in place: no lowercased
    /// copy, no trimming copy (the String version cost about 10,000 instructions a request).
    package static func isCompressible(contentType: String?) -> Bool {
        guard let contentType else { return false }
        if contentType == "application/json" { return true }  // nearly every answer: one compare
        var type = contentType.utf8[...]
        if let semicolon = type.firstIndex(of: UInt8(ascii: ";")) { type = type[..<semicolon] }
        while type.first == UInt8(ascii: " ") { type = type.dropFirst() }
        while type.last == UInt8(ascii: " ") { type = type.dropLast() }
        func lowered(_ byte: UInt8) -> UInt8 { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte }
        func starts(_ bytes: Substring.UTF8View, with prefix: StaticString) -> Bool {
            let prefix = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
            return bytes.count >= prefix.count && zip(bytes, prefix).allSatisfy { lowered($0) == $1 }
        }
        func equals(_ literal: StaticString) -> Bool { type.count == literal.utf8CodeUnitCount && starts(type, with: literal) }
        return starts(type, with: "text/") || equals("application/json") || equals("application/javascript") || equals("application/yaml")
            || equals("application/x-yaml") || equals("image/svg+xml")
            || (type.count >= 5 && starts(type[type.index(type.endIndex, offsetBy: -5)...], with: "+json"))
    }

    /// The body to send for a request that accepts what `acceptEncoding` reads (asked only for a
    /// body large enough to compress): the gzipped bytes and true, or the body as it is and false.
    func encode(_ response: HTTPResponse, acceptEncoding: () -> String?) -> (body: [UInt8], gzipped: Bool) {
        guard isEnabled, response.body.count >= minimumSize, response.header("Content-Encoding") == nil,
            AcceptEncoding(acceptEncoding()).accepts(.gzip)
        else { return (response.body, false) }
        let kept = response.gzippedBody
        guard kept != nil || answerLevel > 0,
            let compressed = kept ?? Gzip.compress(response.body, level: answerLevel), compressed.count < response.body.count
        else { return (response.body, false) }
        return (compressed, true)
    }
}

/// An `Accept-Encoding` header (RFC 9110 §12.5.3): codings with q-values. A coding is acceptable
/// when it is listed with q > 0, or not listed and `*` is (with q > 0); `identity` is acceptable
/// unless refused. Malformed entries are ignored; a missing header accepts only identity here
/// (the RFC allows any coding then, but a client that sends none rarely expects gzip).
struct AcceptEncoding: Sendable {
    enum Coding: Hashable {
        case gzip
    }

    /// The q-values of the names that can accept gzip, each from its first mention.
    private var gzip: Double?
    private var xGzip: Double?
    private var any: Double?

    /// Reads the header's bytes in place: it comes with nearly every request, and reading it as
    /// `Character`s (trimmed and lowercased copies of each entry) cost more than the rest of the
    /// header's handling. A name with bytes outside ASCII cannot be one asked for, so its entry
    /// is skipped.
    init(_ header: String?) {
        guard let header else { return }
        for entry in header.utf8.split(separator: UInt8(ascii: ",")) {
            var parts = entry.split(separator: UInt8(ascii: ";"))[...]
            guard let first = parts.popFirst() else { continue }
            let name = Self.trimmed(first)
            guard !name.isEmpty, name.allSatisfy(Self.isNameByte) else { continue }
            var weight = 1.0
            var valid = true
            for parameter in parts {
                guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")),
                    Self.named(Self.trimmed(parameter[..<equals]), "q")
                else {
                    valid = false
                    break
                }
                let text = Self.trimmed(parameter[parameter.index(after: equals)...])
                guard text.allSatisfy({ Self.isDigit($0) || $0 == UInt8(ascii: ".") }),
                    let value = Double(String(decoding: text, as: UTF8.self)), (0...1).contains(value)
                else {
                    valid = false
                    break
                }
                weight = value
            }
            guard valid else { continue }
            if Self.named(name, "gzip") {
                gzip = gzip ?? weight
            } else if Self.named(name, "x-gzip") {
                xGzip = xGzip ?? weight
            } else if Self.named(name, "*") {
                any = any ?? weight
            }
        }
    }

    func accepts(_ coding: Coding) -> Bool {
        switch coding {
        case .gzip:
            if let weight = gzip ?? xGzip ?? any { return weight > 0 }
            return false
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        let lowered = byte | 0x20
        return isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(lowered) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "*") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
    }

    /// `bytes` without the spaces and tabs around them.
    private static func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        var bytes = bytes
        func isBlank(_ byte: UInt8?) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while isBlank(bytes.first) { bytes = bytes.dropFirst() }
        while isBlank(bytes.last) { bytes = bytes.dropLast() }
        return bytes
    }

    /// Whether `bytes` are `name` in any case (short names: a small string, no allocation).
    private static func named(_ bytes: Substring.UTF8View, _ name: String) -> Bool {
        bytes.count == name.utf8.count && asciiCaseInsensitiveEquals(String(Substring(bytes)), name)
    }
}
