/// Reads the raw bytes of a request head as they arrive, before libevent parses them, for what
/// parsing hides: how lines end (libevent takes a bare LF as a line end), folded lines (libevent
/// joins them), NUL bytes (libevent's C strings stop at them), and the method as spelled (libevent
/// keeps no name for a method it does not know).
///
/// Feed it the stream from the first byte of a head; it stops at the blank line that ends the head
/// (``inHead`` turns false) and ignores what follows until ``startNextHead()``.
package struct RequestHeadScanner {
    package struct Findings: Equatable {
        /// A line ended with LF alone.
        package var bareLineFeed = false
        /// A CR not followed by LF.
        package var bareCarriageReturn = false
        /// A header line starting with a space or tab (obs-fold).
        package var foldedLine = false
        /// A NUL byte.
        package var nulByte = false
        /// The head ran past the scanner's limit without ending.
        package var overlong = false
        /// The first token of the request line as sent, held inline: an array would be one more
        /// allocation for every request, and the name is read only for a method libevent does
        /// not know.
        private var methodBytes = SIMD32<UInt8>()
        private var methodCount = 0

        /// The first token of the request line as sent, at most 32 bytes.
        package var method: [UInt8] {
            (0..<methodCount).map { methodBytes[$0] }
        }

        package init(
            bareLineFeed: Bool = false, bareCarriageReturn: Bool = false, foldedLine: Bool = false, nulByte: Bool = false,
            overlong: Bool = false, method: [UInt8] = []
        ) {
            self.bareLineFeed = bareLineFeed
            self.bareCarriageReturn = bareCarriageReturn
            self.foldedLine = foldedLine
            self.nulByte = nulByte
            self.overlong = overlong
            for byte in method.prefix(32) { appendMethodByte(byte) }
        }

        /// How many bytes of the method have been kept.
        var methodLength: Int { methodCount }

        mutating func appendMethodByte(_ byte: UInt8) {
            methodBytes[methodCount] = byte
            methodCount += 1
        }
    }

    package private(set) var findings = Findings()
    /// True until the blank line that ends the head has been seen.
    package private(set) var inHead = true
    /// The most bytes scanned for one head; past it ``Findings/overlong`` is set and scanning stops.
    package let limit: Int
    private var lineIndex = 0
    private var lineLength = 0
    private var afterCR = false
    /// Bytes of the current head scanned so far.
    package private(set) var scanned = 0

    package init(limit: Int) {
        self.limit = limit
    }

    /// Scans the next bytes of the stream. Returns how many of them belong to the head: all of
    /// them while it goes on, fewer when it ends inside `bytes`, 0 once it has ended.
    ///
    /// Runs over every byte of every request head: the state lives in locals during the loop,
    /// bytes inside a line (not its first, not part of the method, not control bytes) are
    /// counted eight at a time, and any other byte goes through the rules one by one.
    @discardableResult
    package mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard inHead, let base = bytes.baseAddress else { return 0 }
        let count = bytes.count
        var scanned = self.scanned
        var lineIndex = self.lineIndex
        var lineLength = self.lineLength
        var afterCR = self.afterCR
        var consumed = count
        var index = 0
        while index < count {
            // Eight bytes at a time inside a line (past its first byte and the method, after no
            // CR): if none of them is below 0x0E (no CR, LF, NUL or tab) and the limit is not
            // within them, each would only be counted.
            if index + 8 <= count && !afterCR && lineLength > 0 && (lineIndex > 0 || lineLength != findings.methodLength)
                && scanned + 8 <= limit
            {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                // Sets a byte's high bit where that byte is below 0x0E (exact when no byte
                // below it has been borrowed from, i.e. when the answer is "none").
                if (word &- 0x0E0E_0E0E_0E0E_0E0E) & ~word & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                    scanned += 8
                    lineLength += 8
                    continue
                }
            }
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            index += 1
            scanned += 1
            // The common byte: inside a line after its first byte and past the method, nothing
            // to note (the branches below would only count it).
            if byte > 0x0D && !afterCR && lineLength > 0 && (lineIndex > 0 || lineLength != findings.methodLength) {
                lineLength += 1
            } else if byte == 0x0A {
                if !afterCR { findings.bareLineFeed = true }
                afterCR = false
                if lineLength == 0 {
                    inHead = false
                    consumed = index
                    break
                }
                lineIndex += 1
                lineLength = 0
                continue
            } else {
                if afterCR {
                    // The CR before this byte was not a line end.
                    findings.bareCarriageReturn = true
                    afterCR = false
                    lineLength += 1
                }
                if byte == 0x0D {
                    afterCR = true
                } else {
                    if byte == 0 { findings.nulByte = true }
                    if lineLength == 0 && lineIndex > 0 && (byte == 0x20 || byte == 0x09) { findings.foldedLine = true }
                    if lineIndex == 0 && lineLength == findings.methodLength && byte != 0x20 && findings.methodLength < 32 {
                        findings.appendMethodByte(byte)
                    }
                    lineLength += 1
                }
            }
            if scanned > limit {
                findings.overlong = true
                inHead = false
                consumed = index
                break
            }
        }
        self.scanned = scanned
        self.lineIndex = lineIndex
        self.lineLength = lineLength
        self.afterCR = afterCR
        return consumed
    }

    /// Scans bytes from an array (tests, and leftovers copied out of a buffer).
    @discardableResult
    package mutating func scan(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { scan($0) }
    }

    /// The next bytes start a new head.
    package mutating func startNextHead() {
        self = RequestHeadScanner(limit: limit)
    }
}

