// The forms of a change that kept every section in its place and its own content, built without
// a diff by a caller that knows what it changed: items whose content was updated in place (a feed
// page whose items were rendered again), or, more generally, items deleted, inserted and updated
// with every section's remaining items in their order (a feed page whose grid slid one video on).
// What ``SectionedDiff`` returns for two such lists.

extension SectionedBatchUpdate {
    /// The batch update of a sectioned list in which only the items at `updatedItems` changed,
    /// each in content only (same identifier, same place), and nothing else did: those items
    /// reloaded. The same as ``SectionedDiff/batch`` of such lists.
    ///
    /// - Parameter updatedItems: The paths of the updated items (old and new are the same),
    ///   ascending, without repeats.
    /// - Complexity: O(*u*), the number of updated items.
    public init(reloadingItemsAt updatedItems: [ItemPath]) {
        precondition(_isStrictlyAscending(updatedItems), "updated item paths must be ascending, without repeats")
        self.init(itemReloads: updatedItems)
    }
}

extension SectionedSequentialUpdate {
    /// The sequential update of a sectioned list in which only the items at `updatedItems`
    /// changed, each in content only, and nothing else did: one `change` per run of consecutive
    /// updated items of a section, in section order. The same as ``SectionedDiff/sequential`` of
    /// such lists.
    ///
    /// - Parameter updatedItems: The paths of the updated items, ascending, without repeats.
    /// - Complexity: O(*u*), the number of updated items.
    public init(changingItemsAt updatedItems: [ItemPath]) {
        // Edits with nothing deleted or inserted; they check the paths ascend.
        self = OrderedItemEdits(deletes: [], inserts: [], updates: updatedItems.map { (old: $0, new: $0) }).sequential
    }
}

/// The item changes of a sectioned list whose sections all kept their place and their own
/// content, and whose items kept their relative order in every section: some deleted, some
/// inserted, some updated in content (same identifier), none moved. The ``batch`` and
/// ``sequential`` forms equal ``SectionedDiff``'s for two such lists, and are built from the
/// changed paths alone: O(*c*) for *c* changes, no list read, nothing hashed.
///
/// A feed page whose grid sections each take the video before them and pass their last one on
/// is such a change: in every grid section one item deleted at its end, one inserted at its
/// start, the others in their order.
///
/// What the caller promises and this cannot check (it never sees the lists): within every
/// section, an identifier appears at most once among the old items and once among the new; the
/// identifiers both hold are exactly those of the items kept or updated (a deleted item's is not
/// inserted again in its section); and those items keep their order. Then the diff matches
/// exactly them, in order, so it moves none: the changes are these and nothing else.
public struct OrderedItemEdits: Hashable, Sendable {
    /// Old paths of the deleted items, ascending.
    public let deletes: [ItemPath]
    /// New paths of the inserted items, ascending.
    public let inserts: [ItemPath]
    /// Old paths of the items updated in content, ascending.
    public let updatedOldPaths: [ItemPath]
    /// New paths of the same items, in the same order (so also ascending).
    public let updatedNewPaths: [ItemPath]

    /// Creates the edits.
    ///
    /// - Parameters:
    ///   - deletes: Old paths of the deleted items, ascending, without repeats.
    ///   - inserts: New paths of the inserted items, ascending, without repeats.
    ///   - updates: Each updated item's old and new path, ascending, each in its own section
    ///     (sections keep their place).
    /// - Complexity: O(*c*), the number of changes.
    public init(deletes: [ItemPath], inserts: [ItemPath], updates: [(old: ItemPath, new: ItemPath)]) {
        precondition(_isStrictlyAscending(deletes), "deleted item paths must be ascending, without repeats")
        precondition(_isStrictlyAscending(inserts), "inserted item paths must be ascending, without repeats")
        var oldPaths: [ItemPath] = []
        var newPaths: [ItemPath] = []
        oldPaths.reserveCapacity(updates.count)
        newPaths.reserveCapacity(updates.count)
        for update in updates {
            precondition(update.old.section == update.new.section, "an updated item stays in its section")
            oldPaths.append(update.old)
            newPaths.append(update.new)
        }
        precondition(_isStrictlyAscending(oldPaths), "updated item paths must be ascending, without repeats")
        precondition(_isStrictlyAscending(newPaths), "updated items keep their order")
        self.deletes = deletes
        self.inserts = inserts
        updatedOldPaths = oldPaths
        updatedNewPaths = newPaths
    }

    /// How many changes: deletes, inserts and updates (``SectionedDiff/changeCount``).
    public var changeCount: Int { deletes.count + inserts.count + updatedOldPaths.count }

    /// The new path of the updated item at `oldPath`, or nil when no updated item was there.
    ///
    /// - Complexity: O(log *u*) for *u* updated items.
    public func newPath(ofUpdatedItemAt oldPath: ItemPath) -> ItemPath? {
        var (low, high) = (0, updatedOldPaths.count)
        while low < high {
            let middle = (low + high) >> 1
            if updatedOldPaths[middle] < oldPath { low = middle + 1 } else { high = middle }
        }
        return low < updatedOldPaths.count && updatedOldPaths[low] == oldPath ? updatedNewPaths[low] : nil
    }

    /// The batch form: the deletes, inserts and reloads, no section operation and no move. The
    /// same as ``SectionedDiff/batch`` of such lists.
    public var batch: SectionedBatchUpdate {
        SectionedBatchUpdate(itemDeletes: deletes, itemInserts: inserts, itemReloads: updatedOldPaths)
    }

    /// The sequential form: for each section with changes, in order, its removes (the highest
    /// run first), inserts and changes (runs, lowest first). The same as
    /// ``SectionedDiff/sequential`` of such lists.
    public var sequential: SectionedSequentialUpdate {
        var operations: [SectionedSequentialOperation] = []
        operations.reserveCapacity(changeCount)
        var (d, i, u) = (0, 0, 0)
        var steps: [SequentialOperation] = []
        var indexes: [Int] = []
        while d < deletes.count || i < inserts.count || u < updatedNewPaths.count {
            // The lowest section any list still names.
            var section = Int.max
            if d < deletes.count { section = min(section, deletes[d].section) }
            if i < inserts.count { section = min(section, inserts[i].section) }
            if u < updatedNewPaths.count { section = min(section, updatedNewPaths[u].section) }
            steps.removeAll(keepingCapacity: true)
            indexes.removeAll(keepingCapacity: true)
            while d < deletes.count && deletes[d].section == section {
                indexes.append(deletes[d].item)
                d += 1
            }
            _appendRemoves(indexes, to: &steps)
            indexes.removeAll(keepingCapacity: true)
            while i < inserts.count && inserts[i].section == section {
                indexes.append(inserts[i].item)
                i += 1
            }
            _appendRuns(indexes, to: &steps) { .insert(at: $0, count: $1) }
            indexes.removeAll(keepingCapacity: true)
            while u < updatedNewPaths.count && updatedNewPaths[u].section == section {
                indexes.append(updatedNewPaths[u].item)
                u += 1
            }
            _appendRuns(indexes, to: &steps) { .change(at: $0, count: $1) }
            for step in steps { operations.append(.item(section: section, step)) }
        }
        return SectionedSequentialUpdate(operations: operations)
    }
}

/// Whether `paths` ascend by section, then item, with no path twice.
internal func _isStrictlyAscending(_ paths: [ItemPath]) -> Bool {
    zip(paths, paths.dropFirst()).allSatisfy { ($0.section, $0.item) < ($1.section, $1.item) }
}
