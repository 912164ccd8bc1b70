/// How a viewer asked for the feed: page size and position, screen width, ad stacking.
/// Part of every snapshot, so a delta is computed against a feed asked for the same way.
public struct FeedParameters: Sendable, Hashable, Codable {
    /// Sections per page, 1…``FeedParameters/maxLimit``.
    public var limit: Int
    /// Sections skipped before this page (from the cursor).
    public var offset: Int
    /// Screen width in points; when set, every item carries its size.
    public var width: Int?
    /// Whether ads are stacked into the preceding video-grid section instead of standing alone.
    public var stackAds: Bool

    /// The default page size.
    public static let defaultLimit = 20
    /// The largest page size.
    public static let maxLimit = 200
    /// Widths accepted, in points.
    public static let widths = 200...4000

    /// Creates parameters; see each property for the ranges.
    public init(limit: Int = FeedParameters.defaultLimit, offset: Int = 0, width: Int? = nil, stackAds: Bool = false) {
        self.limit = limit
        self.offset = offset
        self.width = width
        self.stackAds = stackAds
    }

    /// The offset a cursor from ``RenderedFeed/nextCursor`` stands for, or nil if it is not one.
    public static func offset(fromCursor cursor: String) -> Int? {
        FeedCursor.decode(cursor)
    }

    enum CodingKeys: String, CodingKey {
        case limit, offset, width
        case stackAds = "stack_ads"
    }
}

/// The opaque pagination cursor: `o` + the section offset in base 36. Opaque to clients.
enum FeedCursor {
    static func encode(offset: Int) -> String { "o" + String(offset, radix: 36) }

    static func decode(_ cursor: String) -> Int? {
        guard cursor.hasPrefix("o"), cursor.utf8.count <= 8, let offset = Int(cursor.dropFirst(), radix: 36), offset >= 0 else {
            return nil
        }
        return offset
    }
}
