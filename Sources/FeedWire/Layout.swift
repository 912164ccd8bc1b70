public import JSONBytes

/// Cell sizes and section frames for a screen width, in points. The rules (also in the README):
/// - every section has insets of 8 on all four sides; rows are 8 apart (line spacing) and so are
///   cells in a row (inter-item spacing);
/// - a video cell is half the content width (the width less the side insets) less half the
///   spacing; its thumbnail is 3:4 (portrait) with a 40-point author bar under it;
/// - an ad spans the content width (both grid columns): a 16:9 image and a 56-point title bar;
/// - a suggested user is a 120×168 card in a carousel that scrolls sideways;
/// - the header item is content width × 56, the empty state content width × 240;
/// - supplementary views (headers and footers) span the whole width above and below the insets:
///   a section title 44 high, "See all" 44, "Sponsored" 24.
///
/// Cells flow left to right and wrap like `UICollectionViewFlowLayout` with left-aligned rows: two
/// video cells share a row, a full-width cell takes a row of its own.
public struct Layout: Sendable, Hashable {
    /// The screen width.
    public let width: Int

    /// The layout for a screen `width` points wide.
    public init(width: Int) {
        self.width = width
    }
    /// Every section's inset on each side.
    public static let inset = 8
    /// Space between rows, and between cells in a row.
    public static let spacing = 8
    /// The width `prefetch` lays a page out at when the feed was asked without one (an iPhone's).
    public static let defaultWidth = 390
    /// The viewport height `prefetch` assumes when the client gives none (an iPhone's).
    public static let defaultViewport = 844

    /// The width between a section's side insets.
    public var contentWidth: Int { max(0, width - 2 * Layout.inset) }

    /// The size of an item of `kind` (for a supplementary view, its frame's size).
    public func size(of kind: ItemKind) -> CellSize {
        let content = contentWidth
        switch kind {
        case .video:
            let cell = max(0, (content - Layout.spacing) / 2)
            return CellSize(width: cell, height: cell * 4 / 3 + 40)
        case .ad:
            return CellSize(width: content, height: content * 9 / 16 + 56)
        case .user:
            return CellSize(width: 120, height: 168)
        case .header:
            return CellSize(width: content, height: 56)
        case .empty:
            return CellSize(width: content, height: 240)
        case .sectionTitle, .seeAll:
            return CellSize(width: width, height: 44)
        case .sponsored:
            return CellSize(width: width, height: 24)
        }
    }

    /// The frames of a section of `kind` holding items of `itemKinds` in order, with a header
    /// and a footer of the kinds given (nil: none).
    public func section(kind: SectionKind, itemKinds: some Sequence<ItemKind>, header: ItemKind?, footer: ItemKind?) -> SectionLayout {
        var frames: [Frame] = []
        let placed = place(kind: kind, itemKinds: itemKinds, header: header, footer: footer) { frames.append($0) }
        return SectionLayout(
            height: placed.height, insets: Layout.insets, contentWidth: placed.contentWidth,
            header: header.map { Frame(x: 0, y: 0, width: width, height: size(of: $0).height) }, footer: placed.footer, frames: frames)
    }

    /// The height of the section ``section(kind:itemKinds:header:footer:)`` lays out, without
    /// building its frames (the `prefetch` hint needs every section's height).
    public func height(of kind: SectionKind, itemKinds: some Sequence<ItemKind>, header: ItemKind?, footer: ItemKind?) -> Int {
        place(kind: kind, itemKinds: itemKinds, header: header, footer: footer) { _ in }.height
    }

    /// Every section's margins.
    static let insets = Insets(top: Layout.inset, left: Layout.inset, bottom: Layout.inset, right: Layout.inset)

    /// Places the items one after the other, handing each frame to `frame`: one row that scrolls
    /// sideways for the carousel; otherwise rows left to right, a cell that does not fit the
    /// row's rest starting the next.
    private func place(
        kind: SectionKind, itemKinds: some Sequence<ItemKind>, header: ItemKind?, footer: ItemKind?, frame: (Frame) -> Void
    ) -> (height: Int, contentWidth: Int?, footer: Frame?) {
        let insets = Layout.insets
        let top = (header.map { size(of: $0).height } ?? 0) + insets.top
        var contentHeight = 0
        var contentWidth: Int?
        var placed = 0
        if kind == .followSuggestions {
            var x = insets.left
            for itemKind in itemKinds {
                let size = size(of: itemKind)
                if placed > 0 { x += Layout.spacing }
                frame(Frame(x: x, y: top, width: size.width, height: size.height))
                placed += 1
                x += size.width
                contentHeight = max(contentHeight, size.height)
            }
            contentWidth = x + insets.right
        } else {
            let available = self.contentWidth
            var x = 0
            var rowTop = 0
            var rowHeight = 0
            for itemKind in itemKinds {
                let size = size(of: itemKind)
                if x > 0, x + Layout.spacing + size.width > available {
                    rowTop += rowHeight + Layout.spacing
                    x = 0
                    rowHeight = 0
                } else if x > 0 {
                    x += Layout.spacing
                }
                frame(Frame(x: insets.left + x, y: top + rowTop, width: size.width, height: size.height))
                placed += 1
                x += size.width
                rowHeight = max(rowHeight, size.height)
            }
            contentHeight = placed == 0 ? 0 : rowTop + rowHeight
        }
        let footerTop = top + contentHeight + insets.bottom
        let footerFrame = footer.map { Frame(x: 0, y: footerTop, width: width, height: size(of: $0).height) }
        return (footerTop + (footerFrame?.height ?? 0), contentWidth, footerFrame)
    }

