/// Any JSON value, kept exactly as the server sent it.
///
/// Feed items carry a `data` object whose shape depends on the item kind (a video with its author,
/// an ad, a suggested user…). The client does not interpret it: it keeps it as a `JSONValue`, so
/// two documents compare equal exactly when every value in them is equal. Numbers are never
/// rounded: those without a fraction or exponent that fit in 64 bits are ``int(_:)``; others
/// whose value a `Double` holds exactly (as the shortest decimal that reads back as that
/// `Double`: `2.5`, `1e2`, `0.1`) are ``double(_:)``; the rest (`18446744073709551617`,
/// `0.10000000000000000000000001`, `1e400`) are ``number(_:)``, kept as written. Objects are
/// unordered (`[String: JSONValue]`), as JSON says, so a member name given twice is refused.
///
///     let value = try JSONValue(parsing: Array(#"{"like_count": 12}"#.utf8))
///     value["like_count"]   // .int(12)
///
/// `JSONValue` is also `Codable`, so it fits into an app's own `Codable` models, and can be
/// written as a literal (`["id": 2, "name": "Ann"]`); `null` is spelled ``null`` (not `nil`, which
/// would be an absent optional).
public enum JSONValue: Hashable, Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer written without fraction or exponent, within `Int64`.
    case int(Int64)
    /// A number with a fraction or exponent, or beyond `Int64`, whose value a `Double` holds
    /// exactly (see the type's overview).
    case double(Double)
    /// Any other number, kept as written: no `Int64` or `Double` holds its value.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; member order is not significant.
    case object([String: JSONValue])

    /// The member `key` of an object, or nil (also when the value is not an object).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The element at `index` of an array, or nil (also when the value is not an array or the
    /// index is out of range).
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The JSON type name (`null`, `boolean`, `number`, `string`, `array`, `object`), for error
    /// messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double, .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

// MARK: - Parsing

/// Why bytes are not one JSON value, and where.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The byte offset of the problem.
    public var offset: Int
    /// What is wrong there.
    public var reason: String

    /// Creates a parse error.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    /// "invalid JSON at byte N: reason".
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// The deepest nesting of arrays and objects ``init(parsing:)`` accepts.
    public static let maximumDepth = 512

    /// Parses UTF-8 bytes holding exactly one JSON value (RFC 8259), with white space around it.
    ///
    /// - Throws: ``JSONParseError`` on a syntax error, invalid UTF-8 in a string, trailing bytes
    ///   or nesting deeper than ``maximumDepth``.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        let buffer = Array(bytes)
        var parser = JSONParser(bytes: buffer)
        self = try parser.parseDocument()
    }

    /// Parses a JSON text.
    ///
    /// - Throws: ``JSONParseError``.
    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8))
    }
}

/// A recursive-descent parser over a byte array.
struct JSONParser {
    let bytes: [UInt8]
    var position = 0
    var depth = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard position == bytes.count else { throw error("unexpected bytes after the value") }
        return value
    }

    func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: position, reason: reason)
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard position < bytes.count else { throw error("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            expected.indices.allSatisfy { bytes[position + $0] == expected[$0] }
        }
        guard matches else { throw error("invalid literal") }
        position += count
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONValue.maximumDepth else { throw error("nesting deeper than \(JSONValue.maximumDepth)") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let keyStart = position
            let key = try parseString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            // Names equal as Swift strings (canonically equivalent Unicode) would share one
            // dictionary entry, so they count as the same name too.
            guard members[key] == nil else {
                throw JSONParseError(offset: keyStart, reason: "duplicate member name \"\(key.prefix(40))\"")
            }
            members[key] = try parseValue()
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
            position += 1
            depth -= 1
            return .object(members)
        }
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
            position += 1
            depth -= 1
            return .array(elements)
        }
    }

    mutating func parseString() throws(JSONParseError) -> String {
        position += 1  // opening quote
        var scalars = String.UnicodeScalarView()
        var runStart = position
        // Copies the unescaped bytes since `runStart`, validating their UTF-8.
        func flush(_ end: Int, into scalars: inout String.UnicodeScalarView) throws(JSONParseError) {
            guard end > runStart else { return }
            guard let run = String(validating: bytes[runStart..<end], as: UTF8.self) else {
                throw JSONParseError(offset: runStart, reason: "invalid UTF-8 in a string")
            }
            scalars.append(contentsOf: run.unicodeScalars)
        }
        while true {
            guard position < bytes.count else { throw error("unterminated string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                try flush(position, into: &scalars)
                position += 1
                return String(scalars)
            }
            if byte < 0x20 { throw error("control character in a string") }
            if byte != UInt8(ascii: "\\") {
                position += 1
                continue
            }
            try flush(position, into: &scalars)
            position += 1
            guard position < bytes.count else { throw error("unterminated escape") }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                let unit = try parseHex4()
                if (0xD800...0xDBFF).contains(unit) {
                    guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired high surrogate")
                    }
                    position += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid low surrogate") }
                    let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                    scalars.append(Unicode.Scalar(value)!)
                } else if (0xDC00...0xDFFF).contains(unit) {
                    throw error("unpaired low surrogate")
                } else {
                    scalars.append(Unicode.Scalar(unit)!)
                }
            default:
                throw error("invalid escape")
            }
            runStart = position
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard position + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw error("expected a digit") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) { throw error("leading zero in a number") }
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        var isInteger = true
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("expected a digit after '.'") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("expected a digit in the exponent") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        let lexeme = bytes[start..<position]
        let text = String(decoding: lexeme, as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let exact = ExactDecimal(lexeme: lexeme) else {
            throw JSONParseError(
                offset: start, reason: "number out of range (an exponent of more than \(ExactDecimal.maximumExponentDigits) digits)")
        }
        // A Double stands for the shortest decimal that reads back as it; when that is the
        // value written, the Double loses nothing. Otherwise the text is kept.
        if let value = Double(text), ExactDecimal(value) == exact { return .double(value) }
        return .number(JSONNumber(text: text, value: exact))
    }
}

