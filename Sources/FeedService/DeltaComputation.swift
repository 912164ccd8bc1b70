import FeedWire
import ListDiff

extension DeltaDocument {
    /// The delta from a snapshot's structure to the current page: section ids and kinds, item ids
    /// and versions diffed here, payloads taken from `current`'s shared items when written.
    /// An item replaced in place travels as `patch` makes it when `renderedItem` still has the
    /// version the snapshot holds (by its version) and only fields of its data changed.
    init(
        format: DeltaFormat, from old: SnapshotStructure, to current: RenderedFeed, renderedItem: (UInt64) -> FeedItem?,
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
        // Sections matched by id and kind keep their place in every form (moved at most): their
        // items, views and layout change in place. The others are replaced whole.
        var views: [SupplementaryUpdate] = []
        var changedLayouts: [Int] = []
        var kept: [Int] = []
        // The item diffs are read by index, field by field, here and below: a loop over them
        // copied each one (its lookup's arrays retained and released), four times a section.
        let itemDiffs = diff.itemDiffs
        for position in itemDiffs.indices {
            let (oldIndex, newIndex) = (itemDiffs[position].oldSection, itemDiffs[position].newSection)
            guard old.sections[oldIndex].kind == page[newIndex].kind.rawValue else { continue }
            var viewsChanged = false
            // Most sections have no header or footer, before or after.
            if old.sections[oldIndex].header != nil || old.sections[oldIndex].footer != nil || page[newIndex].header != nil
                || page[newIndex].footer != nil
            {
                for element in SupplementaryElement.allCases {
                    let (was, now) = (old.sections[oldIndex][element], page[newIndex][element])
                    guard was?.id != now?.id || was?.version != now?.version else { continue }
                    viewsChanged = true
                    guard let now else {
                        views.append(SupplementaryUpdate(section: newIndex, element: element, change: .removed))
                        continue
                    }
                    guard let was else {
                        views.append(SupplementaryUpdate(section: newIndex, element: element, change: .inserted))
                        continue
                    }
                    let previous = was.id == now.id ? renderedItem(was.version) : nil
                    views.append(SupplementaryUpdate(section: newIndex, element: element, change: .changed, patch: previous.flatMap { patch($0, now) }))
                }
            }
            if itemDiffs[position].items.hasChanges || viewsChanged { kept.append(newIndex) }
            // A section's layout follows from its kind (the same here), its item count and its
            // views (the kinds of its items follow from its kind and count: see FeedComposer).
            if current.layout != nil,
                old.sections[oldIndex].items.count != page[newIndex].items.count
                    || old.sections[oldIndex].header?.id != page[newIndex].header?.id
                    || old.sections[oldIndex].footer?.id != page[newIndex].footer?.id
            {
                changedLayouts.append(newIndex)
            }
        }
        var patches: [ItemPath: ItemPatch] = [:]
        // Inserted items the snapshot holds unchanged elsewhere (slid from one section into the
        // next: deleted there, inserted here) are sent as their old path. Only the deleted items
        // can be: a handful, by id.
        var deleted: [String: (path: ItemPath, version: UInt64)] = [:]
        // Sized at once, as `moved` below: grown entry by entry, a shifted page (an item out of
        // every grid section, another in) rehashed them about ten times (19,000 instructions).
        var deleteCount = 0
        for position in itemDiffs.indices { deleteCount += itemDiffs[position].items.deletes.count }
        deleted.reserveCapacity(deleteCount)
        for position in itemDiffs.indices {
            let oldSection = itemDiffs[position].oldSection
            for oldIndex in itemDiffs[position].items.deletes {
                let item = old.sections[oldSection].items[oldIndex]
                deleted[item.id] = (ItemPath(section: oldSection, item: oldIndex), item.version)
            }
        }
        var moved: [ItemPath: ItemPath] = [:]
        moved.reserveCapacity(deleted.count)
        for position in itemDiffs.indices where !deleted.isEmpty {
            let newSection = itemDiffs[position].newSection
            for newIndex in itemDiffs[position].items.inserts {
                let item = new.sections[newSection].items[newIndex]
                if let held = deleted[item.id], held.version == item.version {
                    moved[ItemPath(section: newSection, item: newIndex)] = held.path
                }
            }
        }
        for position in itemDiffs.indices {
            let (oldSection, newSection) = (itemDiffs[position].oldSection, itemDiffs[position].newSection)
            for oldIndex in itemDiffs[position].items.updates {
                guard let newIndex = itemDiffs[position].items.newIndex(forOldIndex: oldIndex),
                    let previous = renderedItem(old.sections[oldSection].items[oldIndex].version)
                else { continue }
                let path = ItemPath(section: newSection, item: newIndex)
                patches[path] = patch(previous, page[path.section].items[path.item])
            }
        }
        self.init(
            format: format, snapshot: current.snapshotID, nextCursor: (old.nextCursor, current.nextCursor), page: page,
            layout: current.layout, changes: .diff(diff), keptSectionsWithChangedItems: kept, itemPatches: patches, movedItems: moved,
            supplementaryChanges: views,
            changedLayouts: changedLayouts, prefetch: (old.prefetchHint, new.prefetchHint))
    }

    /// The delta to a page that is the snapshot's own page with the items at `updatedItems`
    /// rendered again in place (``RenderedFeed/patchedFrom``): those items, each as a patch
    /// where `patch` makes one, and their sections' versions. No diff: the sections, their
    /// views and layouts, every other item and the hint are the snapshot's. The same document
    /// as the diff makes (`PatchedDeltaTests` compares them, in every form).
    init(
        format: DeltaFormat, from old: SnapshotStructure, to current: RenderedFeed, updatedItems: [ItemPath],
        renderedItem: (UInt64) -> FeedItem?, patch: (FeedItem, FeedItem) -> ItemPatch?
    ) {
        let page = current.sections
        var kept: [Int] = []
        var patches: [ItemPath: ItemPatch] = [:]
        for path in updatedItems {
            if kept.last != path.section { kept.append(path.section) }
            guard let previous = renderedItem(old.sections[path.section].items[path.item].version) else { continue }
            patches[path] = patch(previous, page[path.section].items[path.item])
        }
        // The same sections at the same offset and the same hint: the page's cursor is the
        // snapshot's, and the page keeps it made (the structure's is encoded on each call).
        self.init(
            format: format, snapshot: current.snapshotID, nextCursor: (current.nextCursor, current.nextCursor), page: page,
            layout: current.layout, changes: .itemsUpdated(updatedItems), keptSectionsWithChangedItems: kept, itemPatches: patches,
            prefetch: (old.prefetchHint, current.structure.prefetchHint))
    }

    /// An estimate of the memory the delta holds beyond the page's shared items, for the cache.
    var estimatedCost: Int {
        let newItems = page.reduce(0) { $0 + $1.items.count }
        switch changes {
        case .diff(let diff):
            let oldItems = diff.itemDiffs.reduce(0) { $0 + $1.items.oldCount }
            return 512 + (diff.sections.oldCount + page.count + oldItems + newItems) * 64
        case .itemsUpdated(let paths):
            return 512 + (page.count + newItems) * 16 + paths.count * 64
        }
    }
}
