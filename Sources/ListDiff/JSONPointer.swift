/// A JSON Pointer (RFC 6901): the location of a value inside a JSON document,
/// as a list of reference tokens.
///
/// Tokens are kept unescaped; ``description`` renders the pointer as a
/// string, escaping `~` as `~0` and `/` as `~1`. Array indexes are decimal
/// tokens.
///
///     let pointer = JSONPointer(tokens: ["sections", "3", "items", "2"])
///     pointer.description            // "/sections/3/items/2"
///     JSONPointer(parsing: "/a~1b/0")?.tokens // ["a/b", "0"]
///     let root: JSONPointer = ""     // the whole document
public struct JSONPointer: Hashable, Sendable {
    /// The reference tokens, unescaped, from the document root down.
    public var tokens: [String]

    /// Creates a pointer from its unescaped reference tokens. No tokens is
    /// the whole document.
    @inlinable
    public init(tokens: [String] = []) {
        self.tokens = tokens
    }

    /// Parses the string form of a pointer (RFC 6901 section 3): empty, or
    /// `/`-separated tokens where `~0` stands for `~` and `~1` for `/`.
    ///
    /// Returns `nil` for a string that is not a pointer: one that does not
    /// start with `/`, or a `~` not followed by `0` or `1`.
    ///
    /// - Complexity: O(*n*), the length of `string`.
    public init?(parsing string: String) {
        var tokens: [String] = []
        var utf8 = Substring(string).utf8[...]
        guard !utf8.isEmpty else {
            self.init(tokens: [])
            return
        }
        guard utf8.first == UInt8(ascii: "/") else { return nil }
        utf8 = utf8.dropFirst()
        while true {
            let end = utf8.firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
            guard let token = JSONPointer._unescape(utf8[..<end]) else { return nil }
            tokens.append(token)
            if end == utf8.endIndex { break }
            utf8 = utf8[utf8.index(after: end)...]
        }
        self.init(tokens: tokens)
    }

    private static func _unescape(_ raw: Substring.UTF8View.SubSequence) -> String? {
        guard raw.contains(UInt8(ascii: "~")) else { return String(Substring(raw)) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            index = raw.index(after: index)
            guard byte == UInt8(ascii: "~") else {
                bytes.append(byte)
                continue
            }
            guard index < raw.endIndex else { return nil }
            switch raw[index] {
            case UInt8(ascii: "0"): bytes.append(UInt8(ascii: "~"))
            case UInt8(ascii: "1"): bytes.append(UInt8(ascii: "/"))
            default: return nil
            }
            index = raw.index(after: index)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The pointer with one more token at the end.
    ///
    /// - Complexity: O(*k*), the number of tokens.
    @inlinable
    public func appending(_ token: String) -> JSONPointer {
        var extended: [String] = []
        extended.reserveCapacity(tokens.count + 1)
        extended.append(contentsOf: tokens)
        extended.append(token)
        return JSONPointer(tokens: extended)
    }

    /// The pointer with one more array-index token at the end.
    ///
    /// - Complexity: O(*k*), the number of tokens.
    @inlinable
    public func appending(index: Int) -> JSONPointer {
        appending(String(index))
    }

    /// The pointer with the tokens of `other` appended.
    ///
    /// - Complexity: O(*k*), the number of tokens.
    @inlinable
    public func appending(_ other: JSONPointer) -> JSONPointer {
        var extended: [String] = []
        extended.reserveCapacity(tokens.count + other.tokens.count)
        extended.append(contentsOf: tokens)
        extended.append(contentsOf: other.tokens)
        return JSONPointer(tokens: extended)
    }

    /// Parses an array-index token (RFC 6901 section 4): `0`, or decimal
    /// digits without a leading zero. Returns `nil` for any other token,
    /// including `-`.
    ///
    /// - Complexity: O(*n*), the length of `token`.
    public static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else {
            return nil
        }
        if first == UInt8(ascii: "0") && utf8.count > 1 { return nil }
        guard utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(token)
    }
}

extension JSONPointer: CustomStringConvertible {
    /// The pointer's string form (RFC 6901): each token preceded by `/`, with
    /// `~` written `~0` and `/` written `~1`. Empty for the whole document.
    ///
    /// - Complexity: O(*n*), the length of the result.
    public var description: String {
        var result = ""
        for token in tokens {
            result.append("/")
            if token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) {
                for character in token.unicodeScalars {
                    switch character {
                    case "~": result.append("~0")
                    case "/": result.append("~1")
                    default: result.unicodeScalars.append(character)
                    }
                }
            } else {
                result.append(token)
            }
        }
        return result
    }
}

extension JSONPointer: ExpressibleByStringLiteral {
    /// Creates a pointer from its string form, as a literal.
    ///
    /// - Precondition: The literal is a valid pointer (see ``init(parsing:)``).
    public init(stringLiteral value: String) {
        guard let pointer = JSONPointer(parsing: value) else {
            preconditionFailure("'\(value)' is not a JSON Pointer (RFC 6901)")
        }
        self = pointer
    }
}
