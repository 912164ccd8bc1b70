extension FeedDocument {
    /// Applies a JSON Patch delta to the document's JSON form (``json``), as a web client
    /// holding the feed as JSON would, and reads the result back.
    ///
    /// The patch carries everything itself (section payloads, the versions of sections whose
    /// items changed, `/snapshot`, `/next_cursor`); afterwards the result is checked against the
    /// delta's header: its section versions, snapshot and cursor must be the header's.
    ///
    /// - Returns: The document after the patch.
    /// - Throws: ``DeltaApplyError/patchFailed(operation:reason:)`` for an operation that does
    ///   not apply (see ``JSONValue/applying(patch:)``),
    ///   ``DeltaApplyError/invalidDocument(_:)`` when the result is no longer a feed document,
    ///   ``DeltaApplyError/resultMismatch(_:)`` when it disagrees with the header, or
    ///   ``DeltaApplyError/snapshotMismatch(document:since:)``.
    public func applying(jsonPatch: FeedDelta.JSONPatch) throws(DeltaApplyError) -> FeedDocument {
        try checkStart(jsonPatch.header)
        let patched = try json.applying(patch: jsonPatch.operations)
        let result: FeedDocument
        do {
            result = try FeedDocument(json: patched)
        } catch {
            throw .invalidDocument(error.description)
        }
        let header = jsonPatch.header
        guard result.snapshot == header.snapshot else {
            throw .resultMismatch("/snapshot is \(result.snapshot), the header says \(header.snapshot)")
        }
        guard result.nextCursor == header.nextCursor else {
            throw .resultMismatch("/next_cursor is \(result.nextCursor ?? "null"), the header says \(header.nextCursor ?? "null")")
        }
        let versions = result.sections.map(\.version)
        guard versions == header.sectionVersions else {
            guard versions.count == header.sectionVersions.count else {
                throw .resultMismatch("the patched document has \(versions.count) sections, section_versions \(header.sectionVersions.count)")
            }
            let index = versions.indices.first { versions[$0] != header.sectionVersions[$0] }!
            throw .resultMismatch(
                "/sections/\(index) (\(result.sections[index].id)) has version \(versions[index]), section_versions says \(header.sectionVersions[index])")
        }
        return result
    }
}

extension JSONValue {
    /// Applies RFC 6902 operations in order and returns the result.
    ///
    /// `add` inserts into arrays (index `0…count`, or `-` to append) and sets object members;
    /// `remove` and `replace` need an existing target; `move` is remove-then-add (not into its
    /// own child); `copy` adds a copy; `test` compares by value. Array indexes are decimal
    /// without leading zeros, as RFC 6901 requires.
    ///
    /// - Throws: ``DeltaApplyError/patchFailed(operation:reason:)`` naming the first operation
    ///   that does not apply (the value itself is never half-patched).
    public func applying(patch operations: [PatchOperation]) throws(DeltaApplyError) -> JSONValue {
        var document = self
        for (offset, operation) in operations.enumerated() {
            do {
                try document.apply(operation)
            } catch {
                throw .patchFailed(operation: offset, reason: "\(operation.op.rawValue) \(operation.path): \(error.reason)")
            }
        }
        return document
    }

    private mutating func apply(_ operation: PatchOperation) throws(PointerError) {
        let path = try JSONPointerTokens(operation.path)
        switch operation.op {
        case .add:
            guard let value = operation.value else { throw PointerError("add needs a value") }
            try add(value, at: path.tokens[...])
        case .remove:
            _ = try remove(at: path.tokens[...])
        case .replace:
            guard let value = operation.value else { throw PointerError("replace needs a value") }
            try replace(at: path.tokens[...], with: value)
        case .move:
            guard let fromText = operation.from else { throw PointerError("move needs from") }
            let from = try JSONPointerTokens(fromText)
            if from.tokens == path.tokens { return }
            if path.tokens.count > from.tokens.count, Array(path.tokens.prefix(from.tokens.count)) == from.tokens {
                throw PointerError("cannot move \(fromText) into its own child")
            }
            let value = try remove(at: from.tokens[...])
            try add(value, at: path.tokens[...])
        case .copy:
            guard let fromText = operation.from else { throw PointerError("copy needs from") }
            let value = try self.value(at: try JSONPointerTokens(fromText).tokens[...])
            try add(value, at: path.tokens[...])
        case .test:
            guard let expected = operation.value else { throw PointerError("test needs a value") }
            let actual = try value(at: path.tokens[...])
            guard actual == expected else { throw PointerError("test failed: the value is \(actual.jsonText)") }
        }
    }

    /// The value at `tokens`.
    func value(at tokens: ArraySlice<String>) throws(PointerError) -> JSONValue {
        guard let token = tokens.first else { return self }
        switch self {
        case .object(let members):
            guard let member = members[token] else { throw PointerError("no member \"\(token)\"") }
            return try member.value(at: tokens.dropFirst())
        case .array(let elements):
            let index = try JSONValue.index(token, count: elements.count, allowEnd: false)
            return try elements[index].value(at: tokens.dropFirst())
        default:
            throw PointerError("cannot look up \"\(token)\" in a \(typeName)")
        }
    }

