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
    /// When to fetch the next page: once the section it names comes on screen (nil on the last
    /// page).
    public var prefetch: Prefetch?

    /// Creates a document from its parts.
    public init(snapshot: String, viewer: Int64, sections: [Section], nextCursor: String?, prefetch: Prefetch? = nil) {
        self.snapshot = snapshot
        self.viewer = viewer
        self.sections = sections
        self.nextCursor = nextCursor
        self.prefetch = prefetch
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
        /// The supplementary view above the items (shaped like an item, without a size), if any.
        public var header: Item?
        /// The supplementary view below the items, if any.
        public var footer: Item?
        /// Where the items and views go, present when the feed was asked with a screen width.
        public var layout: SectionLayout?

        /// Creates a section.
        public init(
            id: String, kind: String, version: String, columns: Int, items: [Item], header: Item? = nil, footer: Item? = nil,
            layout: SectionLayout? = nil
        ) {
            self.id = id
            self.kind = kind
            self.version = version
            self.columns = columns
            self.items = items
            self.header = header
            self.footer = footer
            self.layout = layout
        }

        /// The header or the footer.
        public subscript(element: SupplementaryElement) -> Item? {
            get { element == .header ? header : footer }
            set {
                if element == .header { header = newValue } else { footer = newValue }
            }
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
        prefetch = try object.optional("prefetch", decodePrefetch)
    }

    /// Parses and reads a feed document from UTF-8 JSON bytes (a `GET …/feed` body).
    ///
    /// - Throws: `JSONParseError` or ``FeedDecodingError``.
    public init(parsing bytes: some Collection<UInt8>) throws {
        try self.init(json: try JSONValue(parsing: bytes))
    }

    /// The document as the server renders it: `snapshot`, `viewer`, `sections`, `next_cursor`
    /// (null on the last page), and `prefetch` when there is one.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "snapshot": .string(snapshot),
            "viewer": .int(viewer),
            "sections": .array(sections.map(\.json)),
            "next_cursor": nextCursor.map(JSONValue.string) ?? .null,
        ]
        if let prefetch { members["prefetch"] = prefetch.json }
        return .object(members)
    }

    /// The structure the server diffs against, as JSON: `snapshot`, `viewer`, `prefetch`, and
    /// per section its `id`, `kind`, `version`, items' and header's and footer's `id` and
    /// `version` (no data). A valid body for `POST …/feed/delta`, a tenth of the document's size.
    public var structureJSON: JSONValue {
        func shape(_ item: Item) -> JSONValue { .object(["id": .string(item.id), "version": .string(item.version)]) }
        var members: [String: JSONValue] = [
            "snapshot": .string(snapshot),
            "viewer": .int(viewer),
            "sections": .array(
                sections.map { section in
                    var members: [String: JSONValue] = [
                        "id": .string(section.id),
                        "kind": .string(section.kind),
                        "version": .string(section.version),
                        "items": .array(section.items.map(shape)),
                    ]
                    if let header = section.header { members["header"] = shape(header) }
                    if let footer = section.footer { members["footer"] = shape(footer) }
                    return .object(members)
                }),
        ]
        if let prefetch { members["prefetch"] = prefetch.json }
        return .object(members)
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
        header = try object.optional("header", FeedDocument.Item.init(json:path:))
        footer = try object.optional("footer", FeedDocument.Item.init(json:path:))
        layout = try object.optional("layout", decodeSectionLayout)
    }

    /// The section's JSON object (`header`, `footer` and `layout` only when present).
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(id),
            "kind": .string(kind),
            "version": .string(version),
            "columns": .int(Int64(columns)),
            "items": .array(items.map(\.json)),
        ]
        if let header { members["header"] = header.json }
        if let footer { members["footer"] = footer.json }
        if let layout { members["layout"] = layout.json }
        return .object(members)
    }
}

/// A section's header or footer: where a delta's supplementary change applies.
public enum SupplementaryElement: String, Hashable, Sendable, CaseIterable {
    /// The view above the section's items.
    case header
    /// The view below them.
    case footer
}

extension Frame {
    /// `{"x","y","width","height"}`.
    public var json: JSONValue {
        .object(["x": .int(Int64(x)), "y": .int(Int64(y)), "width": .int(Int64(width)), "height": .int(Int64(height))])
    }
}

extension SectionLayout {
    /// The `layout` object, as ``JSONBytes/JSONWriter/sectionLayout(_:)`` writes it.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "height": .int(Int64(height)),
            "insets": .object([
                "top": .int(Int64(insets.top)), "left": .int(Int64(insets.left)), "bottom": .int(Int64(insets.bottom)),
                "right": .int(Int64(insets.right)),
            ]),
            "frames": .array(frames.map(\.json)),
        ]
        if let contentWidth {
            members["scroll"] = .string("horizontal")
            members["content_width"] = .int(Int64(contentWidth))
        }
        if let header { members["header"] = header.json }
        if let footer { members["footer"] = footer.json }
        return .object(members)
    }
}

extension Prefetch {
    /// `{"index","section"}`.
    public var json: JSONValue { .object(["index": .int(Int64(index)), "section": .string(section)]) }
}

/// `{"x","y","width","height"}`, each an integer (x and y may be any integer, sizes not negative).
func decodeFrame(_ value: JSONValue, path: String) throws(FeedDecodingError) -> Frame {
    let object = try JSONObjectReader(value, path: path)
    return Frame(x: Int(try object.int("x")), y: Int(try object.int("y")), width: try object.index("width"), height: try object.index("height"))
}

/// A section's `layout` object.
func decodeSectionLayout(_ value: JSONValue, path: String) throws(FeedDecodingError) -> SectionLayout {
    let object = try JSONObjectReader(value, path: path)
    let insets = try object.value("insets") { value, path throws(FeedDecodingError) in
        let insets = try JSONObjectReader(value, path: path)
        return Insets(top: try insets.index("top"), left: try insets.index("left"), bottom: try insets.index("bottom"), right: try insets.index("right"))
    }
    return SectionLayout(
        height: try object.index("height"), insets: insets, contentWidth: try object.optional("content_width", decodeIndex),
        header: try object.optional("header", decodeFrame), footer: try object.optional("footer", decodeFrame),
        frames: try object.array("frames", decodeFrame))
}

/// `{"index","section"}`.
func decodePrefetch(_ value: JSONValue, path: String) throws(FeedDecodingError) -> Prefetch {
    let object = try JSONObjectReader(value, path: path)
    return Prefetch(index: try object.index("index"), section: try object.string("section"))
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
