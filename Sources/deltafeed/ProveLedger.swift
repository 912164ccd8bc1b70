import ArgumentParser
import DeltaFeedClient
import Foundation

/// One write through the API, and which readable record it sets.
struct ProveWrite: Equatable {
    enum Record: Hashable, Comparable {
        case video(Int64)
        case user(Int64)
        /// Nothing readable by id (follows, ads): proven by the feeds alone.
        case none

        var path: String {
            switch self {
            case .video(let id): "/v1/videos/\(id)"
            case .user(let id): "/v1/users/\(id)"
            case .none: ""
            }
        }
    }

    var kind: String
    var method: String
    var path: String
    var body: [String: JSONValue]?
    var record: Record
}

/// The last acknowledged value of every field the proof wrote and can read back by id. Writes
/// are sent one at a time, so the last acknowledged one is what every replica must show.
struct WriteLedger: Equatable {
    /// Fields expected, per resource path (`/v1/videos/7` → title, like_count).
    private(set) var records: [String: [String: JSONValue]] = [:]
    /// Writes whose outcome is unknown (5xx not retried, or no answer): their fields are not checked.
    private(set) var uncertain = 0

    init() {}

    /// The ledger saved at `path`, or an empty one when there is no such file.
    init(loading path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let json = try JSONValue(parsing: Array(bytes))
        guard case .object(let records)? = json["records"], let uncertain = json["uncertain"]?.int64Value else {
            throw ValidationError("\(path) is not a ledger written by deltafeed prove.")
        }
        for (path, fields) in records {
            guard case .object(let fields) = fields else { throw ValidationError("\(path) is not a ledger written by deltafeed prove.") }
            self.records[path] = fields
        }
        self.uncertain = Int(uncertain)
    }

    func save(to path: String) throws {
        let json: JSONValue = ["records": .object(records.mapValues { .object($0) }), "uncertain": .int(Int64(uncertain))]
        try Data(json.serialized()).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// A 2xx: a created record's fields come from the answer (it has the id), an update's from its body.
    mutating func acknowledged(_ write: ProveWrite, answer: JSONValue?) {
        var record = write.record
        if write.method == "POST", let id = answer?["id"]?.int64Value {
            record = write.path == "/v1/users" ? .user(id) : write.path == "/v1/videos" ? .video(id) : .none
        }
        guard record != .none, let body = write.body else { return }
        let tracked = body.filter { ["title", "like_count", "handle", "display_name"].contains($0.key) }
        records[record.path, default: [:]].merge(tracked) { _, new in new }
    }

    mutating func unknownOutcome(_ write: ProveWrite) {
        uncertain += 1
        guard write.record != .none, let body = write.body else { return }
        for key in body.keys { records[write.record.path]?[key] = nil }
        if records[write.record.path]?.isEmpty == true { records[write.record.path] = nil }
    }
}
