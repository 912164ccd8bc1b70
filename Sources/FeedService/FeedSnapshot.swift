import Deterministic
public import FeedWire
package import Foundation
import JSONBytes

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
        /// The header and footer, boxed: most sections have neither, and the snapshots kept in
        /// memory hold hundreds of thousands of sections (two inline optionals cost each of them
        /// 64 bytes; a box costs 8).
        private var views: Views?

        /// The header's id and version, if the section has one.
        public var header: Item? {
            get { views?.header }
            set { views = Views.make(header: newValue, footer: footer) }
        }

        /// The footer's id and version, if the section has one.
        public var footer: Item? {
            get { views?.footer }
            set { views = Views.make(header: header, footer: newValue) }
        }

        /// Creates a section shape.
        public init(id: String, kind: String, items: [Item], header: Item? = nil, footer: Item? = nil) {
            self.id = id
            self.kind = kind
            self.items = items
            self.views = Views.make(header: header, footer: footer)
        }

        /// The shape of a page's section.
        package init(_ section: FeedSection) {
            func shape(_ item: FeedItem) -> Item { Item(id: item.id, version: item.version) }
            self.init(
                id: section.id, kind: section.kind.rawValue, items: section.items.map(shape), header: section.header.map(shape),
                footer: section.footer.map(shape))
        }

        /// Whether the section has a header or a footer, told without reading their box.
        var hasViews: Bool { views != nil }

        /// The header or the footer.
        public subscript(element: SupplementaryElement) -> Item? {
            element == .header ? header : footer
        }
    }

    /// A section's header and footer (at least one of them).
    final class Views: Sendable, Hashable, Codable {
        let header: Item?
        let footer: Item?

        private init(header: Item?, footer: Item?) {
            self.header = header
            self.footer = footer
        }

        /// The box for these views, nil for none.
        static func make(header: Item?, footer: Item?) -> Views? {
            header == nil && footer == nil ? nil : Views(header: header, footer: footer)
        }

        static func == (left: Views, right: Views) -> Bool {
            left.header == right.header && left.footer == right.footer
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(header)
            hasher.combine(footer)
        }
    }

    /// One item of a snapshot section: its id and version.
    ///
    /// The version is kept as its value, not as its 16 hex digits: a text of 16 bytes is one
    /// heap object per item, counted up and down each time a page's items are copied, compared,
    /// hashed or freed (the snapshots in memory hold hundreds of thousands of items, and every
    /// change hands out new ones). As a number an item is 24 bytes with nothing to count.
    public struct Item: Sendable, Hashable, Codable {
        /// The item id.
        public var id: String
        /// The item version (``FeedWire/FeedItem/version``).
        public var version: UInt64

        /// Creates an item shape.
        public init(id: String, version: UInt64) {
            self.id = id
            self.version = version
        }

        /// An item shape whose version is given as it is sent: nil unless `versionText` is 16
        /// lowercase hex digits.
        public init?(id: String, versionText: String) {
            guard let version = Self.versionValue(versionText) else { return nil }
            self.init(id: id, version: version)
        }

        /// The version as it is sent: 16 lowercase hex digits.
        public var versionText: String { hex16(version) }

        /// The value of a version's 16 lowercase hex digits, nil for any other text.
        public static func versionValue(_ text: String) -> UInt64? {
            guard isLowercaseHex(text, count: 16) else { return nil }
            return UInt64(text, radix: 16)
        }

        private enum CodingKeys: String, CodingKey {
            case id, version
        }

        /// Coded as it is sent: `{"id": …, "version": "<16 hex digits>"}`.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let text = try container.decode(String.self, forKey: .version)
            guard let version = Self.versionValue(text) else {
                throw DecodingError.dataCorruptedError(forKey: .version, in: container, debugDescription: "not 16 lowercase hex digits")
            }
            self.init(id: try container.decode(String.self, forKey: .id), version: version)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(versionText, forKey: .version)
        }
    }

    /// Whose feed this was.
    public var viewer: Int64
    /// How the feed was asked for.
    public var parameters: FeedParameters
    /// The sections in order.
    public var sections: [Section]
    /// The index of the section the page's `prefetch` hint names (nil: no next page). Part of
    /// the id: whether there is a next page is not in the sections, and a page that gains or
    /// loses one (its `next_cursor` and hint) is a change a client must be told of.
    public var prefetch: Int?

    /// Creates a structure.
    public init(viewer: Int64, parameters: FeedParameters, sections: [Section], prefetch: Int? = nil) {
        self.viewer = viewer
        self.parameters = parameters
        self.sections = sections
        self.prefetch = prefetch
    }

    /// The structure of a page; `hasNextPage` decides whether it has a `prefetch` hint.
    package init(viewer: Int64, parameters: FeedParameters, page: [FeedSection], hasNextPage: Bool) {
        var prefetch: Int?
        if hasNextPage {
            let layout = Layout(width: parameters.width ?? Layout.defaultWidth)
            prefetch = Layout.prefetchIndex(
                heights: page.map { $0.height(layout) },
                viewport: parameters.viewport ?? Layout.defaultViewport)
        }
        self.init(viewer: viewer, parameters: parameters, page: page, prefetch: prefetch)
    }

    /// The structure of a page whose hint is known: a page patched in place (versions changed,
    /// nothing added or removed) keeps the one of the page it was patched from.
    package init(viewer: Int64, parameters: FeedParameters, page: [FeedSection], prefetch: Int?) {
        self.init(viewer: viewer, parameters: parameters, sections: page.map(Section.init), prefetch: prefetch)
    }

    /// The `next_cursor` of the page this structure describes: where the next page starts, nil
    /// on the last page (which has no `prefetch` hint).
    public var nextCursor: String? {
        prefetch == nil ? nil : FeedCursor.encode(offset: parameters.offset + sections.count)
    }

    /// The `prefetch` hint of the page this structure describes.
    public var prefetchHint: Prefetch? {
        guard let prefetch, sections.indices.contains(prefetch) else { return nil }
        return Prefetch(index: prefetch, section: sections[prefetch].id)
    }

    /// The snapshot id: 32 hex digits hashing the viewer, the parameters and every section and
    /// item id and version. Equal feeds for the same viewer have equal ids.
    ///
    /// Two 64-bit hashes (``Deterministic/WordHasher``, with independent multipliers), each of
    /// the prefix (viewer, parameters, hint) followed by every section's own hash: a page with
    /// one item patched hashes that item's section again and folds the section hashes, instead of
    /// hashing every item after it (a like on a video most pages show did that for every page,
    /// 10 % of the live thread's fan-out).
    ///
    /// Until session 40 these were FNV-1a a byte at a time (``Deterministic/StableHasher``), so
    /// a snapshot stored by an earlier release does not hash to its id now: ``hashesToItsID(_:)``
    /// tells, and a delta from one carries every section's version (the client holds the old
    /// ones).
    public var id: String { idHashes().id }

    /// Whether this structure hashes to `id`: false for a snapshot an earlier release stored
    /// (its ids and section versions were hashed another way), or one a client made up.
    package func hashesToItsID(_ id: String) -> Bool {
        self.id == id
    }

    /// The hashes behind a snapshot id: the prefix's and each section's.
    package struct IDHashes: Sendable {
        /// The viewer's, parameters' and hint's two hashes (``WordHasher`` states).
        fileprivate var prefix: (UInt64, UInt64)
        /// Section i's two hashes at 2i and 2i + 1.
        fileprivate var sections: [UInt64]

        /// The snapshot id: the prefix's hashes followed by the sections', and their count.
        package var id: String {
            var first = WordHasher(state: prefix.0, multiplier: WordHasher.firstMultiplier)
            var second = WordHasher(state: prefix.1, multiplier: WordHasher.secondMultiplier)
            for index in stride(from: 0, to: sections.count, by: 2) {
                first.combine(sections[index])
                second.combine(sections[index + 1])
            }
            first.combine(UInt64(sections.count / 2))
            second.combine(UInt64(sections.count / 2))
            return hex32(first.value, second.value)
        }
    }

    /// The id's hashes, every section hashed.
    package func idHashes() -> IDHashes {
        idHashes { sectionHashes(sections[$0]) }
    }

    /// ``idHashes()`` of the structure of `page` (``init(viewer:parameters:page:prefetch:)``),
    /// hashing its sections from the page's items, whose id words are made already.
    package func idHashes(page: [FeedSection]) -> IDHashes {
        assert(page.count == sections.count, "the structure of another page")
        return idHashes { SnapshotStructure.sectionHashes(page[$0]) }
    }

    private func idHashes(section: (Int) -> (UInt64, UInt64)) -> IDHashes {
        var first = WordHasher(seed: 1, multiplier: WordHasher.firstMultiplier)
        var second = WordHasher(seed: 2, multiplier: WordHasher.secondMultiplier)
        hashPrefix(&first, &second)
        var hashes = [UInt64](repeating: 0, count: 2 * sections.count)
        for index in sections.indices {
            (hashes[2 * index], hashes[2 * index + 1]) = section(index)
        }
        return IDHashes(prefix: (first.state, second.state), sections: hashes)
    }

    /// The id's hashes from `earlier`, those of a structure with the same viewer, parameters,
    /// hint and section count whose sections other than `changed` are these ones: only the
    /// changed sections are hashed again, from `page`'s (this structure's page) when given (the
    /// same result as ``idHashes()``). Hashes of another section count are not reused.
    package func idHashes(reusing earlier: IDHashes, changed: some Sequence<Int>, page: [FeedSection]? = nil) -> IDHashes {
        guard earlier.sections.count == 2 * sections.count else { return page.map(idHashes(page:)) ?? idHashes() }
        var hashes = earlier.sections
        for index in changed {
            (hashes[2 * index], hashes[2 * index + 1]) =
                if let page { SnapshotStructure.sectionHashes(page[index]) } else { sectionHashes(sections[index]) }
        }
        return IDHashes(prefix: earlier.prefix, sections: hashes)
    }

    /// A section's two hashes: its id, kind, items (the words of their ids, and versions),
    /// header and footer.
    private func sectionHashes(_ section: Section) -> (UInt64, UInt64) {
        SnapshotStructure.sectionHashes(
            id: section.id, kind: section.kind, items: section.items.lazy.map { (WordHasher.hash($0.id), $0.version) },
            header: section.header.map { (WordHasher.hash($0.id), $0.version) },
            footer: section.footer.map { (WordHasher.hash($0.id), $0.version) })
    }

    /// ``sectionHashes(_:)`` of `section`'s structure, from its items' id words.
    private static func sectionHashes(_ section: FeedSection) -> (UInt64, UInt64) {
        sectionHashes(
            id: section.id, kind: section.kind.rawValue, items: section.items.lazy.map { ($0.idWord, $0.version) },
            header: section.header.map { ($0.idWord, $0.version) }, footer: section.footer.map { ($0.idWord, $0.version) })
    }

    private static func sectionHashes(
        id: String, kind: String, items: some Collection<(UInt64, UInt64)>, header: (UInt64, UInt64)?, footer: (UInt64, UInt64)?
    ) -> (UInt64, UInt64) {
        var first = WordHasher(seed: 3, multiplier: WordHasher.firstMultiplier)
        var second = WordHasher(seed: 4, multiplier: WordHasher.secondMultiplier)
        func combine(_ word: UInt64) {
            WordHasher.combine(word, into: &first, &second)
        }
        WordHasher.combine(id, into: &first, &second)
        WordHasher.combine(kind, into: &first, &second)
        combine(UInt64(items.count))
        for (idWord, version) in items {
            combine(idWord)
            combine(version)
        }
        // Present views are marked, so a header and a footer of one item differ.
        if let (idWord, version) = header {
            combine(1)
            combine(idWord)
            combine(version)
        }
        if let (idWord, version) = footer {
            combine(2)
            combine(idWord)
            combine(version)
        }
        return (first.value, second.value)
    }

    /// What the id hashes before the sections: the viewer, the parameters and the hint.
    private func hashPrefix(_ first: inout WordHasher, _ second: inout WordHasher) {
        func combine(_ text: String) {
            WordHasher.combine(text, into: &first, &second)
        }
        func combine(_ value: Int64) {
            WordHasher.combine(UInt64(bitPattern: value), into: &first, &second)
        }
        combine(viewer)
        combine(Int64(parameters.limit))
        combine(Int64(parameters.offset))
        combine(Int64(parameters.width ?? -1))
        combine(parameters.stackAds ? 1 : 0)
        // Parameters and views added later count only when they differ from the default, so
        // a page asked for without them keeps its id.
        if parameters.kinds != .all { combine("kinds:\(parameters.kinds.rawValue)") }
        if let viewport = parameters.viewport { combine("viewport:\(viewport)") }
        if let prefetch { combine("prefetch:\(prefetch)") }
    }

    /// The bytes stored in the snapshots table: a compact binary form (``SnapshotCoding``),
    /// written and read without any generic encoder: the persister encodes every snapshot handed
    /// out, so this is on a hot path (a `JSONEncoder` took a quarter of the server's CPU under a
    /// polling load).
    package func encoded() -> Data {
        Data(SnapshotCoding.encode(self))
    }

    /// Reads stored bytes back: the binary form, or the JSON of the `Codable` conformance that
    /// earlier versions stored.
    package static func decode(_ data: Data) throws -> SnapshotStructure {
        if SnapshotCoding.isBinary(data) { return try SnapshotCoding.decode(Array(data)) }
        let value = try JSONValue(parsing: data)
        struct Malformed: Error {}
        func int(_ value: JSONValue?) throws -> Int {
            guard case .int(let number)? = value, let result = Int(exactly: number) else { throw Malformed() }
            return result
        }
        func string(_ value: JSONValue?) throws -> String {
            guard case .string(let text)? = value else { throw Malformed() }
            return text
        }
        guard case .object(let root) = value, case .object(let parameters)? = root["parameters"],
            case .array(let sections)? = root["sections"]
        else { throw Malformed() }
        var width: Int?
        if let stored = parameters["width"], stored != .null { width = try int(stored) }
        guard case .bool(let stackAds)? = parameters["stack_ads"] else { throw Malformed() }
        let decodedParameters = FeedParameters(
            limit: try int(parameters["limit"]), offset: try int(parameters["offset"]), width: width, stackAds: stackAds)
        let decodedSections = try sections.map { section -> Section in
            guard case .array(let items)? = section["items"] else { throw Malformed() }
            return Section(
                id: try string(section["id"]), kind: try string(section["kind"]),
                items: try items.map { item in
                    guard let shape = Item(id: try string(item["id"]), versionText: try string(item["version"])) else { throw Malformed() }
                    return shape
                })
        }
        return SnapshotStructure(viewer: Int64(try int(root["viewer"])), parameters: decodedParameters, sections: decodedSections)
    }

    /// Whether `id` has the form of a snapshot id (32 lowercase hex digits).
    public static func isWellFormedID(_ id: String) -> Bool {
        isLowercaseHex(id, count: 32)
    }
}
