public import FeedWire

/// How a viewer asked for the feed: page size and position, screen width, ad stacking, the kinds
/// the client renders, its viewport. Part of every snapshot, so a delta is computed against a
/// feed asked for the same way.
public struct FeedParameters: Sendable, Hashable, Codable {
    /// Sections per page, 1…``FeedParameters/maxLimit``.
    public var limit: Int
    /// Sections skipped before this page (from the cursor).
    public var offset: Int
    /// Screen width in points; when set, every item carries its size.
    public var width: Int?
    /// Whether ads are stacked into the preceding video-grid section instead of standing alone.
    public var stackAds: Bool
    /// The item and view kinds the client renders (`kinds=`); everything else is left out.
    public var kinds: ItemKinds
    /// The client's viewport height in points, for the `prefetch` hint (nil: an iPhone's, 844).
    public var viewport: Int?

    /// The default page size.
    public static let defaultLimit = 20
    /// The largest page size.
    public static let maxLimit = 200
    /// Widths accepted, in points.
    public static let widths = 200...4000
    /// Viewport heights accepted, in points.
    public static let viewports = 100...4000

    /// Creates parameters; see each property for the ranges.
    public init(
        limit: Int = FeedParameters.defaultLimit, offset: Int = 0, width: Int? = nil, stackAds: Bool = false, kinds: ItemKinds = .all,
        viewport: Int? = nil
    ) {
        self.limit = limit
        self.offset = offset
        self.width = width
        self.stackAds = stackAds
        self.kinds = kinds
        self.viewport = viewport
    }

    /// The offset a cursor from ``RenderedFeed/nextCursor`` stands for, or nil if it is not one.
    public static func offset(fromCursor cursor: String) -> Int? {
        FeedCursor.decode(cursor)
    }

    enum CodingKeys: String, CodingKey {
        case limit, offset, width, kinds, viewport
        case stackAds = "stack_ads"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            limit: try container.decode(Int.self, forKey: .limit), offset: try container.decode(Int.self, forKey: .offset),
            width: try container.decodeIfPresent(Int.self, forKey: .width), stackAds: try container.decode(Bool.self, forKey: .stackAds),
            kinds: try container.decodeIfPresent(ItemKinds.self, forKey: .kinds) ?? .all,
            viewport: try container.decodeIfPresent(Int.self, forKey: .viewport))
    }
}

/// A set of the kinds a client renders, items and supplementary views (`kinds=video,ad,…`).
/// Each known kind has a fixed bit, so the set is stored in snapshots as one number.
public struct ItemKinds: Sendable, Hashable, Codable {
    /// One bit per kind (``bit(_:)``).
    public let rawValue: UInt32

    /// Every kind: what a client that sends no `kinds` gets.
    public static let all = ItemKinds(ItemKind.allCases)

    /// The set with these bits; bits of no known kind are dropped.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue & ItemKind.allCases.reduce(0) { $0 | ItemKinds.bit($1) }
    }

    /// The set of `kinds`.
    public init(_ kinds: some Sequence<ItemKind>) {
        rawValue = kinds.reduce(0) { $0 | ItemKinds.bit($1) }
    }

    /// The kinds named in a `kinds=` value, comma-separated; names this server does not know are
    /// ignored (a newer client's). Nil for a value with no name at all.
    public init?(parameter: some StringProtocol) {
        let names = parameter.split(separator: ",", omittingEmptySubsequences: true)
        guard !names.isEmpty else { return nil }
        self.init(names.compactMap { ItemKind(rawValue: String($0)) })
    }

    /// Whether the set holds `kind`.
    public func contains(_ kind: ItemKind) -> Bool {
        rawValue & ItemKinds.bit(kind) != 0
    }

    /// The kinds' names, in a fixed order.
    public var names: [String] {
        ItemKind.allCases.filter(contains).map(\.rawValue)
    }

    /// Each kind's bit: fixed forever, since stored snapshots carry them.
    static func bit(_ kind: ItemKind) -> UInt32 {
        switch kind {
        case .video: 1 << 0
        case .ad: 1 << 1
        case .user: 1 << 2
        case .header: 1 << 3
        case .empty: 1 << 4
        case .sectionTitle: 1 << 5
        case .seeAll: 1 << 6
        case .sponsored: 1 << 7
        }
    }

    public init(from decoder: any Decoder) throws {
        let names = try decoder.singleValueContainer().decode([String].self)
        self.init(names.compactMap(ItemKind.init(rawValue:)))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(names)
    }
}

/// The opaque pagination cursor: `o` + the section offset in base 36. Opaque to clients.
enum FeedCursor {
    /// The cursor of `offset` (at least 0). Digits written into the string's storage: through
    /// `String(_:radix:)`, unspecialised, a cursor cost about 570 instructions (callgrind), and
    /// every page composed and every delta that diffs makes one.
    static func encode(offset: Int) -> String {
        guard offset >= 0 else { return "o" + String(offset, radix: 36) }
        var digitCount = 1
        var rest = offset / 36
        while rest > 0 {
            digitCount += 1
            rest /= 36
        }
        return String(unsafeUninitializedCapacity: digitCount + 1) { buffer in
            buffer[0] = UInt8(ascii: "o")
            var value = offset
            for position in stride(from: digitCount, to: 0, by: -1) {
                let digit = UInt8(value % 36)
                buffer[position] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
                value /= 36
            }
            return digitCount + 1
        }
    }

    static func decode(_ cursor: String) -> Int? {
        guard cursor.hasPrefix("o"), cursor.utf8.count <= 8, let offset = Int(cursor.dropFirst(), radix: 36), offset >= 0 else {
            return nil
        }
        return offset
    }
}
