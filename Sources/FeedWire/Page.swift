import Deterministic
public import JSONBytes

/// One cell's worth of content: a video with its author, an ad, a suggested user, a header.
///
/// `json` is the item's JSON object as sent to clients (`{"id":…,"kind":…,"version":…,"data":{…}}`),
/// rendered once per version of what it shows and shared by every feed that shows it;
/// ``write(to:layout:)`` adds `"size"` when a screen width was given.
public struct FeedItem: Sendable, Hashable {
    /// Stable identity within the feed (`video:42`, `ad:3`, `user:7`, `header`).
    public let id: String
    /// `WordHasher.hash(id)`, made once: section versions and snapshot ids fold it for every
    /// section the item is shown in.
    public let idWord: UInt64
    /// What the client renders it with.
    public let kind: ItemKind
    /// A hash of what the item shows; equal versions mean nothing visible changed.
    public let version: UInt64
    /// ``version`` as 16 hex digits, as it is sent. Made when asked (a field patch's target
    /// version): items are copied whenever a page is patched, and a stored 16-character string
    /// was one more heap object to retain in every copy.
    public var versionText: String { hex16(version) }
    /// The item's JSON object, without a size.
    public let json: [UInt8]

    /// Renders an item: its data written by `data` (one of the data writers of this module),
    /// its version the hash of the kind and exactly those bytes, and the envelope around them.
    /// ``write(to:layout:)`` adds the size for a screen width when writing it out.
    public init(id: String, kind: ItemKind, capacity: Int, data write: (inout JSONWriter) -> Void) {
        var data = JSONWriter(capacity: capacity)
        write(&data)
        var hasher = StableHasher()
        hasher.combine(kind.rawValue)
        hasher.combine(bytes: data.bytes)
        var json = JSONWriter(capacity: data.bytes.count + 96)
        json.openEnvelope(id: id, kind: kind.rawValue, version: hasher.state)
        json.literal(",\"data\":")
        json.raw(bytes: data.bytes)
        json.literal("}")
        self.id = id
        self.idWord = WordHasher.hash(id)
        self.kind = kind
        self.version = hasher.state
        self.json = json.bytes
    }

    /// The empty state: no data of its own beyond a fixed message.
    public static let emptyState = FeedItem(id: "empty", kind: .empty, capacity: 0) { $0.raw(bytes: JSONWriter.emptyStateData) }

    /// Writes the item's JSON object, with its size for `layout` if there is one.
    public func write(to out: inout JSONWriter, layout: Layout?) {
        guard let layout, json.count > 1 else {
            out.raw(bytes: json)
            return
        }
        // `json` ends with the object's closing brace: insert the size before it.
        out.raw(bytes: json[..<(json.count - 1)])
        let size = layout.size(of: kind)
        out.literal(",\"size\":{\"width\":")
        out.int(size.width)
        out.literal(",\"height\":")
        out.int(size.height)
        out.literal("}}")
    }
}

/// One unit for one section controller: a chunk of the video grid, an ad, the suggestions
/// carousel, the header, the empty state.
///
/// A section's own content is its `kind` (and the layout that comes with it); everything a
/// viewer sees changing lives in its items and in its supplementary views (a `header` above the
/// items, a `footer` below, IGListKit's supplementary views), so a refresh animates item by item
/// and a changed footer is an update of that footer, not a reload of the section.
public struct FeedSection: Sendable, Hashable {
    /// Stable identity (`header`, `grid-0`, `ad-slot-1`, `suggestions`, `empty`).
    public let id: String
    /// The section controller to use.
    public let kind: SectionKind
    /// Columns the section lays its items out in.
    public let columns: Int
    /// The items in order.
    public let items: [FeedItem]
    /// The header and footer, boxed: most sections have neither, and a section is copied often
    /// (pages patched in place, cached, diffed): one reference to retain instead of six.
    private let views: Views?
    /// The view above the items, if any (shaped like an item; written without a size).
    public var header: FeedItem? { views?.header }
    /// The view below the items, if any.
    public var footer: FeedItem? { views?.footer }

    /// A section's header and footer (at least one of them).
    private final class Views: Sendable, Hashable {
        let header: FeedItem?
        let footer: FeedItem?

        init(header: FeedItem?, footer: FeedItem?) {
            self.header = header
            self.footer = footer
        }

        static func == (left: Views, right: Views) -> Bool {
            left.header == right.header && left.footer == right.footer
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(header)
            hasher.combine(footer)
        }
    }
    /// A hash of the kind, every item's id and version, and the header's and footer's.
    public let version: UInt64
    /// ``version`` as 16 hex digits, as it is sent. Made when asked: a section is copied far more
    /// often than its version is sent (a page patched in place copies all its sections), and a
    /// stored string was one more reference to retain in each copy.
    public var versionText: String { hex16(version) }

