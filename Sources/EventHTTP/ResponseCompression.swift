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
    /// header's handling; split into arrays of entries and parameters it still cost about 3,100
    /// instructions a changed poll (callgrind), so entries and parameters are ranges of the one
    /// buffer. A name with bytes outside ASCII cannot be one asked for, so its entry is skipped.
    init(_ header: String?) {
        guard var header else { return }
        header.withUTF8 { bytes in
            var start = 0
            while start <= bytes.count {
                let end = Self.next(UInt8(ascii: ","), in: bytes, from: start, to: bytes.count)
                read(entry: bytes, start, end)
                start = end + 1
            }
        }
    }

    /// One entry, `name *( ";" parameter )`, at `bytes[start..<end]`.
    private mutating func read(entry bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) {
        let nameEnd = Self.next(UInt8(ascii: ";"), in: bytes, from: start, to: end)
        let name = Self.trimmed(bytes, start, nameEnd)
        guard !name.isEmpty, name.allSatisfy({ Self.isNameByte(bytes[$0]) }) else { return }
        var weight = 1.0
        var parameterStart = nameEnd + 1
        while parameterStart <= end {
            let parameterEnd = Self.next(UInt8(ascii: ";"), in: bytes, from: parameterStart, to: end)
            defer { parameterStart = parameterEnd + 1 }
            // An empty parameter (`gzip;`, `gzip;;q=1`) is skipped, as splitting the entry did.
            guard parameterStart < parameterEnd else { continue }
            let equals = Self.next(UInt8(ascii: "="), in: bytes, from: parameterStart, to: parameterEnd)
            guard equals < parameterEnd, Self.named(bytes, Self.trimmed(bytes, parameterStart, equals), "q") else { return }
            let text = Self.trimmed(bytes, equals + 1, parameterEnd)
            guard text.allSatisfy({ Self.isDigit(bytes[$0]) || bytes[$0] == UInt8(ascii: ".") }),
                let value = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[text]), as: UTF8.self)), (0...1).contains(value)
            else { return }
            weight = value
        }
        if Self.named(bytes, name, "gzip") {
            gzip = gzip ?? weight
        } else if Self.named(bytes, name, "x-gzip") {
            xGzip = xGzip ?? weight
        } else if Self.named(bytes, name, "*") {
            any = any ?? weight
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

    /// The index of the first `byte` in `bytes[start..<end]`, or `end`.
    private static func next(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        var index = start
        while index < end, bytes[index] != byte { index += 1 }
        return index
    }

    /// `start..<end` without the spaces and tabs at either end.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Range<Int> {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var (start, end) = (start, end)
        while start < end, isBlank(bytes[start]) { start += 1 }
        while end > start, isBlank(bytes[end - 1]) { end -= 1 }
        return start..<end
    }

    /// Whether `bytes[range]` are `name` (ASCII) in any case.
    private static func named(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ name: StaticString) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        let expected = name.utf8Start
        // `| 0x20` folds letters' case. It also takes a CR for `-` and a LF for `*`, but a coding's
        // name has been checked for name bytes first, and `q` is a letter.
        for (offset, index) in range.enumerated() where bytes[index] | 0x20 != expected[offset] | 0x20 {
            return false
        }
        return true
    }
}