    /// The section after whose appearance on screen a client should fetch the next page, given
    /// the heights of the page's sections and the viewport's: the first section whose top is at
    /// or below the page's height less two viewports (so at most two viewports of content remain
    /// below the screen's bottom edge when it appears), the last if none is, the first when the
    /// whole page is shorter than two viewports. IGListKit's working range, in points.
    public static func prefetchIndex(heights: [Int], viewport: Int) -> Int? {
        guard !heights.isEmpty else { return nil }
        let threshold = heights.reduce(0, +) - 2 * viewport
        var top = 0
        for (index, height) in heights.enumerated() {
            if top >= threshold { return index }
            top += height
        }
        return heights.count - 1
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

/// A rectangle in points relative to its section's top-left corner:
/// `{"x":…,"y":…,"width":…,"height":…}`.
public struct Frame: Hashable, Sendable {
    /// Distance from the section's left edge.
    public var x: Int
    /// Distance from the section's top edge.
    public var y: Int
    /// Width.
    public var width: Int
    /// Height.
    public var height: Int

    /// Creates a frame.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// Whether the two frames share any point (touching edges do not count).
    public func overlaps(_ other: Frame) -> Bool {
        x < other.x + other.width && other.x < x + width && y < other.y + other.height && other.y < y + height
    }
}

/// A section's margins inside its frame: `{"top":…,"left":…,"bottom":…,"right":…}`.
public struct Insets: Hashable, Sendable {
    /// Above the first row (below the header).
    public var top: Int
    /// Left of every row.
    public var left: Int
    /// Below the last row (above the footer).
    public var bottom: Int
    /// Right of every row.
    public var right: Int

    /// Creates insets.
    public init(top: Int, left: Int, bottom: Int, right: Int) {
        self.top = top
        self.left = left
        self.bottom = bottom
        self.right = right
    }
}

/// Where everything in one section goes, computed by the server for the width the feed was asked
/// with (`"layout"` in the section's JSON):
///
///     {"height":272,"insets":{"top":8,"left":8,"bottom":8,"right":8},
///      "scroll":"horizontal","content_width":1288,
///      "header":{"x":0,"y":0,"width":390,"height":44},"footer":{…},
///      "frames":[{"x":8,"y":52,"width":120,"height":168},…]}
///
/// `frames[i]` is the frame of the section's item `i`: frames belong to positions, not to items,
/// so a like, or a video sliding one place along the grid, moves no frame and the delta carries
/// no layout. `scroll` and `content_width` appear only on a section that scrolls sideways (the
/// suggestions carousel); every other section's frames fit within the screen width.
public struct SectionLayout: Hashable, Sendable {
    /// The section's height, header and footer included.
    public var height: Int
    /// The margins around the items.
    public var insets: Insets
    /// The width of the content of a section that scrolls sideways; nil for one that does not.
    public var contentWidth: Int?
    /// The header's frame, if the section has one.
    public var header: Frame?
    /// The footer's frame, if the section has one.
    public var footer: Frame?
    /// Each item's frame, in item order.
    public var frames: [Frame]

    /// Creates a section layout.
    public init(height: Int, insets: Insets, contentWidth: Int? = nil, header: Frame? = nil, footer: Frame? = nil, frames: [Frame]) {
        self.height = height
        self.insets = insets
        self.contentWidth = contentWidth
        self.header = header
        self.footer = footer
        self.frames = frames
    }
}

extension JSONWriter {
    /// `{"x":…,"y":…,"width":…,"height":…}`.
    public mutating func frame(_ frame: Frame) {
        raw("{\"x\":")
        int(frame.x)
        raw(",\"y\":")
        int(frame.y)
        raw(",\"width\":")
        int(frame.width)
        raw(",\"height\":")
        int(frame.height)
        raw("}")
    }

    /// A section's `layout` object.
    public mutating func sectionLayout(_ layout: SectionLayout) {
        raw("{\"height\":")
        int(layout.height)
        raw(",\"insets\":{\"top\":")
        int(layout.insets.top)
        raw(",\"left\":")
        int(layout.insets.left)
        raw(",\"bottom\":")
        int(layout.insets.bottom)
        raw(",\"right\":")
        int(layout.insets.right)
        raw("}")
        if let contentWidth = layout.contentWidth {
            raw(",\"scroll\":\"horizontal\",\"content_width\":")
            int(contentWidth)
        }
        if let header = layout.header {
            raw(",\"header\":")
            frame(header)
        }
        if let footer = layout.footer {
            raw(",\"footer\":")
            frame(footer)
        }
        raw(",\"frames\":")
        array(layout.frames) { $0.frame($1) }
        raw("}")
    }
}