    /// Runs `body` on the container (array or object) at `tokens`, mutating in place.
    private mutating func withContainer<R>(at tokens: ArraySlice<String>, _ body: (inout JSONValue) throws(PointerError) -> R) throws(PointerError) -> R {
        guard let token = tokens.first else { return try body(&self) }
        switch self {
        case .object(var members):
            guard var member = members[token] else { throw PointerError("no member \"\(token)\"") }
            self = .null  // release the payload so the nested mutation does not copy it
            members[token] = nil
            defer {
                members[token] = member
                self = .object(members)
            }
            return try member.withContainer(at: tokens.dropFirst(), body)
        case .array(var elements):
            let index = try JSONValue.index(token, count: elements.count, allowEnd: false)
            self = .null
            var element = elements[index]
            elements[index] = .null
            defer {
                elements[index] = element
                self = .array(elements)
            }
            return try element.withContainer(at: tokens.dropFirst(), body)
        default:
            throw PointerError("cannot look up \"\(token)\" in a \(typeName)")
        }
    }

    private mutating func add(_ value: JSONValue, at tokens: ArraySlice<String>) throws(PointerError) {
        guard let last = tokens.last else {
            self = value
            return
        }
        try withContainer(at: tokens.dropLast()) { (container: inout JSONValue) throws(PointerError) in
            switch container {
            case .object(var members):
                container = .null
                members[last] = value
                container = .object(members)
            case .array(var elements):
                let index = try JSONValue.index(last, count: elements.count, allowEnd: true)
                container = .null
                elements.insert(value, at: index)
                container = .array(elements)
            default:
                throw PointerError("cannot add \"\(last)\" to a \(container.typeName)")
            }
        }
    }

    private mutating func remove(at tokens: ArraySlice<String>) throws(PointerError) -> JSONValue {
        guard let last = tokens.last else { throw PointerError("cannot remove the whole document") }
        return try withContainer(at: tokens.dropLast()) { (container: inout JSONValue) throws(PointerError) -> JSONValue in
            switch container {
            case .object(var members):
                guard let removed = members[last] else { throw PointerError("no member \"\(last)\"") }
                container = .null
                members[last] = nil
                container = .object(members)
                return removed
            case .array(var elements):
                let index = try JSONValue.index(last, count: elements.count, allowEnd: false)
                container = .null
                let removed = elements.remove(at: index)
                container = .array(elements)
                return removed
            default:
                throw PointerError("cannot remove \"\(last)\" from a \(container.typeName)")
            }
        }
    }

    private mutating func replace(at tokens: ArraySlice<String>, with value: JSONValue) throws(PointerError) {
        guard let last = tokens.last else {
            self = value
            return
        }
        try withContainer(at: tokens.dropLast()) { (container: inout JSONValue) throws(PointerError) in
            switch container {
            case .object(var members):
                guard members[last] != nil else { throw PointerError("no member \"\(last)\"") }
                container = .null
                members[last] = value
                container = .object(members)
            case .array(var elements):
                let index = try JSONValue.index(last, count: elements.count, allowEnd: false)
                container = .null
                elements[index] = value
                container = .array(elements)
            default:
                throw PointerError("cannot replace \"\(last)\" in a \(container.typeName)")
            }
        }
    }

    /// An array index token: `0`, or digits without a leading zero, below `count` (or equal to
    /// it, or `-`, when `allowEnd`).
    private static func index(_ token: String, count: Int, allowEnd: Bool) throws(PointerError) -> Int {
        if token == "-" {
            guard allowEnd else { throw PointerError("\"-\" names no existing element") }
            return count
        }
        let digits = token.utf8
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            digits.count == 1 || digits.first != UInt8(ascii: "0"), let index = Int(token)
        else { throw PointerError("\"\(token)\" is not an array index") }
        guard index < count || (allowEnd && index == count) else {
            throw PointerError("index \(index) is out of range (\(count) elements)")
        }
        return index
    }
}

/// Why a pointer or an operation does not apply.
struct PointerError: Error {
    let reason: String

    init(_ reason: String) {
        self.reason = reason
    }
}

/// A JSON Pointer (RFC 6901) split into unescaped tokens.
struct JSONPointerTokens {
    let tokens: [String]

    init(_ text: String) throws(PointerError) {
        guard !text.isEmpty else {
            tokens = []
            return
        }
        guard text.hasPrefix("/") else { throw PointerError("pointer \"\(text)\" must start with /") }
        var tokens: [String] = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = ""
            var iterator = raw.makeIterator()
            while let character = iterator.next() {
                guard character == "~" else {
                    token.append(character)
                    continue
                }
                switch iterator.next() {
                case "0": token.append("~")
                case "1": token.append("/")
                default: throw PointerError("pointer \"\(text)\" has a ~ not followed by 0 or 1")
                }
            }
            tokens.append(token)
        }
        self.tokens = tokens
    }
}
