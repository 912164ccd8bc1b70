/// A minimal append-only JSON byte writer: enough to render error bodies and small documents
/// without Foundation on the hot path.
///
/// Strings are escaped per RFC 8259 the way RFC 8785 (and JavaScript's `JSON.stringify`) does:
/// `"` `\` and control characters (`\b` `\f` `\n` `\r` `\t`, the others as `\u00xx`);
/// everything else is written as UTF-8 unchanged.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    /// Creates an empty writer with room for `capacity` bytes.
    public init(capacity: Int = 128) {
        bytes.reserveCapacity(capacity)
    }

    /// Appends `text` as is (it must already be valid JSON syntax).
    public mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends raw bytes as is.
    public mutating func raw(bytes other: some Sequence<UInt8>) {
        bytes.append(contentsOf: other)
    }

    /// Appends `value` as a JSON string literal, quoted and escaped.
    public mutating func string(_ value: String) {
        appendJSONString(value, to: &bytes)
    }

    /// Appends an integer.
    public mutating func int<T: BinaryInteger>(_ value: T) {
        guard let value = Int64(exactly: value) else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        // Digits written straight into the buffer (least significant first, then turned round):
        // `String(value)` made a string for every number of every answer.
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        var magnitude = value.magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }

    /// Appends an array of integers, `[1,2,3]`.
    public mutating func ints(_ values: some Sequence<Int>) {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            int(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Appends `true` or `false`.
    public mutating func bool(_ value: Bool) {
        raw(value ? "true" : "false")
    }

    /// Appends `null`.
    public mutating func null() {
        raw("null")
    }

    /// Appends `"name":`, the start of an object member.
    public mutating func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
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
    let hex = Array("0123456789abcdef".utf8)
    output.append(UInt8(ascii: "\""))
    for byte in value.utf8 {
        switch byte {
        case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0..<0x20:
            output.append(contentsOf: Array("\\u00".utf8))
            output.append(hex[Int(byte >> 4)])
            output.append(hex[Int(byte & 0xF)])
        default: output.append(byte)
        }
    }
    output.append(UInt8(ascii: "\""))
}
