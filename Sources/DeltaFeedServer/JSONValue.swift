import EventHTTP
import JSONBytes

extension JSONValue {
    /// Parses a request body that must be one JSON value, with JSONBytes' strict parser (no
    /// Foundation, no exceptions per value, nesting limited to ``JSONValue/maximumDepth``).
    ///
    /// - Throws: 400 `invalid_json` for an empty body, a syntax error, invalid UTF-8 or a member
    ///   name given twice in one object.
    static func parse(_ body: [UInt8]) throws -> JSONValue {
        guard !body.isEmpty else {
            throw HTTPError(status: 400, code: "invalid_json", message: "The request body is empty; send a JSON document.")
        }
        do {
            return try JSONValue(parsing: body)
        } catch {
            throw HTTPError(status: 400, code: "invalid_json", message: "The request body is not valid JSON (UTF-8): \(error).")
        }
    }

    /// The canonical JSON text (object keys sorted, no spaces, numbers compared by value, as
    /// RFC 6902's `test` compares them): identity and content in /v1/diff.
    var canonicalBytes: [UInt8] { canonicalSerialized() }
}

/// A JSON object body read field by field, with errors that name the field.
struct JSONObjectBody {
    let members: [String: JSONValue]

    /// No body: for routes that read none.
    static let empty = JSONObjectBody(members: [:])

    private init(members: [String: JSONValue]) {
        self.members = members
    }

    /// - Throws: 400 `invalid_json` if the body is not a JSON object; 422 `unknown_field` for a
    ///   member not in `allowed` (typos must not be silently ignored on writes).
    init(_ body: [UInt8], allowed: Set<String>) throws {
        guard case .object(let members) = try JSONValue.parse(body) else {
            throw HTTPError(status: 400, code: "invalid_json", message: "The request body must be a JSON object.")
        }
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw HTTPError(
                status: 422, code: "unknown_field", message: "\(unknown): not a field of this resource; allowed: \(allowed.sorted().joined(separator: ", ")).")
        }
        self.members = members
    }

    private func wrongType(_ name: String, _ expected: String, _ value: JSONValue) -> HTTPError {
        HTTPError(status: 422, code: "invalid_field", message: "\(name): must be \(expected), not \(value.typeName).")
    }

    private func missing(_ name: String) -> HTTPError {
        HTTPError(status: 422, code: "invalid_field", message: "\(name): is required.")
    }

    func string(_ name: String) throws -> String? {
        switch members[name] {
        case nil: return nil
        case .string(let value)?: return value
        case let other?: throw wrongType(name, "a string", other)
        }
    }

    func requiredString(_ name: String) throws -> String {
        guard let value = try string(name) else { throw missing(name) }
        return value
    }

    /// An integer member: any number with no fractional part, however written (`151`, `151.0`,
    /// `1.51e2`), as JSON Schema's `integer` reads it.
    ///
    /// - Throws: 422 `invalid_field` for another type, a fraction (`151.5`) or a value beyond
    ///   `Int64`.
    func int(_ name: String) throws -> Int64? {
        switch members[name] {
        case nil: return nil
        case .int(let value)?: return value
        case let number? where number.typeName == "number":
            if let value = number.int64Value { return value }
            let written = number.serialized().prefix(40)
            let message =
                number.isIntegral
                ? "\(name): must be an integer from \(Int64.min) to \(Int64.max), not \(String(decoding: written, as: UTF8.self))."
                : "\(name): must be an integer, not \(String(decoding: written, as: UTF8.self)) (it has a fractional part)."
            throw HTTPError(status: 422, code: "invalid_field", message: message)
        case let other?: throw wrongType(name, "an integer", other)
        }
    }

    func requiredInt(_ name: String) throws -> Int64 {
        guard let value = try int(name) else { throw missing(name) }
        return value
    }

    func bool(_ name: String) throws -> Bool? {
        switch members[name] {
        case nil: return nil
        case .bool(let value)?: return value
        case let other?: throw wrongType(name, "true or false", other)
        }
    }
}
