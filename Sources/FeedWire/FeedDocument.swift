public import JSONBytes

/// A viewer's feed page as a client reads it from `GET /v1/users/{id}/feed` and keeps it.
///
///     {"snapshot":"<32 hex>","viewer":1,
///      "sections":[{"id":"grid-0","kind":"video_grid","version":"<16 hex>","columns":2,
///                   "items":[{"id":"video:42","kind":"video","version":"<16 hex>","data":{…},
///                             "size":{"width":…,"height":…}}]}],
///      "next_cursor":"o1e"}
///
/// The server writes the page from ``FeedSection`` and ``FeedItem`` (bytes rendered once per
/// version); this is the same page read back into values, items' `data` kept as sent. Two
/// documents are equal when every field, section, item and value inside the items' `data` is
/// equal. After applying a delta (``applying(_:)``) a client's document equals the one a fresh
/// fetch returns.
///
/// Convert with ``init(json:)`` / ``json`` (a `JSONValue`), ``init(parsing:)`` /
/// ``serialized()`` (UTF-8 JSON bytes), or through `Codable`.
public struct FeedDocument: Hashable, Sendable {
    /// The snapshot id of this page: 32 lowercase hex digits, also its HTTP ETag.
    public var snapshot: String
    /// Whose feed this is.
    public var viewer: Int64
    /// The sections, in display order.
    public var sections: [Section]
    /// The cursor of the next page, or nil on the last page.
    public var nextCursor: String?

    /// Creates a document from its parts.
    public init(snapshot: String, viewer: Int64, sections: [Section], nextCursor: String?) {
        self.snapshot = snapshot
        self.viewer = viewer
        self.sections = sections
        self.nextCursor = nextCursor
    }

    /// One unit for one section controller (IGListKit) or one adapter segment (Android): a chunk
    /// of the video grid, an ad, the follow-suggestions carousel, the header, the empty state.
    public struct Section: Hashable, Sendable {
        /// Stable identity within the feed (`header`, `grid-0`, `ad-slot-3`, `suggestions`).
        public var id: String
        /// Which section controller renders it, as sent (``knownKind`` reads it).
        public var kind: String
        /// A hash of the section's kind, columns and items (16 hex digits).
        public var version: String
        /// How many columns the section lays its items out in.
        public var columns: Int
        /// The items, in display order.
        public var items: [Item]

        /// Creates a section.
        public init(id: String, kind: String, version: String, columns: Int, items: [Item]) {
            self.id = id
            self.kind = kind
            self.version = version
            self.columns = columns
            self.items = items
        }

        /// ``kind`` as one of the kinds this module knows, or nil for a kind from a newer server
        /// (skip such a section rather than fail: the rest of the feed still applies).
        public var knownKind: SectionKind? { SectionKind(rawValue: kind) }
    }

    /// One cell: a video with its author, an ad, a suggested user, the header…
    public struct Item: Hashable, Sendable {
        /// Stable identity within the feed (`video:42`, `ad:3`, `user:7`, `header`).
        public var id: String
        /// What the cell shows, as sent (``knownKind`` reads it).
        public var kind: String
        /// A hash of what the item shows (16 hex digits): equal versions, nothing visible changed.
        public var version: String
        /// The view model, kept as sent; its shape depends on ``kind``.
        public var data: JSONValue
        /// The cell size in points, present when the feed was asked for with a screen width.
        public var size: CellSize?

        /// Creates an item.
        public init(id: String, kind: String, version: String, data: JSONValue, size: CellSize? = nil) {
            self.id = id
            self.kind = kind
            self.version = version
            self.data = data
            self.size = size
        }

        /// ``kind`` as one of the kinds this module knows, or nil for a kind from a newer server.
        public var knownKind: ItemKind? { ItemKind(rawValue: kind) }
    }
}

// MARK: - JSON

