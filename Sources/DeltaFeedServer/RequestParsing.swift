import EventHTTP
import FeedService
import FeedWire

extension HTTPRequest {
    /// A positive integer id from path parameter `name`; anything else (`../etc`, `-1`, `1e3`,
    /// 20 digits) is a 400 naming the parameter.
    func id(_ name: String) throws -> Int64 {
        let raw = pathParameters[name] ?? ""
        guard raw.utf8.count <= 18, raw.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int64(raw), id > 0 else {
            throw HTTPError(status: 400, code: "invalid_id", message: "\(name) must be a positive integer, not \"\(raw.prefix(40))\".")
        }
        return id
    }

    /// An integer query parameter within `range`, or `fallback` when absent.
    func intQuery(_ name: String, in range: ClosedRange<Int>, default fallback: Int?) throws -> Int? {
        guard let raw = query[name] else { return fallback }
        guard let value = Int(raw), range.contains(value) else {
            throw HTTPError(
                status: 400, code: "invalid_parameter",
                message: "\(name) must be an integer in \(range.lowerBound)…\(range.upperBound), not \"\(raw.prefix(40))\".")
        }
        return value
    }

    /// A boolean query parameter (`true`/`false`/`1`/`0`), or false when absent.
    func boolQuery(_ name: String) throws -> Bool {
        switch query[name] {
        case nil, "false", "0": return false
        case "true", "1", "": return true
        case let other?:
            throw HTTPError(status: 400, code: "invalid_parameter", message: "\(name) must be true or false, not \"\(other.prefix(40))\".")
        }
    }

    /// `since`: the snapshot id of the feed the client holds, required, 32 lowercase hex digits.
    func since() throws -> String {
        guard let since = query["since"] else {
            throw HTTPError(status: 400, code: "invalid_parameter", message: "since: required; pass the snapshot id of the feed you hold.")
        }
        guard SnapshotStructure.isWellFormedID(since) else {
            throw HTTPError(status: 400, code: "invalid_parameter", message: "since: must be a snapshot id: 32 lowercase hex digits.")
        }
        return since
    }

    /// `limit`, `cursor`, `width`, `stack_ads`, `kinds` and `viewport` as
    /// ``FeedService/FeedParameters``.
    func feedParameters() throws -> FeedParameters {
        var parameters = FeedParameters()
        parameters.limit = try intQuery("limit", in: 1...FeedParameters.maxLimit, default: FeedParameters.defaultLimit)!
        parameters.width = try intQuery("width", in: FeedParameters.widths, default: nil)
        parameters.stackAds = try boolQuery("stack_ads")
        parameters.kinds = try kinds()
        parameters.viewport = try viewport()
        if let cursor = query["cursor"] {
            guard let offset = FeedParameters.offset(fromCursor: cursor) else {
                throw HTTPError(status: 400, code: "invalid_cursor", message: "cursor is not one this server issued; use next_cursor from a feed response.")
            }
            parameters.offset = offset
        }
        return parameters
    }

    /// `kinds`: the kinds the client renders, comma-separated (names this server does not know
    /// are ignored); every kind when absent. A value with no name at all is refused.
    func kinds() throws -> ItemKinds {
        guard let raw = query["kinds"] else { return .all }
        guard raw.utf8.count <= 512, let kinds = ItemKinds(parameter: raw) else {
            throw HTTPError(
                status: 400, code: "invalid_parameter",
                message: "kinds must name at least one kind, comma-separated (\(ItemKinds.all.names.joined(separator: ","))); leave it out for every kind.")
        }
        return kinds
    }

    /// `viewport`: the client's viewport height in points, for the `prefetch` hint.
    func viewport() throws -> Int? {
        try intQuery("viewport", in: FeedParameters.viewports, default: nil)
    }

    /// `format`: batch (default), sequential or jsonpatch.
    /// `wait`: seconds a delta request may wait for its feed to change, 0 (the default: answer
    /// at once) through ``maxWaitSeconds``.
    func waitSeconds() throws -> Int {
        guard let raw = query["wait"] else { return 0 }
        guard raw.utf8.count <= 2, let seconds = Int(raw), (0...maxWaitSeconds).contains(seconds) else {
            throw HTTPError(
                status: 400, code: "invalid_parameter", message: "wait must be whole seconds from 0 to \(maxWaitSeconds), not \"\(raw.prefix(40))\".")
        }
        return seconds
    }

    func deltaFormat() throws -> DeltaFormat {
        guard let raw = query["format"] else { return .batch }
        guard let format = DeltaFormat(rawValue: raw) else {
            throw HTTPError(status: 400, code: "invalid_parameter", message: "format must be batch, sequential or jsonpatch, not \"\(raw.prefix(40))\".")
        }
        return format
    }

    /// Whether `If-None-Match` names `snapshotID` (quoted or not, weak or strong, in a list, or `*`).
    func ifNoneMatch(_ snapshotID: String) -> Bool {
        guard let header = headers["If-None-Match"] else { return false }
        for candidate in header.split(separator: ",") {
            var tag = candidate.trimmingPrefix(" ")
            while tag.last == " " { tag = tag.dropLast() }
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2 { tag = tag.dropFirst().dropLast() }
            if tag == snapshotID { return true }
        }
        return false
    }
}

/// The longest a delta request may wait for its feed to change (`wait=`).
let maxWaitSeconds = 60