// MARK: - Serialization

extension JSONValue {
    /// The value as compact JSON text, UTF-8, object members sorted by key (so equal values
    /// serialize to equal bytes). Non-finite doubles, which JSON cannot represent, become `null`.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output)
        return output
    }

    /// The value as compact JSON text (see ``serialized()``).
    public var jsonText: String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// Writes the value; `canonical` writes numbers by value (see ``canonicalSerialized()``).
    func write(to output: inout [UInt8], canonical: Bool = false) {
        switch self {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let value):
            output.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value) where canonical:
            if (0...9).contains(value) {
                output.append(UInt8(ascii: "0") + UInt8(value))
            } else {
                output.append(contentsOf: ExactDecimal(value).canonicalText)
            }
        case .int(let value):
            output.append(contentsOf: String(value).utf8)
        case .double(let value) where canonical:
            output.append(contentsOf: ExactDecimal(value)?.canonicalText ?? Array("null".utf8))
        case .double(let value):
            output.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .number(let number):
            if canonical { output.append(contentsOf: number.value.canonicalText) } else { output.append(contentsOf: number.text.utf8) }
        case .string(let value):
            appendJSONString(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output, canonical: canonical)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                appendJSONString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                members[key]!.write(to: &output, canonical: canonical)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The value as JSON text in which values equal by RFC 6902's rules (§4.6, the `test`
    /// operation) have equal bytes: object members sorted by name, strings compared code point
    /// by code point, numbers by value, so `1`, `1.0`, `1e0` and `10E-1` are written alike and
    /// `18446744073709551617` unlike `18446744073709551616`. For comparing and hashing, not
    /// for showing: numbers are written as digits and an exponent (`2.5` is `25e-1`).
    public func canonicalSerialized() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        write(to: &output, canonical: true)
        return output
    }

    /// The number as an `Int64` when it has no fractional part and fits, however it is written
    /// (`151`, `151.0`, `1.51e2`, `1510E-1`); nil for any other number and for values that are not
    /// numbers.
    public var int64Value: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value): ExactDecimal(value)?.int64
        case .number(let number): number.value.int64
        default: nil
        }
    }

    /// Whether the value is a number with no fractional part (`3`, `3.0`, `1e30`,
    /// `18446744073709551617`), whether or not it fits in an `Int64`.
    public var isIntegral: Bool {
        switch self {
        case .int: true
        case .double(let value): value.isFinite && value.rounded(.towardZero) == value
        case .number(let number): number.value.isInteger
        default: false
        }
    }

}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text.
    public var description: String { jsonText }
}

// MARK: - Codable

extension JSONValue: Codable {
    /// Decodes any JSON value from a decoder (for example inside an app's `Codable` model).
    ///
    /// - Throws: `DecodingError` when the decoder holds something that is not JSON-like.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Encodes the value as the matching JSON value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        // An Encoder has no way to write a number's own text: the nearest Double is the closest.
        case .number(let number): try container.encode(number.nearestDouble)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// A ``string(_:)`` from a literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An ``int(_:)`` from a literal.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A ``double(_:)`` from a literal.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A ``bool(_:)`` from a literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An ``array(_:)`` from a literal.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An ``object(_:)`` from a literal; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
