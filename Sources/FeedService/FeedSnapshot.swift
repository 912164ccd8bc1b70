import Foundation

/// The structure of a feed page a client was given: for each section its id, kind and version,
/// and for each item its id and version. No payloads. Stored per viewer so a later delta can be
/// computed against it; its hash is the snapshot id.
public struct SnapshotStructure: Sendable, Hashable, Codable {
    /// One section of a snapshot.
    public struct Section: Sendable, Hashable, Codable {
        /// The section id.
        public var id: String
        /// The section kind; a different kind means the section is replaced whole.
        public var kind: String
        /// The items, in order.
        public var items: [Item]

        /// Creates a section shape.
        public init(id: String, kind: String, items: [Item]) {
            self.id = id
            self.kind = kind
            self.items = items
        }
    }

    /// One item of a snapshot section.
    public struct Item: Sendable, Hashable, Codable {
        /// The item id.
        public var id: String
        /// The item version, 16 hex digits.
        public var version: String

        /// Creates an item shape.
        public init(id: String, version: String) {
            self.id = id
            self.version = version
        }
    }

    /// Whose feed this was.
    public var viewer: Int64
    /// How the feed was asked for.
    public var parameters: FeedParameters
    /// The sections in order.
    public var sections: [Section]

    /// Creates a structure.
    public init(viewer: Int64, parameters: FeedParameters, sections: [Section]) {
        self.viewer = viewer
        self.parameters = parameters
        self.sections = sections
    }

    init(viewer: Int64, parameters: FeedParameters, page: [FeedSection]) {
        self.init(viewer: viewer, parameters: parameters, sections: page.map { section in
            Section(id: section.id, kind: section.kind, items: section.items.map { Item(id: $0.id, version: $0.versionText) })
        })
    }

    /// The snapshot id: 32 hex digits hashing the viewer, the parameters and every section and
    /// item id and version. Equal feeds for the same viewer have equal ids.
    public var id: String {
        var first = StableHasher(seed: 1)
        var second = StableHasher(seed: 2)
        func combine(_ text: String) {
            first.combine(text)
            second.combine(text)
        }
        func combine(_ value: Int64) {
            first.combine(value)
            second.combine(value)
        }
        combine(viewer)
        combine(Int64(parameters.limit))
        combine(Int64(parameters.offset))
        combine(Int64(parameters.width ?? -1))
        combine(parameters.stackAds ? 1 : 0)
        for section in sections {
            combine(section.id)
            combine(section.kind)
            combine(Int64(section.items.count))
            for item in section.items {
                combine(item.id)
                combine(item.version)
            }
        }
        return hex16(first.state) + hex16(second.state)
    }

    /// The bytes stored in the snapshots table.
    func encoded() throws -> Data {
        try JSONEncoder().encode(self)
    }

    /// Reads stored bytes back.
    static func decode(_ data: Data) throws -> SnapshotStructure {
        try JSONDecoder().decode(SnapshotStructure.self, from: data)
    }

    /// Whether `id` has the form of a snapshot id (32 lowercase hex digits).
    public static func isWellFormedID(_ id: String) -> Bool {
        isLowercaseHex(id, count: 32)
    }
}
