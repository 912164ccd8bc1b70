import EventHTTP
import FeedWire
import JSONBytes
import ListDiff

/// `POST /v1/diff`: ListDiff as a service. Diffs two JSON arrays and answers every output form.
///
/// Body: `{"old":[…],"new":[…],"key":"id"|["a","b"]|null,"mode":"equality"|"identity",
/// "moves":"minimal"|"heckel"}`. With a key, elements are objects identified by those members;
/// without, elements are identified by their whole value. Identity and content equality compare
/// canonical JSON (object keys sorted, numbers by value as RFC 6902's `test` does); numbers are
/// never rounded, and every `value` in the patch is the new element as the client wrote its
/// numbers (an integer beyond 64 bits, or more digits than a `Double` keeps, comes back as sent).
struct DiffRoute {
    /// The most elements per side.
    static let maxElements = 100_000
    /// Bodies at least this large are parsed and diffed on the `compute` pool, not the loop.
    static let offloadBytes = 8 << 10
    /// Where large diffs run.
    let compute: BlockingPool

    func register(in router: inout Router) {
        let compute = self.compute
        router.post("/v1/diff") { request in
            guard request.body.count >= DiffRoute.offloadBytes else { return try DiffRoute.answer(request.body) }
            let body = request.body
            return .deferred(to: compute) { try DiffRoute.answer(body) }
        }
    }

    static func answer(_ body: [UInt8]) throws -> HTTPResponse {
        let object = try JSONObjectBody(body, allowed: ["old", "new", "key", "mode", "moves"])
        func array(_ name: String) throws -> [JSONValue] {
            switch object.members[name] {
            case .array(let values)?:
                guard values.count <= maxElements else {
                    throw HTTPError(status: 413, code: "too_many_elements", message: "\(name): at most \(maxElements) elements.")
                }
                return values
            case nil: throw HTTPError(status: 422, code: "invalid_field", message: "\(name): is required (an array).")
            case let other?: throw HTTPError(status: 422, code: "invalid_field", message: "\(name): must be an array, not \(other.typeName).")
            }
        }
        let old = try array("old")
        let new = try array("new")
        let keys: [String]?
        switch object.members["key"] {
        case nil, .null?: keys = nil
        case .string(let key)?: keys = [key]
        case .array(let list)? where !list.isEmpty && list.count <= 8:
            keys = try list.map { value in
                guard case .string(let key) = value else {
                    throw HTTPError(status: 422, code: "invalid_field", message: "key: a list of member names must hold strings.")
                }
                return key
            }
        case .some:
            throw HTTPError(status: 422, code: "invalid_field", message: "key: a member name, a list of 1…8 names, or null.")
        }
        var options = DiffOptions()
        switch try object.string("mode") {
        case nil, "equality": options.mode = .equality
        case "identity": options.mode = .identity
        case let other?: throw HTTPError(status: 422, code: "invalid_field", message: "mode: equality or identity, not \(other.prefix(40)).")
        }
        switch try object.string("moves") {
        case nil, "minimal": options.moves = .minimal
        case "heckel": options.moves = .heckel
        case let other?: throw HTTPError(status: 422, code: "invalid_field", message: "moves: minimal or heckel, not \(other.prefix(40)).")
        }

        func identities(_ values: [JSONValue], side: String) throws -> [[UInt8]] {
            try values.enumerated().map { index, value in
                guard let keys else { return value.canonicalBytes }
                guard case .object(let members) = value else {
                    throw HTTPError(status: 422, code: "invalid_element", message: "\(side)[\(index)]: must be an object with \(keys.joined(separator: ", ")).")
                }
                var identity: [UInt8] = []
                for key in keys {
                    guard let member = members[key] else {
                        throw HTTPError(status: 422, code: "invalid_element", message: "\(side)[\(index)]: has no \"\(key)\".")
                    }
                    identity += member.canonicalBytes
                    identity.append(0x1F)
                }
                return identity
            }
        }
        let oldIDs = try identities(old, side: "old")
        let newIDs = try identities(new, side: "new")
        let oldContent = old.map(\.canonicalBytes)
        let newContent = new.map(\.canonicalBytes)
        // Diff positions; identities and contents are looked up by side and index.
        func content(_ element: Tagged) -> [UInt8] { element.side == 0 ? oldContent[element.index] : newContent[element.index] }
        let result = IndexDiff<[UInt8]>(
            old: oldIDs.indices.map { Tagged(side: 0, index: $0) }, new: newIDs.indices.map { Tagged(side: 1, index: $0) },
            options: options,
            identifier: { $0.side == 0 ? oldIDs[$0.index] : newIDs[$0.index] },
            isContentEqual: { content($0) == content($1) })

        return .json(diffDocument(result) { json, newIndex in json.raw(bytes: new[newIndex].serialized()) })
    }

    private struct Tagged {
        let side: Int
        let index: Int
    }
}