extension FeedDocument {
    /// Reads a feed document from its JSON value.
    ///
    /// - Throws: ``FeedDecodingError`` naming the first member that is missing or of the wrong
    ///   type. Unknown members are ignored; unknown kinds are kept as sent.
    public init(json: JSONValue) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: "")
        snapshot = try object.string("snapshot")
        viewer = try object.int("viewer")
        nextCursor = try object.optionalString("next_cursor")
        sections = try object.array("sections", Section.init(json:path:))
    }

    /// Parses and reads a feed document from UTF-8 JSON bytes (a `GET …/feed` body).
    ///
    /// - Throws: `JSONParseError` or ``FeedDecodingError``.
    public init(parsing bytes: some Collection<UInt8>) throws {
        try self.init(json: try JSONValue(parsing: bytes))
    }

    /// The document as the server renders it: `snapshot`, `viewer`, `sections`, `next_cursor`
    /// (null on the last page).
    public var json: JSONValue {
        .object([
            "snapshot": .string(snapshot),
            "viewer": .int(viewer),
            "sections": .array(sections.map(\.json)),
            "next_cursor": nextCursor.map(JSONValue.string) ?? .null,
        ])
    }

    /// The structure the server diffs against, as JSON: `snapshot`, `viewer`, and per section
    /// its `id`, `kind`, `version` and items' `id` and `version` (no item data). A valid body
    /// for `POST …/feed/delta`, a tenth of the document's size.
    public var structureJSON: JSONValue {
        .object([
            "snapshot": .string(snapshot),
            "viewer": .int(viewer),
            "sections": .array(
                sections.map { section in
                    .object([
                        "id": .string(section.id),
                        "kind": .string(section.kind),
                        "version": .string(section.version),
                        "items": .array(section.items.map { .object(["id": .string($0.id), "version": .string($0.version)]) }),
                    ])
                }),
        ])
    }

    /// The document as compact UTF-8 JSON (for `POST …/feed/delta`, or to store on disk).
    public func serialized() -> [UInt8] {
        json.serialized()
    }
}

extension FeedDocument.Section {
    /// Reads a section from its JSON value; `path` prefixes error paths.
    ///
    /// - Throws: ``FeedDecodingError``.
    public init(json: JSONValue, path: String) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        id = try object.string("id")
        kind = try object.string("kind")
        version = try object.string("version")
        columns = try object.index("columns")
        items = try object.array("items", FeedDocument.Item.init(json:path:))
    }

    /// The section's JSON object.
    public var json: JSONValue {
        .object([
            "id": .string(id),
            "kind": .string(kind),
            "version": .string(version),
            "columns": .int(Int64(columns)),
            "items": .array(items.map(\.json)),
        ])
    }
}

extension FeedDocument.Item {
    /// Reads an item from its JSON value; `path` prefixes error paths.
    ///
    /// - Throws: ``FeedDecodingError``.
    public init(json: JSONValue, path: String) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        id = try object.string("id")
        kind = try object.string("kind")
        version = try object.string("version")
        data = try object.required("data")
        size = try object.optional("size") { value, path throws(FeedDecodingError) in
            let size = try JSONObjectReader(value, path: path)
            return CellSize(width: try size.index("width"), height: try size.index("height"))
        }
    }

    /// The item's JSON object (`size` only when present).
    public var json: JSONValue {
        var members: [String: JSONValue] = ["id": .string(id), "kind": .string(kind), "version": .string(version), "data": data]
        if let size {
            members["size"] = .object(["width": .int(Int64(size.width)), "height": .int(Int64(size.height))])
        }
        return .object(members)
    }
}

// MARK: - Codable, through the JSON value

/// A wire value that converts to and from `JSONValue`, and so is `Codable` through it.
public protocol JSONConvertible: Codable {
    /// Reads the value from JSON.
    init(json: JSONValue) throws(FeedDecodingError)
    /// The value as JSON.
    var json: JSONValue { get }
}

extension JSONConvertible {
    /// Decodes the value through its `JSONValue` form.
    public init(from decoder: any Decoder) throws {
        try self.init(json: try JSONValue(from: decoder))
    }

    /// Encodes the value's ``json`` form.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

extension FeedDocument: JSONConvertible {}

extension FeedDocument.Section: JSONConvertible {
    /// Reads a section from JSON (error paths from the section).
    public init(json: JSONValue) throws(FeedDecodingError) { try self.init(json: json, path: "") }
}

extension FeedDocument.Item: JSONConvertible {
    /// Reads an item from JSON (error paths from the item).
    public init(json: JSONValue) throws(FeedDecodingError) { try self.init(json: json, path: "") }
}
