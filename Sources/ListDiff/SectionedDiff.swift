/// The item changes of one section present in both lists.
public struct SectionItemsDiff<ItemID: Hashable> {
    /// The section's index in the old list of sections.
    public let oldSection: Int

    /// The section's index in the new list of sections.
    public let newSection: Int

    /// The diff of the section's old items against its new items.
    public let items: IndexDiff<ItemID>

    /// Creates the item diff of one section.
    @inlinable
    public init(oldSection: Int, newSection: Int, items: IndexDiff<ItemID>) {
        self.oldSection = oldSection
        self.newSection = newSection
        self.items = items
    }
}

extension SectionItemsDiff: Sendable where ItemID: Sendable {}

/// The difference between two lists of sections, each holding a list of
/// items: section changes plus, for every section present in both lists,
/// item changes.
///
///     let diff = SectionedDiff(oldSections: oldFeed, newSections: newFeed)
///     diff.sections.inserts        // new section indexes
///     diff.itemDiffs.first?.items  // item changes of the first kept section
///     diff.batch                   // one UIKit performBatchUpdates
///     diff.sequential              // steps applied one after the other
///     diff.jsonPatch()             // RFC 6902, paths /sections/3/items/2
///
/// Sections are matched as in ``IndexDiff`` (duplicates included), and so
/// are the items of each matched pair of sections. **Items never move
/// between sections**: an item that leaves section A and appears in section B
/// is a delete in A and an insert in B.
///
/// **A section whose own content changed is replaced whole** by every output
/// form (reloaded, or deleted and inserted when it also moved; `change`;
/// `replace`), so its item changes are not listed separately. Keep a
/// section's content equality to its own fields if its items should animate.
public struct SectionedDiff<SectionID: Hashable, ItemID: Hashable> {
    /// The section-level changes.
    public let sections: IndexDiff<SectionID>

    /// The item changes of every section present in both lists, in
    /// increasing order of new section index (including sections whose own
    /// content changed).
    public let itemDiffs: [SectionItemsDiff<ItemID>]

    /// New section index → position in `itemDiffs`, or -1.
    @usableFromInline
    internal let _itemDiffForNewSection: [Int]

    @usableFromInline
    internal init(_sections sections: IndexDiff<SectionID>, itemDiffs: [SectionItemsDiff<ItemID>]) {
        self.sections = sections
        self.itemDiffs = itemDiffs
        var lookup = _filled(-1, count: sections.newCount)
        // By index: enumerating would copy each diff (and retain its arrays).
        for position in itemDiffs.indices {
            lookup[itemDiffs[position].newSection] = position
        }
        self._itemDiffForNewSection = lookup
    }
}

extension SectionedDiff: Sendable where SectionID: Sendable, ItemID: Sendable {}

extension SectionedDiff {
    /// Diffs two lists of sections given by closures: how to identify and
    /// compare a section, how to get its items, how to identify and compare
    /// an item.
    ///
    /// - Parameters:
    ///   - oldSections: The sections before the change.
    ///   - newSections: The sections after the change.
    ///   - options: The update mode and move set, for sections and items.
    ///   - sectionIdentifier: The identity of a section across both lists.
    ///   - isSectionContentEqual: Whether two sections with the same
    ///     identifier show the same own content (not counting their items).
    ///   - items: A section's items.
    ///   - itemIdentifier: The identity of an item within its section.
    ///   - isItemContentEqual: Whether two items with the same identifier
    ///     show the same content.
    /// - Complexity: O(*n* + *m*) expected, for *n* and *m* sections and
    ///   items in the old and the new list, plus O(*c* log *c*) per list of
    ///   *c* common elements that changed order (minimal moves).
    @inlinable
    public init<Section, Item>(
        oldSections: [Section],
        newSections: [Section],
        options: DiffOptions = DiffOptions(),
        sectionIdentifier: (Section) -> SectionID,
        isSectionContentEqual: (Section, Section) -> Bool,
        items: (Section) -> [Item],
        itemIdentifier: (Item) -> ItemID,
        isItemContentEqual: (Item, Item) -> Bool
    ) {
        let sections = IndexDiff(
            old: oldSections, new: newSections, options: options,
            identifier: sectionIdentifier, isContentEqual: isSectionContentEqual)
        var itemDiffs: [SectionItemsDiff<ItemID>] = []
        itemDiffs.reserveCapacity(sections.newCount - sections.inserts.count)
        for newSection in newSections.indices {
            guard let oldSection = sections.oldIndex(forNewIndex: newSection) else { continue }
            let itemDiff = IndexDiff(
                old: items(oldSections[oldSection]), new: items(newSections[newSection]),
                options: options, identifier: itemIdentifier, isContentEqual: isItemContentEqual)
            itemDiffs.append(
                SectionItemsDiff(oldSection: oldSection, newSection: newSection, items: itemDiff))
        }
        self.init(_sections: sections, itemDiffs: itemDiffs)
    }

