/// A minimal append-only JSON byte writer: enough to render error bodies and small documents
/// without Foundation on the hot path.
///
/// Strings are escaped per RFC 8259 the way RFC 8785 (and JavaScript's `JSON.stringify`) does:
/// `"` `\` and control characters (`\b` `\f` `\n` `\r` `\t`, the others as `\u00xx`);
/// everything else is written as UTF-8 unchanged.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8] { _bytes }

    /// Stored under its own name so that the small appends below can be inlined into callers:
    /// called across modules, a one-byte literal or a one-digit number cost about 90
    /// instructions, and a delta writes hundreds of them.
    @usableFromInline
    internal var _bytes: [UInt8] = []

    /// Creates an empty writer with room for `capacity` bytes.
    public init(capacity: Int = 128) {
        _bytes.reserveCapacity(capacity)
    }

    /// Appends `text` as is (it must already be valid JSON syntax).
    public mutating func raw(_ text: String) {
        // In place for a native string (every literal): appending the UTF-8 view as a sequence
        // cost about 200 instructions for a one-byte literal (callgrind), and an answer writes
        // hundreds of them.
        utf8Bytes(of: text) { _bytes.append(contentsOf: $0) }
    }

    /// Appends a literal as is (it must be valid JSON syntax): its bytes straight from the
    /// binary, without `raw`'s look at a string's storage. Inlinable: punctuation (`[`, `,`,
    /// `":`) becomes a few appends in the caller, where a call cost about 90 instructions.
    @inlinable
    public mutating func literal(_ text: StaticString) {
        let count = text.utf8CodeUnitCount
        if count <= Self.bytewiseLimit, text.hasPointerRepresentation {
            let start = text.utf8Start
            for index in 0..<count { _bytes.append(start[index]) }
            return
        }
        text.withUTF8Buffer { _bytes.append(contentsOf: $0) }
    }

    /// Up to this many bytes (of a literal, of a number's digits) are appended one by one rather
    /// than as a buffer: appending a buffer cost about 140 instructions whatever its length.
    @usableFromInline
    internal static var bytewiseLimit: Int { 4 }

    /// Appends raw bytes as is.
    public mutating func raw(bytes other: some Sequence<UInt8>) {
        _bytes.append(contentsOf: other)
    }

    /// Appends `value` as a JSON string literal, quoted and escaped.
    public mutating func string(_ value: String) {
        appendJSONString(value, to: &_bytes)
    }

    /// Appends an integer.
    @inlinable
    public mutating func int(_ value: Int) {
        int(Int64(value))
    }

    /// Appends an integer.
    @inlinable
    public mutating func int(_ value: Int32) {
        int(Int64(value))
    }

    /// Appends an integer. The other widths come here: a generic writer over `BinaryInteger`,
    /// called from other modules unspecialised, cost about 500 instructions a number through
    /// witness tables (callgrind), and an answer writes dozens.
    @inlinable
    public mutating func int(_ value: Int64) {
        // Indexes and counts are mostly one or two digits: appended in the caller.
        if value >= 0, value < 100 {
            if value >= 10 { _bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10)) }
            _bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
            return
        }
        longInt(value)
    }

    /// ``int(_:)`` of a number outside 0…99.
    @usableFromInline
    internal mutating func longInt(_ value: Int64) {
        // Digits into a stack buffer from the least significant, then appended once: neither a
        // `String` per number nor the buffer reversed in place.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var position = buffer.count
            var magnitude = value.magnitude
            repeat {
                position -= 1
                buffer[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                position -= 1
                buffer[position] = UInt8(ascii: "-")
            }
            if buffer.count - position <= Self.bytewiseLimit {
                for index in position..<buffer.count { _bytes.append(buffer[index]) }
            } else {
                _bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[position...]))
            }
        }
    }

    /// Appends an integer of any other width (`UInt64` beyond `Int64` as its decimal text).
    public mutating func int<T: BinaryInteger>(_ value: T) {
        if let signed = Int64(exactly: value) { return int(signed) }
        _bytes.append(contentsOf: String(value).utf8)
    }

    /// Appends an array of integers, `[1,2,3]`.
    public mutating func ints(_ values: some Sequence<Int>) {
        _bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { _bytes.append(UInt8(ascii: ",")) }
            first = false
            int(value)
        }
        _bytes.append(UInt8(ascii: "]"))
    }

    /// Appends `true` or `false`.
    public mutating func bool(_ value: Bool) {
        if value { literal("true") } else { literal("false") }
    }

    /// Appends `null`.
    public mutating func null() {
        literal("null")
    }

    /// Appends `"name":`, the start of an object member.
    public mutating func key(_ name: String) {
        string(name)
        _bytes.append(UInt8(ascii: ":"))
    }

    /// Appends a string or `null`.
    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { null() }
    }
}

/// Appends `value` as a JSON string literal per RFC 8259: quoted, with `"`, `\` and control
/// characters escaped as RFC 8785 does (so a client's `JSON.stringify` writes the same bytes)
/// and everything else written as UTF-8. The one escaper of this module.
func appendJSONString(_ value: String, to output: inout [UInt8]) {
    output.append(UInt8(ascii: "\""))
    // Runs that need no escape (nearly every string: ids, titles, URLs) are copied whole. Byte
    // by byte, with the escapes' little arrays made for each string, a snapshot id cost about
    // 2,000 instructions (counted with callgrind), and every answer writes dozens of strings.
    utf8Bytes(of: value) { appendJSONStringBody($0, to: &output) }
    output.append(UInt8(ascii: "\""))
}

/// The escaped bytes of a JSON string literal, without its quotes.
private func appendJSONStringBody(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
    guard let base = bytes.baseAddress else { return }
    var runStart = 0
    for index in 0..<bytes.count {
        let byte = bytes[index]
        guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
        if runStart < index { output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: index - runStart)) }
        runStart = index + 1
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            output.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigit(byte >> 4), hexDigit(byte & 0xF)])
        }
    }
    if runStart < bytes.count { output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: bytes.count - runStart)) }
}

/// The lowercase hex digit of a nibble.
private func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}

/// `body` over `text`'s UTF-8 bytes: in place for a native string, else a copy's. (This module
/// depends on nothing; `Deterministic.withUTF8Bytes` is the same for the others.)
private func utf8Bytes(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
    if text.utf8.withContiguousStorageIfAvailable(body) != nil { return }
    var copy = text
    copy.withUTF8(body)
}
