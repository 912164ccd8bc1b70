import EventHTTP
import Foundation
import JSONBytes

/// Any JSON value, decoded strictly (a boolean is never a number), with a canonical rendering
/// (object keys sorted, numbers as parsed) for identity and equality.
enum JSONValue: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .int(value) }
        else if let value = try? container.decode(Double.self) { self = .double(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    /// Parses a request body that must be one JSON value.
    ///
    /// - Throws: 400 `invalid_json` (empty body, syntax, invalid UTF-8) or 413 past `maxBytes`.
    static func parse(_ body: [UInt8]) throws -> JSONValue {
        guard !body.isEmpty else {
            throw HTTPError(status: 400, code: "invalid_json", message: "The request body is empty; send a JSON document.")
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(body))
        } catch {
            throw HTTPError(status: 400, code: "invalid_json", message: "The request body is not valid JSON (UTF-8).")
        }
    }

    /// The canonical JSON text: keys sorted, no spaces.
    func write(to json: inout JSONWriter) {
        switch self {
        case .null: json.null()
        case .bool(let value): json.bool(value)
        case .int(let value): json.int(value)
        case .double(let value): json.raw(value.isFinite ? "\(value)" : "null")
        case .string(let value): json.string(value)
        case .array(let values):
            json.raw("[")
            for (index, value) in values.enumerated() {
                if index > 0 { json.raw(",") }
                value.write(to: &json)
            }
            json.raw("]")
        case .object(let members):
            json.raw("{")
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { json.raw(",") }
                json.key(key)
                members[key]!.write(to: &json)
            }
            json.raw("}")
        }
    }

    var canonicalBytes: [UInt8] {
        var json = JSONWriter()
        write(to: &json)
        return json.bytes
    }

    /// The name of the JSON type, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// A JSON object body read field by field, with errors that name the field.
struct JSONObjectBody {
    let members: [String: JSONValue]

    /// - Throws: 400 `invalid_json` if the body is not a JSON object; 422 `unknown_field` for a
    ///   member not in `allowed` (typos must not be silently ignored on writes).
    init(_ body: [UInt8], allowed: Set<String>) throws {
        guard case .object(let members) = try JSONValue.parse(body) else {
            throw HTTPError(status: 400, code: "invalid_json", message: "The request body must be a JSON object.")
        }
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw HTTPError(status: 422, code: "unknown_field", message: "\(unknown): not a field of this resource; allowed: \(allowed.sorted().joined(separator: ", ")).")
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

    func int(_ name: String) throws -> Int64? {
        switch members[name] {
        case nil: return nil
        case .int(let value)?: return value
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