    /// Diffs two lists of ``DiffableSection`` values.
    ///
    ///     let diff = SectionedDiff(oldSections: oldFeed, newSections: newFeed)
    ///
    /// - Parameters:
    ///   - oldSections: The sections before the change.
    ///   - newSections: The sections after the change.
    ///   - options: The update mode and move set, for sections and items.
    /// - Complexity: O(*n* + *m*) expected, for *n* and *m* sections and
    ///   items in the old and the new list, plus O(*c* log *c*) per list of
    ///   *c* common elements that changed order (minimal moves).
    @inlinable
    public init<Section: DiffableSection>(
        oldSections: [Section], newSections: [Section], options: DiffOptions = DiffOptions()
    ) where Section.DiffID == SectionID, Section.Item.DiffID == ItemID {
        self.init(
            oldSections: oldSections, newSections: newSections, options: options,
            sectionIdentifier: { $0.diffIdentifier },
            isSectionContentEqual: { $0.isContentEqual(to: $1) },
            items: { $0.items },
            itemIdentifier: { $0.diffIdentifier },
            isItemContentEqual: { $0.isContentEqual(to: $1) })
    }

    /// The item changes of the section at `newSection` in the new list, or
    /// `nil` when that section was inserted.
    ///
    /// - Precondition: `newSection` is a valid index of the new sections.
    /// - Complexity: O(1)
    public func itemsDiff(forNewSection newSection: Int) -> SectionItemsDiff<ItemID>? {
        let position = _itemDiffForNewSection[newSection]
        return position >= 0 ? itemDiffs[position] : nil
    }

    /// The item changes of the section at `oldSection` in the old list, or
    /// `nil` when that section was deleted.
    ///
    /// - Precondition: `oldSection` is a valid index of the old sections.
    /// - Complexity: O(1)
    public func itemsDiff(forOldSection oldSection: Int) -> SectionItemsDiff<ItemID>? {
        sections.newIndex(forOldIndex: oldSection).flatMap { itemsDiff(forNewSection: $0) }
    }

    /// Whether the two lists differ at all, in sections or in items.
    ///
    /// - Complexity: O(*s*), the number of sections present in both lists.
    @inlinable
    public var hasChanges: Bool {
        sections.hasChanges || itemDiffs.contains { $0.items.hasChanges }
    }

    /// The number of section changes plus the number of item changes (see
    /// ``IndexDiff/changeCount``), including those of sections whose own
    /// content changed.
    ///
    /// - Complexity: O(*s*), the number of sections present in both lists.
    @inlinable
    public var changeCount: Int {
        var count = sections.changeCount
        for itemDiff in itemDiffs { count &+= itemDiff.items.changeCount }
        return count
    }

    /// Whether the section at `oldSection` is replaced whole because its own
    /// content changed.
    @inlinable
    internal func _isReplaced(oldSection: Int) -> Bool {
        sections._core.isUpdated[oldSection]
    }
}
