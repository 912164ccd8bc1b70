/// A minimal append-only JSON byte writer: enough to render error bodies and small documents
/// without Foundation on the hot path.
///
/// Strings are escaped per RFC 8259: `"` `\` and control characters; everything else is written
/// as UTF-8 unchanged.
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
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends an integer.
    public mutating func int<T: BinaryInteger>(_ value: T) {
        bytes.append(contentsOf: String(value).utf8)
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
