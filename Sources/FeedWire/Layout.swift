/// Cell sizes for a screen width, in points. The rules (also in the README):
/// - insets of 12 on both sides; 8 between the two grid columns;
/// - a video cell is half the remaining width; its thumbnail is 3:4 (portrait) with a 40-point
///   author bar under it;
/// - an ad is full width (minus insets): a 16:9 image and a 56-point title bar;
/// - a suggested user is a 120×168 card in a horizontal carousel;
/// - the header is full width × 56; the empty state full width × 240.
public struct Layout: Sendable, Hashable {
    /// The screen width.
    public let width: Int

    /// The layout for a screen `width` points wide.
    public init(width: Int) {
        self.width = width
    }
    /// Left and right inset.
    public static let inset = 12
    /// Space between grid columns.
    public static let columnSpacing = 8

    /// The size of an item of `kind`.
    public func size(of kind: ItemKind) -> CellSize {
        let content = max(0, width - 2 * Layout.inset)
        switch kind {
        case .video:
            let cell = (content - Layout.columnSpacing) / 2
            return CellSize(width: cell, height: cell * 4 / 3 + 40)
        case .ad:
            return CellSize(width: content, height: content * 9 / 16 + 56)
        case .user:
            return CellSize(width: 120, height: 168)
        case .header:
            return CellSize(width: content, height: 56)
        case .empty:
            return CellSize(width: content, height: 240)
        }
    }
}

/// A cell's size in points, as an item carries it (`"size":{"width":…,"height":…}`): what
/// ``Layout`` gives the server and what a client reads back.
public struct CellSize: Hashable, Sendable {
    /// Width in points.
    public var width: Int
    /// Height in points.
    public var height: Int
}
