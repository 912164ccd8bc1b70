import FeedWire
import ListDiff

extension DeltaDocument {
    /// The delta from a snapshot's structure to the current page: section ids and kinds, item ids
    /// and versions diffed here, payloads taken from `current`'s shared items when written.
    /// An item replaced in place travels as `patch` makes it when `renderedItem` still has the
    /// version the snapshot holds (by its version text) and only fields of its data changed.
    init(
        format: DeltaFormat, from old: SnapshotStructure, oldID: String, to current: RenderedFeed, renderedItem: (String) -> FeedItem?,
        patch: (FeedItem, FeedItem) -> ItemPatch?
    ) {
        let new = current.structure
        let diff = SectionedDiff(
            oldSections: old.sections, newSections: new.sections,
            sectionIdentifier: { $0.id },
            isSectionContentEqual: { $0.kind == $1.kind },
            items: { $0.items },
            itemIdentifier: { $0.id },
            isItemContentEqual: { $0.version == $1.version })
        let page = current.sections
        // Sections matched whole (same kind) whose items changed carry a new version.
        let kept = diff.itemDiffs.filter {
            $0.items.hasChanges && old.sections[$0.oldSection].kind == page[$0.newSection].kind.rawValue
        }
        var patches: [ItemPath: ItemPatch] = [:]
        for sectionDiff in diff.itemDiffs {
            for oldIndex in sectionDiff.items.updates {
                guard let newIndex = sectionDiff.items.newIndex(forOldIndex: oldIndex),
                    let previous = renderedItem(old.sections[sectionDiff.oldSection].items[oldIndex].version)
                else { continue }
                let path = ItemPath(section: sectionDiff.newSection, item: newIndex)
                patches[path] = patch(previous, page[path.section].items[path.item])
            }
        }
        self.init(
            format: format, since: oldID, snapshot: current.snapshotID, nextCursor: current.nextCursor, page: page,
            layout: current.layout, diff: diff, keptSectionsWithChangedItems: kept.map(\.newSection), itemPatches: patches)
    }

    /// An estimate of the memory the delta holds beyond the page's shared items, for the cache.
    var estimatedCost: Int {
        let oldItems = diff.itemDiffs.reduce(0) { $0 + $1.items.oldCount }
        let newItems = page.reduce(0) { $0 + $1.items.count }
        return 512 + (diff.sections.oldCount + page.count + oldItems + newItems) * 64
    }
}
