public import JSONBytes
public import ListDiff

// Reading the wire format's values from parsed JSON. Decoding is strict about types and structure
// (a path is two integers, an operation has the members its `op` needs) but leaves the meaning to
// the apply functions: a delta whose positions do not add up decodes and is then refused by
// `FeedDocument.applying(_:)` with a precise ``DeltaApplyError``.

/// Why a JSON value is not a feed document or a delta: the path of the offending member
/// (`sections[3].items[0].id`) and what is wrong with it.
public struct FeedDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where the problem is, from the root of the value (empty for the root itself).
    public var path: String
    /// What is wrong.
    public var reason: String

    /// "path: reason".
    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

/// Reads one JSON value found at `path` (for error messages).
typealias WireDecoder<Value> = (JSONValue, String) throws(FeedDecodingError) -> Value

/// Typed reads of the members of a JSON object, each failure naming the member's path.
struct JSONObjectReader {
    let members: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws(FeedDecodingError) {
        guard case .object(let members) = value else {
            throw FeedDecodingError(path: path, reason: "must be an object, not \(value.typeName)")
        }
        self.members = members
        self.path = path
    }

    func memberPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func required(_ key: String) throws(FeedDecodingError) -> JSONValue {
        guard let value = members[key] else { throw FeedDecodingError(path: memberPath(key), reason: "is required") }
        return value
    }

    /// The member `key` read by `decode`.
    func value<Value>(_ key: String, _ decode: WireDecoder<Value>) throws(FeedDecodingError) -> Value {
        try decode(try required(key), memberPath(key))
    }

    /// The member `key` read by `decode`, or nil when it is absent or null.
    func optional<Value>(_ key: String, _ decode: WireDecoder<Value>) throws(FeedDecodingError) -> Value? {
        switch members[key] {
        case nil, .null?: nil
        case let value?: try decode(value, memberPath(key))
        }
    }

    /// The nested object `key`.
    func object(_ key: String) throws(FeedDecodingError) -> JSONObjectReader {
        try value(key, JSONObjectReader.init)
    }

    func string(_ key: String) throws(FeedDecodingError) -> String { try value(key, decodeString) }

    /// A string or null; absent counts as null.
    func optionalString(_ key: String) throws(FeedDecodingError) -> String? { try optional(key, decodeString) }

    func int(_ key: String) throws(FeedDecodingError) -> Int64 {
        guard case .int(let value) = try required(key) else {
            throw FeedDecodingError(path: memberPath(key), reason: "must be an integer")
        }
        return value
    }

    func index(_ key: String) throws(FeedDecodingError) -> Int { try value(key, decodeIndex) }

    /// The array member `key`, each element read by `element`.
    func array<Element>(_ key: String, _ element: WireDecoder<Element>) throws(FeedDecodingError) -> [Element] {
        try value(key) { value, path throws(FeedDecodingError) in try decodeArray(value, path: path, element) }
    }

    /// The array member `key`, or no elements when it is absent (a delta leaves empty lists out).
    func optionalArray<Element>(_ key: String, _ element: WireDecoder<Element>) throws(FeedDecodingError) -> [Element] {
        guard members[key] != nil else { return [] }
        return try array(key, element)
    }

    /// The object member `key` read by `decode`, or nil when it is absent.
    func optionalObject<Value>(_ key: String, _ decode: WireDecoder<Value>) throws(FeedDecodingError) -> Value? {
        guard members[key] != nil else { return nil }
        return try value(key, decode)
    }

    /// Whether the object has member `key`.
    func has(_ key: String) -> Bool { members[key] != nil }

    /// The member names.
    var keys: Dictionary<String, JSONValue>.Keys { members.keys }
}

func decodeArray<Element>(_ value: JSONValue, path: String, _ element: WireDecoder<Element>) throws(FeedDecodingError) -> [Element] {
    guard case .array(let values) = value else { throw FeedDecodingError(path: path, reason: "must be an array") }
    var elements: [Element] = []
    elements.reserveCapacity(values.count)
    for (offset, value) in values.enumerated() {
        elements.append(try element(value, "\(path)[\(offset)]"))
    }
    return elements
}

func decodeString(_ value: JSONValue, path: String) throws(FeedDecodingError) -> String {
    guard case .string(let string) = value else { throw FeedDecodingError(path: path, reason: "must be a string") }
    return string
}

/// An integer that fits `Int`: an index, a count, a size.
func decodeIndex(_ value: JSONValue, path: String) throws(FeedDecodingError) -> Int {
    guard case .int(let raw) = value else { throw FeedDecodingError(path: path, reason: "must be an integer") }
    guard let index = Int(exactly: raw) else { throw FeedDecodingError(path: path, reason: "is out of range") }
    return index
}

/// `[a, b]`, each read by `element`.
func decodePair<Element>(_ value: JSONValue, path: String, _ element: WireDecoder<Element>) throws(FeedDecodingError) -> (Element, Element) {
    guard case .array(let elements) = value, elements.count == 2 else {
        throw FeedDecodingError(path: path, reason: "must be an array of two elements")
    }
    return (try element(elements[0], path + "[0]"), try element(elements[1], path + "[1]"))
}

/// `[section, item]`.
func decodeItemPath(_ value: JSONValue, path: String) throws(FeedDecodingError) -> ItemPath {
    let (section, item) = try decodePair(value, path: path, decodeIndex)
    return ItemPath(section: section, item: item)
}

/// `[from, to]`, each position read by `position`.
func decodeMove<Position>(_ position: @escaping WireDecoder<Position>) -> WireDecoder<Move<Position>> {
    { value, path throws(FeedDecodingError) in
        let (from, to) = try decodePair(value, path: path, position)
        return Move(from: from, to: to)
    }
}

func decodePointer(_ value: JSONValue, path: String) throws(FeedDecodingError) -> JSONPointer {
    guard let pointer = JSONPointer(parsing: try decodeString(value, path: path)) else {
        throw FeedDecodingError(path: path, reason: "must be a JSON Pointer (RFC 6901)")
    }
    return pointer
}

extension ItemPath {
    /// `[section, item]`.
    public var json: JSONValue { .array([.int(Int64(section)), .int(Int64(item))]) }
}

extension Int {
    /// The index as a JSON integer.
    var json: JSONValue { .int(Int64(self)) }
}
