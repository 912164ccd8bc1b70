import FeedWire
import ListDiff

/// The difference between a stored snapshot and the current feed page, diffed here and written
/// by FeedWire's ``DeltaDocument``.
struct DeltaRenderer {
    let old: SnapshotStructure
    let oldID: String
    let page: [FeedSection]
    /// The page's structure (already computed when the page was composed).
    let new: SnapshotStructure
    let newID: String
    let nextCursor: String?
    /// Sizes items for the screen width the feed was asked with.
    var layout: Layout? { new.parameters.width.map(Layout.init(width:)) }

    typealias Diff = SectionedDiff<String, String>

    func diff() -> Diff {
        SectionedDiff(
            oldSections: old.sections, newSections: new.sections,
            sectionIdentifier: { $0.id },
            isSectionContentEqual: { $0.kind == $1.kind },
            items: { $0.items },
            itemIdentifier: { $0.id },
            isItemContentEqual: { $0.version == $1.version })
    }

    func render(_ format: DeltaFormat) -> [UInt8] {
        let diff = diff()
        // Sections matched whole (same kind) whose items changed carry a new version.
        let kept = diff.itemDiffs.filter {
            $0.items.hasChanges && old.sections[$0.oldSection].kind == page[$0.newSection].kind.rawValue
        }
        return DeltaDocument(
            since: oldID, snapshot: newID, nextCursor: nextCursor, page: page, layout: layout, diff: diff,
            keptSectionsWithChangedItems: kept.map(\.newSection)
        ).bytes(format)
    }
}
