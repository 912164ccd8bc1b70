/// A JSON number kept as it was written, because neither `Int64` nor `Double` holds its value
/// exactly: an integer beyond 64 bits (`18446744073709551617`), more significant digits than a
/// `Double` keeps (`0.10000000000000000000000001`), or a magnitude outside a `Double`'s range
/// (`1e400`, `7e-400`).
///
/// The parser makes one only for such numbers (every other number is ``JSONValue/int(_:)`` or
/// ``JSONValue/double(_:)``), so nothing is rounded on the way in or out: serializing writes
/// ``text`` back unchanged. Two `JSONNumber`s are equal when their values are equal, however
/// they are spelled (`1e400` == `10E+399`).
public struct JSONNumber: Hashable, Sendable, CustomStringConvertible {
    /// The number exactly as written, in RFC 8259 syntax.
    public let text: String
    /// Its value, for comparisons.
    let value: ExactDecimal

    init(text: String, value: ExactDecimal) {
        self.text = text
        self.value = value
    }

    /// ``text``.
    public var description: String { text }

    /// The nearest `Double` (infinite or zero when the value is beyond a `Double`'s range).
    public var nearestDouble: Double { Double(text) ?? .nan }

    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool { lhs.value == rhs.value }

    public func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// A decimal number exactly: `digits × 10^exponent`, with `digits` free of leading and trailing
/// zeros (empty for zero, which has no sign). Equal values have equal representations, so
/// comparing two of them compares the numbers they stand for.
struct ExactDecimal: Hashable, Sendable {
    var isNegative: Bool
    /// ASCII digits, no leading or trailing `0`.
    var digits: [UInt8]
    var exponent: Int

    static let zero = ExactDecimal(isNegative: false, digits: [], exponent: 0)

    /// The most digits an exponent as written may have (after leading zeros). Beyond it a
    /// nonzero number is refused as out of range; 18 digits keep every exponent arithmetic
    /// within `Int`.
    static let maximumExponentDigits = 18

    private static let zeroDigit = UInt8(ascii: "0")

    private enum LexemePart { case integer, fraction, exponent }

    /// The value of a number in RFC 8259 syntax (the parser has checked the syntax), or nil when
    /// its exponent is written with more than ``maximumExponentDigits`` digits and the number is
    /// not zero.
    init?(lexeme bytes: some Collection<UInt8>) {
        var negative = false
        var integerPart: [UInt8] = []
        var fractionPart: [UInt8] = []
        var exponentNegative = false
        var exponentDigits: [UInt8] = []
        var part = LexemePart.integer
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "-"):
                if part == .exponent { exponentNegative = true } else { negative = true }
            case UInt8(ascii: "+"):
                continue
            case UInt8(ascii: "."):
                part = .fraction
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                part = .exponent
            default:
                switch part {
                case .integer: integerPart.append(byte)
                case .fraction: fractionPart.append(byte)
                case .exponent: exponentDigits.append(byte)
                }
            }
        }
        var digits = integerPart + fractionPart
        guard let first = digits.firstIndex(where: { $0 != ExactDecimal.zeroDigit }) else {
            self = .zero
            return
        }
        digits.removeSubrange(..<first)
        var trailingZeros = 0
        while digits.last == ExactDecimal.zeroDigit {
            digits.removeLast()
            trailingZeros += 1
        }
        let significantExponent = exponentDigits.drop(while: { $0 == ExactDecimal.zeroDigit })
        guard significantExponent.count <= ExactDecimal.maximumExponentDigits else { return nil }
        var written = 0
        for digit in significantExponent { written = written * 10 + Int(digit - ExactDecimal.zeroDigit) }
        if exponentNegative { written = -written }
        self.init(isNegative: negative, digits: digits, exponent: written - fractionPart.count + trailingZeros)
    }

    init(isNegative: Bool, digits: [UInt8], exponent: Int) {
        self.isNegative = isNegative
        self.digits = digits
        self.exponent = exponent
    }

    /// The value of an integer.
    init(_ value: Int64) {
        self = ExactDecimal(lexeme: String(value).utf8)!
    }

    /// The value a `Double` stands for in JSON: the shortest decimal that reads back as the same
    /// `Double` (what Swift's `description` writes), nil for infinities and NaN.
    init?(_ value: Double) {
        guard value.isFinite else { return nil }
        self.init(lexeme: value.description.utf8)
    }

    /// Whether the value has no fractional part.
    var isInteger: Bool { digits.isEmpty || exponent >= 0 }

    /// The value as an `Int64`, or nil when it has a fractional part or is out of range.
    var int64: Int64? {
        guard isInteger else { return nil }
        guard digits.count + exponent <= 19 else { return nil }
        // Accumulate negatively so Int64.min is reachable.
        var value: Int64 = 0
        for digit in digits + Array(repeating: ExactDecimal.zeroDigit, count: exponent) {
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = shifted.subtractingReportingOverflow(Int64(digit - ExactDecimal.zeroDigit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
        }
        if isNegative { return value }
        return value == .min ? nil : -value
    }

    /// One spelling per value, valid JSON: `0`, `-25e-1`, `18446744073709551617`, `1e400`.
    var canonicalText: [UInt8] {
        guard !digits.isEmpty else { return [ExactDecimal.zeroDigit] }
        var text: [UInt8] = []
        text.reserveCapacity(digits.count + 8)
        if isNegative { text.append(UInt8(ascii: "-")) }
        text.append(contentsOf: digits)
        if exponent != 0 {
            text.append(UInt8(ascii: "e"))
            text.append(contentsOf: String(exponent).utf8)
        }
        return text
    }
}
