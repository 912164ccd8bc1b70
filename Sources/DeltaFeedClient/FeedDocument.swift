/// A viewer's feed page, as `GET /v1/users/{id}/feed` returns it and as a client keeps it.
///
///     {"snapshot":"<32 hex>","viewer":1,
///      "sections":[{"id":"grid-0","kind":"video_grid","version":"<16 hex>","columns":2,
///                   "items":[{"id":"video:42","kind":"video","version":"<16 hex>","data":{…},
///                             "size":{"width":…,"height":…}}]}],
///      "next_cursor":"o1e"}
///
/// A value type: two documents are equal when every field, every section, every item and every
/// value inside the items' `data` is equal. After applying a delta (see
/// ``applying(_:)``), a client's document is equal to the one a fresh fetch would return.
///
/// Convert with ``init(json:)`` / ``json`` (a ``JSONValue``), ``init(parsing:)`` /
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
        /// Which section controller renders it (`header`, `video_grid`, `ad`,
        /// `follow_suggestions`, `empty`, …). Unknown kinds should be skipped, not crash.
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
    }

    /// One cell: a video with its author, an ad, a suggested user, the header…
    public struct Item: Hashable, Sendable {
        /// Stable identity within the feed (`video:42`, `ad:3`, `user:7`, `header`).
        public var id: String
        /// What the cell shows (`video`, `ad`, `user`, `header`, `empty`).
        public var kind: String
        /// A hash of what the item shows (16 hex digits): equal versions, nothing visible changed.
        public var version: String
        /// The view model, kept as sent; its shape depends on ``kind``.
        public var data: JSONValue
        /// The cell size in points, present when the feed was asked for with a screen width.
        public var size: Size?

        /// Creates an item.
        public init(id: String, kind: String, version: String, data: JSONValue, size: Size? = nil) {
            self.id = id
            self.kind = kind
            self.version = version
            self.data = data
            self.size = size
        }
    }

    /// A cell size in points.
    public struct Size: Hashable, Sendable {
        /// Width in points.
        public var width: Int
        /// Height in points.
        public var height: Int

        /// Creates a size.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }
}

// MARK: - Decoding errors

/// Why a JSON value is not a feed document or a delta: the path of the offending member
/// (`sections[3].items[0].id`) and what is wrong with it.
public struct FeedDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where the problem is, from the root of the value (empty for the root itself).
    public var path: String
    /// What is wrong.
    public var reason: String

    /// Creates a decoding error.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// "path: reason".
    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

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

    func string(_ key: String) throws(FeedDecodingError) -> String {
        guard case .string(let value) = try required(key) else {
            throw FeedDecodingError(path: memberPath(key), reason: "must be a string")
        }
        return value
    }

    /// A string or null; absent counts as null.
    func optionalString(_ key: String) throws(FeedDecodingError) -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case .some: throw FeedDecodingError(path: memberPath(key), reason: "must be a string or null")
        }
    }

    func int(_ key: String) throws(FeedDecodingError) -> Int64 {
        guard case .int(let value) = try required(key) else {
            throw FeedDecodingError(path: memberPath(key), reason: "must be an integer")
        }
        return value
    }

    func index(_ key: String) throws(FeedDecodingError) -> Int {
        let value = try int(key)
        guard let index = Int(exactly: value) else { throw FeedDecodingError(path: memberPath(key), reason: "is out of range") }
        return index
    }

    func array(_ key: String) throws(FeedDecodingError) -> [JSONValue] {
        guard case .array(let value) = try required(key) else {
            throw FeedDecodingError(path: memberPath(key), reason: "must be an array")
        }
        return value
    }
}

// MARK: - JSON conversion

extension FeedDocument {
    /// Reads a feed document from its JSON value.
    ///
    /// - Throws: ``FeedDecodingError`` naming the first member that is missing or of the wrong
    ///   type. Unknown members are ignored.
    public init(json: JSONValue) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: "")
        snapshot = try object.string("snapshot")
        viewer = try object.int("viewer")
        nextCursor = try object.optionalString("next_cursor")
        var sections: [Section] = []
        for (index, value) in try object.array("sections").enumerated() {
            sections.append(try Section(json: value, path: "sections[\(index)]"))
        }
        self.sections = sections
    }

    /// Parses and reads a feed document from UTF-8 JSON bytes (a `GET …/feed` body).
    ///
    /// - Throws: ``JSONParseError`` or ``FeedDecodingError``.
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
    public init(json: JSONValue, path: String = "") throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        id = try object.string("id")
        kind = try object.string("kind")
        version = try object.string("version")
        columns = try object.index("columns")
        var items: [FeedDocument.Item] = []
        for (index, value) in try object.array("items").enumerated() {
            items.append(try FeedDocument.Item(json: value, path: object.memberPath("items") + "[\(index)]"))
        }
        self.items = items
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
    public init(json: JSONValue, path: String = "") throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        id = try object.string("id")
        kind = try object.string("kind")
        version = try object.string("version")
        data = try object.required("data")
        switch object.members["size"] {
        case nil, .null?:
            size = nil
        case let value?:
            let sizeObject = try JSONObjectReader(value, path: object.memberPath("size"))
            size = FeedDocument.Size(width: try sizeObject.index("width"), height: try sizeObject.index("height"))
        }
    }

    /// The item's JSON object (`size` only when present).
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(id),
            "kind": .string(kind),
            "version": .string(version),
            "data": data,
        ]
        if let size {
            members["size"] = .object(["width": .int(Int64(size.width)), "height": .int(Int64(size.height))])
        }
        return .object(members)
    }
}

// MARK: - Codable

extension FeedDocument: Codable {
    /// Decodes the document through its ``JSONValue`` form.
    public init(from decoder: any Decoder) throws {
        try self.init(json: try JSONValue(from: decoder))
    }

    /// Encodes the document's ``json`` form.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

extension FeedDocument.Section: Codable {
    /// Decodes the section through its ``JSONValue`` form.
    public init(from decoder: any Decoder) throws {
        try self.init(json: try JSONValue(from: decoder))
    }

    /// Encodes the section's ``json`` form.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

extension FeedDocument.Item: Codable {
    /// Decodes the item through its ``JSONValue`` form.
    public init(from decoder: any Decoder) throws {
        try self.init(json: try JSONValue(from: decoder))
    }

    /// Encodes the item's ``json`` form.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}
