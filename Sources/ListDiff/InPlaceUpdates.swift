// The forms of a change that kept every section and every item in its place and only updated
// the content of some items: what ``SectionedDiff`` returns for two such lists, built from the
// updated items' paths alone. A caller that knows which items it replaced in place (a feed page
// whose items were rendered again) needs neither the two lists nor a diff.

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
        precondition(_isStrictlyAscending(updatedItems), "updated item paths must be ascending, without repeats")
        var operations: [SectionedSequentialOperation] = []
        var start = 0
        while start < updatedItems.count {
            let section = updatedItems[start].section
            var end = start + 1
            while end < updatedItems.count && updatedItems[end].section == section { end += 1 }
            var steps: [SequentialOperation] = []
            _appendRuns(updatedItems[start..<end].map(\.item), to: &steps) { .change(at: $0, count: $1) }
            for step in steps { operations.append(.item(section: section, step)) }
            start = end
        }
        self.init(operations: operations)
    }
}

/// Whether `paths` ascend by section, then item, with no path twice.
internal func _isStrictlyAscending(_ paths: [ItemPath]) -> Bool {
    zip(paths, paths.dropFirst()).allSatisfy { ($0.section, $0.item) < ($1.section, $1.item) }
}
