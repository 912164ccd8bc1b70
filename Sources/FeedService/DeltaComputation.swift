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
        var deleted: [ItemPath] = []
        var inserted: [ItemPath] = []
        var updated: [(old: ItemPath, new: ItemPath)] = []
        for position in itemDiffs.indices {
            let (oldSection, newSection) = (itemDiffs[position].oldSection, itemDiffs[position].newSection)
            for oldIndex in itemDiffs[position].items.deletes { deleted.append(ItemPath(section: oldSection, item: oldIndex)) }
            for newIndex in itemDiffs[position].items.inserts { inserted.append(ItemPath(section: newSection, item: newIndex)) }
            for oldIndex in itemDiffs[position].items.updates {
                guard let newIndex = itemDiffs[position].items.newIndex(forOldIndex: oldIndex) else { continue }
                updated.append((ItemPath(section: oldSection, item: oldIndex), ItemPath(section: newSection, item: newIndex)))
            }
        }
        self.init(
            format: format, from: old, to: current, changes: .diff(diff), kept: kept, deleted: deleted, inserted: inserted,
            updated: updated, renderedItem: renderedItem, patch: patch)
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
        var editCount = 0
        // A shift deletes and inserts one item a section.
        deletes.reserveCapacity(changedSections.count)
        inserts.reserveCapacity(changedSections.count)
        var kept = KeptSections()
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
            let editsBefore = editCount
            editCount = deletes.count + inserts.count + updates.count
            kept.note(
                old: was, new: page[section], at: section, itemsChanged: editCount != editsBefore, layout: current.layout != nil,
                renderedItem: renderedItem, patch: patch)
        }
        self.init(
            format: format, from: old, to: current, changes: .itemsEdited(OrderedItemEdits(deletes: deletes, inserts: inserts, updates: updates)),
            kept: kept, deleted: deletes, inserted: inserts, updated: updates, renderedItem: renderedItem, patch: patch)
    }

    /// The document of `changes` from `old` to `current`, given the items they delete, insert and
    /// update (old and new paths) and what the kept sections carry: slid items sent as their old
    /// path, updated items as patches where one is made.
    private init(
        format: DeltaFormat, from old: SnapshotStructure, to current: RenderedFeed, changes: DeltaChanges, kept: KeptSections,
        deleted: [ItemPath], inserted: [ItemPath], updated: [(old: ItemPath, new: ItemPath)], renderedItem: (UInt64) -> FeedItem?,
        patch: (FeedItem, FeedItem) -> ItemPatch?
    ) {
        let new = current.structure
        self.init(
            format: format, snapshot: current.snapshotID, nextCursor: (old.nextCursor, current.nextCursor), page: current.sections,
            layout: current.layout, changes: changes, keptSectionsWithChangedItems: kept.withChangedItems,
            itemPatches: Self.itemPatches(updated, from: old, to: current.sections, renderedItem: renderedItem, patch: patch),
            movedItems: Self.slidItems(deleted: deleted, inserted: inserted, from: old, to: new), supplementaryChanges: kept.views,
            changedLayouts: kept.layouts, prefetch: (old.prefetchHint, new.prefetchHint))
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
        for path in updatedItems where kept.last != path.section { kept.append(path.section) }
        let patches = Self.itemPatches(
            updatedItems.lazy.map { (old: $0, new: $0) }, from: old, to: page, renderedItem: renderedItem, patch: patch)
        // The same sections at the same offset and the same hint: the page's cursor is the
        // snapshot's, and the page keeps it made (the structure's is encoded on each call).
        self.init(
            format: format, snapshot: current.snapshotID, nextCursor: (current.nextCursor, current.nextCursor), page: page,
            layout: current.layout, changes: .itemsUpdated(updatedItems), keptSectionsWithChangedItems: kept, itemPatches: patches,
            prefetch: (old.prefetchHint, current.structure.prefetchHint))
    }

    /// Inserted items the snapshot holds unchanged where they were deleted (slid from one
    /// section into the next: deleted there, inserted here), by new path: the old path each is
    /// sent as. The last deleted item with an id is the one looked at (they are kept by id), and
    /// only if its version is the same. Only the deleted items can be: a handful, by id.
    private static func slidItems(
        deleted: [ItemPath], inserted: [ItemPath], from old: SnapshotStructure, to new: SnapshotStructure
    ) -> [ItemPath: ItemPath] {
        guard !deleted.isEmpty, !inserted.isEmpty else { return [:] }
        // Both sized at once: grown entry by entry, a shifted page (an item out of every grid
        // section, another in) rehashed them about ten times (19,000 instructions).
        var byID: [String: (path: ItemPath, version: UInt64)] = [:]
        byID.reserveCapacity(deleted.count)
        for path in deleted {
            let item = old.sections[path.section].items[path.item]
            byID[item.id] = (path, item.version)
        }
        var moved: [ItemPath: ItemPath] = [:]
        moved.reserveCapacity(min(deleted.count, inserted.count))
        for path in inserted {
            let item = new.sections[path.section].items[path.item]
            if let held = byID[item.id], held.version == item.version { moved[path] = held.path }
        }
        return moved
    }

    /// The items updated in place (old path in the snapshot, new path in `page`) that travel as
    /// the fields that changed, by new path: those whose previous rendering `renderedItem` still
    /// has and for which `patch` makes a patch.
    private static func itemPatches(
        _ updated: some Sequence<(old: ItemPath, new: ItemPath)>, from old: SnapshotStructure, to page: [FeedSection],
        renderedItem: (UInt64) -> FeedItem?, patch: (FeedItem, FeedItem) -> ItemPatch?
    ) -> [ItemPath: ItemPatch] {
        var patches: [ItemPath: ItemPatch] = [:]
        for (was, now) in updated {
            guard let previous = renderedItem(old.sections[was.section].items[was.item].version) else { continue }
            patches[now] = patch(previous, page[now.section].items[now.item])
        }
        return patches
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