    /// A section of `items`, with a header and footer if given; its version is computed from them.
    public init(id: String, kind: SectionKind, columns: Int, items: [FeedItem], header: FeedItem? = nil, footer: FeedItem? = nil) {
        self.id = id
        self.kind = kind
        self.columns = columns
        self.items = items
        self.views = header == nil && footer == nil ? nil : Views(header: header, footer: footer)
        // Word a step (``WordHasher``): a shifted page makes every grid section again, and FNV-1a
        // a byte at a time cost each one about 1,100 instructions (session 40).
        var hasher = WordHasher(seed: 5)
        hasher.combine(kind.rawValue)
        hasher.combine(Int64(columns))
        hasher.combine(UInt64(items.count))
        for item in items {
            hasher.combine(item.idWord)
            hasher.combine(item.version)
        }
        if let header {
            hasher.combine(1 as UInt64)
            hasher.combine(header.idWord)
            hasher.combine(header.version)
        }
        if let footer {
            hasher.combine(2 as UInt64)
            hasher.combine(footer.idWord)
            hasher.combine(footer.version)
        }
        self.version = hasher.value
    }

    /// The header or the footer.
    public subscript(element: SupplementaryElement) -> FeedItem? {
        element == .header ? header : footer
    }

    /// Where the section's items and views go at `layout`'s width.
    public func sectionLayout(_ layout: Layout) -> SectionLayout {
        layout.section(kind: kind, itemKinds: items.lazy.map(\.kind), header: header?.kind, footer: footer?.kind)
    }

    /// The section's height at `layout`'s width, as ``sectionLayout(_:)`` lays it out. Called here,
    /// the layout's generic walk over the item kinds is specialised; called with a lazy map from
    /// another module it was not, and cost about 90,000 instructions per page composed
    /// (callgrind), a tenth of a live stream's reset.
    public func height(_ layout: Layout) -> Int {
        layout.height(of: kind, itemKinds: items.lazy.map(\.kind), header: header?.kind, footer: footer?.kind)
    }

    /// Writes the section's JSON object: items sized, and the section's `layout`, for `layout`
    /// if there is one.
    public func write(to json: inout JSONWriter, layout: Layout?) {
        json.openEnvelope(id: id, kind: kind.rawValue, version: version)
        json.literal(",\"columns\":")
        json.int(columns)
        if let header {
            json.literal(",\"header\":")
            json.raw(bytes: header.json)
        }
        if let footer {
            json.literal(",\"footer\":")
            json.raw(bytes: footer.json)
        }
        json.literal(",\"items\":[")
        for (index, item) in items.enumerated() {
            if index > 0 { json.literal(",") }
            item.write(to: &json, layout: layout)
        }
        json.literal("]")
        if let layout {
            json.literal(",\"layout\":")
            json.sectionLayout(sectionLayout(layout))
        }
        json.literal("}")
    }
}

/// When to fetch the next page (`"prefetch":{"index":7,"section":"grid-4"}`): as soon as the
/// section at `index` comes on screen (``Layout/prefetchIndex(heights:viewport:)``).
public struct Prefetch: Hashable, Sendable {
    /// The section's index in the page.
    public var index: Int
    /// The section's id.
    public var section: String

    /// Creates a hint.
    public init(index: Int, section: String) {
        self.index = index
        self.section = section
    }
}

/// A feed page as the server sends it: `{"snapshot":…,"viewer":…,"sections":[…],"next_cursor":…|null}`,
/// items sized for ``layout`` when there is one.
public struct FeedPage: Sendable {
    /// The page's snapshot id.
    public var snapshot: String
    /// Whose feed it is.
    public var viewer: Int64
    /// The sections, their items rendered once and shared with every other page showing them.
    public var sections: [FeedSection]
    /// The cursor of the next page, if any.
    public var nextCursor: String?
    /// Sizes items and lays sections out for the screen width the feed was asked with.
    public var layout: Layout?
    /// When to fetch the next page (present when there is one).
    public var prefetch: Prefetch?

    /// A page of `sections`.
    public init(snapshot: String, viewer: Int64, sections: [FeedSection], nextCursor: String?, layout: Layout?, prefetch: Prefetch? = nil) {
        self.snapshot = snapshot
        self.viewer = viewer
        self.sections = sections
        self.nextCursor = nextCursor
        self.layout = layout
        self.prefetch = prefetch
    }

    /// The JSON document, written from the sections' shared item bytes on each call.
    public var bytes: [UInt8] {
        var json = JSONWriter(capacity: 1024 + sections.reduce(0) { $0 + $1.items.reduce(64) { $0 + $1.json.count + 48 } })
        json.page(snapshot: snapshot, viewer: viewer, sections: sections, nextCursor: nextCursor, prefetch: prefetch) { json, section in
            section.write(to: &json, layout: layout)
        }
        return json.bytes
    }
}
