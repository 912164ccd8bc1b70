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
        var kept = KeptSections()
        // The item diffs are read by index, field by field, here and below: a loop over them
        // copied each one (its lookup's arrays retained and released), four times a section.
        let itemDiffs = diff.itemDiffs
        for position in itemDiffs.indices {
            let (oldIndex, newIndex) = (itemDiffs[position].oldSection, itemDiffs[position].newSection)
            guard old.sections[oldIndex].kind == page[newIndex].kind.rawValue else { continue }
            kept.note(
                old: old.sections[oldIndex], new: page[newIndex], at: newIndex, itemsChanged: itemDiffs[position].items.hasChanges,
                layout: current.layout != nil, renderedItem: renderedItem, patch: patch)
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
            layout: current.layout, changes: .diff(diff), keptSectionsWithChangedItems: kept.withChangedItems, itemPatches: patches,
            movedItems: moved, supplementaryChanges: kept.views, changedLayouts: kept.layouts, prefetch: (old.prefetchHint, new.prefetchHint))
    }

    /// The delta to a page that is the snapshot's own page with only the items of
    /// `changedSections` (ascending) changed (``RenderedFeed/patchedFrom``: a new video at the
    /// top slid every grid section's videos on by one), built from each such section's items
    /// matched by id, without a diff. Nil when that is not the diff's outcome, so the caller
    /// diffs: a section's id or kind changed, or its items did not keep their order (an id
    /// that repeats in a section comes out that way too), or a section is longer than a scan
    /// is worth. The same document as the diff makes (`ShiftedDeltaTests` compares them).
    init?(
        format: DeltaFormat, from old: SnapshotStructure, to current: RenderedFeed, changedSections: [Int],
        renderedItem: (UInt64) -> FeedItem?, patch: (FeedItem, FeedItem) -> ItemPatch?
    ) {
        let new = current.structure
        let page = current.sections
        guard old.sections.count == new.sections.count, zip(changedSections, changedSections.dropFirst()).allSatisfy({ $0 < $1 }),
            changedSections.allSatisfy(new.sections.indices.contains)
        else { return nil }
        var deletes: [ItemPath] = []
        var inserts: [ItemPath] = []
        var updates: [(old: ItemPath, new: ItemPath)] = []
        var matched: [Int] = []
        // A shift deletes and inserts one item a section.
        deletes.reserveCapacity(changedSections.count)
        inserts.reserveCapacity(changedSections.count)
        for section in changedSections {
            let (was, now) = (old.sections[section], new.sections[section])
            guard was.id == now.id, was.kind == now.kind, was.items.count <= Self.longestScanned, now.items.count <= Self.longestScanned
            else { return nil }
            // Each new item's old index by id (-1: inserted). They must ascend: then the diff
            // matches exactly these and moves nothing.
            matched.removeAll(keepingCapacity: true)
            var previous = -1
            for item in now.items {
                var index = -1
                for candidate in was.items.indices where was.items[candidate].id == item.id {
                    index = candidate
                    break
                }
                if index >= 0 {
                    guard index > previous else { return nil }
                    previous = index
                }
                matched.append(index)
            }
            var next = 0
            for (newIndex, oldIndex) in matched.enumerated() {
                guard oldIndex >= 0 else {
                    inserts.append(ItemPath(section: section, item: newIndex))
                    continue
                }
                while next < oldIndex {
                    deletes.append(ItemPath(section: section, item: next))
                    next += 1
                }
                next = oldIndex + 1
                if was.items[oldIndex].version != now.items[newIndex].version {
                    updates.append((ItemPath(section: section, item: oldIndex), ItemPath(section: section, item: newIndex)))
                }
            }
            while next < was.items.count {
                deletes.append(ItemPath(section: section, item: next))
                next += 1
            }
        }
        let edits = OrderedItemEdits(deletes: deletes, inserts: inserts, updates: updates)
        var kept = KeptSections()
        var (d, i, u) = (0, 0, 0)
        for section in changedSections {
            // Whether this section's items changed: its edits are the next in each list.
            var itemsChanged = false
            while d < deletes.count && deletes[d].section == section { (d, itemsChanged) = (d + 1, true) }
            while i < inserts.count && inserts[i].section == section { (i, itemsChanged) = (i + 1, true) }
            while u < updates.count && updates[u].old.section == section { (u, itemsChanged) = (u + 1, true) }
            kept.note(
                old: old.sections[section], new: page[section], at: section, itemsChanged: itemsChanged, layout: current.layout != nil,
                renderedItem: renderedItem, patch: patch)
        }
        // An inserted item the snapshot holds unchanged where it was deleted travels as that old
        // path, as the diff's document has it: the last deleted item with its id (the diff keeps
        // them by id, a later one replacing an earlier), if its version is the same.
        var moved: [ItemPath: ItemPath] = [:]
        moved.reserveCapacity(inserts.count)
        for path in inserts {
            let item = new.sections[path.section].items[path.item]
            guard let held = deletes.last(where: { old.sections[$0.section].items[$0.item].id == item.id }),
                old.sections[held.section].items[held.item].version == item.version
            else { continue }
            moved[path] = held
        }
        var patches: [ItemPath: ItemPatch] = [:]
        for update in updates {
            guard let previous = renderedItem(old.sections[update.old.section].items[update.old.item].version) else { continue }
            patches[update.new] = patch(previous, page[update.new.section].items[update.new.item])
        }
        self.init(
            format: format, snapshot: current.snapshotID, nextCursor: (old.nextCursor, current.nextCursor), page: page,
            layout: current.layout, changes: .itemsEdited(edits), keptSectionsWithChangedItems: kept.withChangedItems, itemPatches: patches,
            movedItems: moved, supplementaryChanges: kept.views, changedLayouts: kept.layouts, prefetch: (old.prefetchHint, new.prefetchHint))
    }

    /// Sections longer than this are diffed: matching by scanning costs the square of the length.
    static let longestScanned = 32

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

    /// What the sections kept in place (matched by id and kind) carry besides their item
    /// operations, gathered section by section in new order.
    private struct KeptSections {
        /// New indexes of those whose items or views changed (their versions travel).
        var withChangedItems: [Int] = []
        /// Their headers and footers that came, went or changed.
        var views: [SupplementaryUpdate] = []
        /// New indexes of those whose layout changed.
        var layouts: [Int] = []

        /// Notes the section `old` that is `new` at `newIndex` now (`itemsChanged`: whether any
        /// of its items did; `layout`: whether the page is sized for a width).
        mutating func note(
            old: SnapshotStructure.Section, new: FeedSection, at newIndex: Int, itemsChanged: Bool, layout: Bool,
            renderedItem: (UInt64) -> FeedItem?, patch: (FeedItem, FeedItem) -> ItemPatch?
        ) {
            var viewsChanged = false
            // Most sections have no header or footer, before or after.
            if old.header != nil || old.footer != nil || new.header != nil || new.footer != nil {
                for element in SupplementaryElement.allCases {
                    let (was, now) = (old[element], new[element])
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
            if itemsChanged || viewsChanged { withChangedItems.append(newIndex) }
            // A section's layout follows from its kind (the same here), its item count and its
            // views (the kinds of its items follow from its kind and count: see FeedComposer).
            if layout, old.items.count != new.items.count || old.header?.id != new.header?.id || old.footer?.id != new.footer?.id {
                layouts.append(newIndex)
            }
        }
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
        case .itemsEdited(let edits):
            return 512 + (page.count + newItems) * 16 + edits.changeCount * 64
        }
    }
}