/// How a request's body is framed, once its headers passed ``checkFraming(_:findings:maxBodySize:)``.
package enum BodyFraming: Equatable {
    /// No Content-Length, no Transfer-Encoding.
    case none
    /// `Content-Length: n`.
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
}

/// Checks a request head the way RFC 9112 asks a server to before it reads a body: anything two
/// parsers (a proxy and this server) could frame differently is refused, so no request can be
/// smuggled behind another.
///
/// - Returns: the body's framing, or the error to answer (the connection is then closed).
package func checkFraming(_ headers: HTTPHeaders, findings: RequestHeadScanner.Findings, maxBodySize: Int) -> Result<BodyFraming, HTTPError> {
    func malformed(_ message: String) -> Result<BodyFraming, HTTPError> {
        .failure(.malformedRequest(message))
    }
    if findings.overlong {
        return .failure(HTTPError(status: 431, code: "headers_too_large", message: "The request line and headers are too large."))
    }
    if findings.bareLineFeed { return malformed("Every line of the request head must end with CRLF.") }
    if findings.bareCarriageReturn { return malformed("A CR in the request head must be followed by LF.") }
    if findings.nulByte { return malformed("The request head contains a NUL byte.") }
    if findings.foldedLine { return malformed("Folded header lines (obs-fold) are not accepted.") }

    var contentLengths: [String] = []
    var transferEncodings: [String] = []
    var expectation: String?
    for (name, value) in headers {
        guard isToken(name) else {
            return malformed("Header name \(describe(name)) is not a token (no spaces before the colon).")
        }
        guard isFieldValue(value) else {
            return malformed("Header \(name) has a control character in its value.")
        }
        if asciiCaseInsensitiveEquals(name, "Content-Length") { contentLengths.append(value) }
        if asciiCaseInsensitiveEquals(name, "Transfer-Encoding") { transferEncodings.append(value) }
        if asciiCaseInsensitiveEquals(name, "Expect") { expectation = value }
    }
    if contentLengths.count > 1 { return malformed("Content-Length must appear once.") }
    if transferEncodings.count > 1 { return malformed("Transfer-Encoding must appear once.") }
    if let expectation, !asciiCaseInsensitiveEquals(expectation, "100-continue") {
        return .failure(HTTPError(status: 417, code: "expectation_failed", message: "Only Expect: 100-continue is supported."))
    }
    if let encoding = transferEncodings.first {
        if !contentLengths.isEmpty { return malformed("Transfer-Encoding and Content-Length must not both be sent.") }
        guard asciiCaseInsensitiveEquals(encoding, "chunked") else {
            return malformed("Transfer-Encoding must be exactly chunked.")
        }
        return .success(.chunked)
    }
    guard let text = contentLengths.first else { return .success(.none) }
    let digits = text.utf8
    guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
        return malformed("Content-Length must be decimal digits only.")
    }
    // Past 18 digits the value may not fit an Int; it is over any body limit anyway.
    let length = digits.count > 18 ? Int.max : Int(text)!
    if length > maxBodySize {
        return .failure(.bodyTooLarge(limit: maxBodySize))
    }
    return .success(.length(length))
}

/// RFC 9110 token: one or more of `!#$%&'*+-.^_`|~`, digits and letters.
package func isToken(_ text: String) -> Bool {
    // Every header name of every request passes here: its bytes are read in place.
    var text = text
    return text.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy(isTokenByte) }
}

/// Whether `byte` may be part of an RFC 9110 token.
@inline(__always)
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case 0..<64: (0x03ff_6cfa_0000_0000 as UInt64) >> UInt64(byte) & 1 == 1
    case 64..<128: (0x57ff_ffff_c7ff_fffe as UInt64) >> UInt64(byte - 64) & 1 == 1
    default: false
    }
}

/// Whether a header value has no control character but tab (no C0 control, no DEL).
func isFieldValue(_ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in bytes.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) } }
}

/// A header name for an error message: quoted, control characters escaped, at most 40 bytes.
private func describe(_ name: String) -> String {
    "\"" + escapedForLog(String(name.prefix(40))) + "\""
}

/// `text` with what a terminal would interpret escaped: C0 controls, DEL and C1 controls as
/// `\xHH` or `\u{HH}`, and the backslash doubled, so a logged line is one line and shows
/// exactly what was received.
package func escapedForLog(_ text: String) -> String {
    let needsEscaping = text.unicodeScalars.contains { scalar in
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\\"
    }
    guard needsEscaping else { return text }
    var out = ""
    out.reserveCapacity(text.utf8.count + 16)
    for scalar in text.unicodeScalars {
        switch scalar.value {
        case 0x5C:
            out += "\\\\"
        case 0..<0x20, 0x7F:
            out += "\\x" + hexByte(UInt8(scalar.value))
        case 0x80...0x9F:
            out += "\\u{" + hexByte(UInt8(scalar.value)) + "}"
        default:
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

private func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}
