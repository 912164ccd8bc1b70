// Executing a sectioned batch update the way UIKit does, checking its rules
// and IGListKit's stricter ones (no item operation in a changed section).

/// The item operations of a batch that concern one section.
private struct _SectionItemOperations<Item> {
    var deletes: [Int] = []
    var reloads: [Int] = []
    var moves: [Move<Int>] = []
    var inserts: [Int] = []
    /// New item index → the old item moved there from another section.
    var movedIn: [Int: Item] = [:]
}

extension SectionedBatchUpdate {
    /// Rebuilds the new sectioned list from the old one, executing this batch
    /// the way UIKit's `performBatchUpdates` does and checking its rules.
    ///
    /// Sections: deleted ones are dropped; inserted and reloaded ones come
    /// whole from `newSections`; moved ones keep their old value and items;
    /// the others fill the remaining positions in order. Items of those other
    /// sections are rebuilt like a ``BatchUpdate``, values for inserted and
    /// reloaded items taken from the new section at their new position. Item
    /// moves across sections are executed as UIKit would, though
    /// ``SectionedDiff`` never produces them.
    ///
    ///     let rebuilt = try diff.batch.apply(to: old, newSections: new) { $0.items }
    ///
    /// - Parameters:
    ///   - old: The sections before the change.
    ///   - newSections: The sections after the change.
    ///   - items: A section's items.
    /// - Returns: The rebuilt sections.
    /// - Throws: ``ApplyError`` when a position is out of range or used
    ///   twice, an item operation names an inserted, deleted, reloaded or
    ///   moved section, or counts do not add up in some section.
    /// - Complexity: O(*n* + *m*), the numbers of sections and items.
    public func apply<Section, Item>(
        to old: [Section], newSections: [Section], items: (Section) -> [Item]
    ) throws(ApplyError) -> [AppliedSection<Section, Item>] {
        let sectionPlacement = try _BatchPlacement(
            oldCount: old.count, newCount: newSections.count, section: nil,
            deletes: sectionDeletes, inserts: sectionInserts, moves: sectionMoves, reloads: sectionReloads)
        // Which old sections are kept in place, and where they go.
        var keptAt = [Int](repeating: -1, count: old.count)
        var isKeptNew = [Bool](repeating: false, count: newSections.count)
        for (position, source) in sectionPlacement.sources.enumerated() {
            if case let .kept(index) = source {
                keptAt[index] = position
                isKeptNew[position] = true
            }
        }
        let oldItems = old.map(items)
        var operations = [_SectionItemOperations<Item>](repeating: _SectionItemOperations(), count: old.count)
        func oldSection(_ path: ItemPath, _ what: String) throws(ApplyError) -> Int {
            guard path.section >= 0 && path.section < old.count else {
                throw ApplyError(
                    .indexOutOfRange, section: path.section, index: path.item,
                    "\(what) \(path) names no old section (count \(old.count))")
            }
            guard keptAt[path.section] >= 0 else {
                throw ApplyError(
                    .operationInChangedSection, section: path.section, index: path.item,
                    "\(what) \(path) is in a section this batch deletes, reloads or moves")
            }
            return path.section
        }
        func newSection(_ path: ItemPath, _ what: String) throws(ApplyError) -> Int {
            guard path.section >= 0 && path.section < newSections.count else {
                throw ApplyError(
                    .indexOutOfRange, section: path.section, index: path.item,
                    "\(what) \(path) names no new section (count \(newSections.count))")
            }
            guard isKeptNew[path.section] else {
                throw ApplyError(
                    .operationInChangedSection, section: path.section, index: path.item,
                    "\(what) \(path) is in a section this batch inserts, reloads or moves")
            }
            return path.section
        }
        var oldSectionOfNew = [Int](repeating: -1, count: newSections.count)
        for (index, position) in keptAt.enumerated() where position >= 0 {
            oldSectionOfNew[position] = index
        }
        for path in itemDeletes {
            operations[try oldSection(path, "item delete")].deletes.append(path.item)
        }
        for path in itemReloads {
            operations[try oldSection(path, "item reload")].reloads.append(path.item)
        }
        for path in itemInserts {
            operations[oldSectionOfNew[try newSection(path, "item insert")]].inserts.append(path.item)
        }
        for move in itemMoves {
            let source = try oldSection(move.from, "item move from")
            let destination = oldSectionOfNew[try newSection(move.to, "item move to")]
            if source == destination {
                operations[source].moves.append(Move(from: move.from.item, to: move.to.item))
                continue
            }
            // Across sections: a delete in one, an insert of the old item in the other.
            guard move.from.item >= 0 && move.from.item < oldItems[source].count else {
                throw ApplyError(
                    .indexOutOfRange, section: source, index: move.from.item,
                    "item move from \(move.from) is not an old item position")
            }
            operations[source].deletes.append(move.from.item)
            operations[destination].inserts.append(move.to.item)
            guard operations[destination].movedIn.updateValue(oldItems[source][move.from.item], forKey: move.to.item) == nil else {
                throw ApplyError(
                    .duplicateDestination, section: move.to.section, index: move.to.item,
                    "new item position \(move.to) is moved to twice")
            }
        }
        var result: [AppliedSection<Section, Item>] = []
        result.reserveCapacity(newSections.count)
        for (position, source) in sectionPlacement.sources.enumerated() {
            switch source {
            case .inserted, .reloaded:
                result.append(AppliedSection(section: newSections[position], items: items(newSections[position])))
            case let .moved(index):
                result.append(AppliedSection(section: old[index], items: oldItems[index]))
            case let .kept(index):
                let operations = operations[index]
                let newItems = items(newSections[position])
                let placement = try _BatchPlacement(
                    oldCount: oldItems[index].count, newCount: newItems.count, section: position,
                    deletes: operations.deletes, inserts: operations.inserts,
                    moves: operations.moves, reloads: operations.reloads)
                var rebuilt: [Item] = []
                rebuilt.reserveCapacity(newItems.count)
                for (item, itemSource) in placement.sources.enumerated() {
                    switch itemSource {
                    case .inserted: rebuilt.append(operations.movedIn[item] ?? newItems[item])
                    case .reloaded: rebuilt.append(newItems[item])
                    case let .moved(from), let .kept(from): rebuilt.append(oldItems[index][from])
                    }
                }
                result.append(AppliedSection(section: old[index], items: rebuilt))
            }
        }
        return result
    }

    /// Rebuilds the new list of ``DiffableSection`` values from the old one;
    /// see ``apply(to:newSections:items:)``.
    ///
    /// - Complexity: O(*n* + *m*), the numbers of sections and items.
    public func apply<Section: DiffableSection>(
        to old: [Section], newSections: [Section]
    ) throws(ApplyError) -> [AppliedSection<Section, Section.Item>] {
        try apply(to: old, newSections: newSections) { $0.items }
    }
}

extension SectionedSequentialUpdate {
    /// Rebuilds the new sectioned list by applying the steps to the old one
    /// in order, checking that every position is valid at its moment.
    ///
    /// Section inserts and changes take the whole new section (with its
    /// items) at the step's position; item inserts and changes take the new
    /// item at the step's section and position.
    ///
    ///     let rebuilt = try diff.sequential.apply(to: old, newSections: new) { $0.items }
    ///
    /// - Parameters:
    ///   - old: The sections before the change.
    ///   - newSections: The sections after the change.
    ///   - items: A section's items.
    /// - Returns: The rebuilt sections.
    /// - Throws: ``ApplyError`` when a step names a position that does not
    ///   exist at its moment, or counts differ from the new list's at the end.
    /// - Complexity: O(*s* × *n*) for *s* steps on lists of about *n*
    ///   elements: a reference, not a fast path.
    public func apply<Section, Item>(
        to old: [Section], newSections: [Section], items: (Section) -> [Item]
    ) throws(ApplyError) -> [AppliedSection<Section, Item>] {
        var list = old.map { AppliedSection(section: $0, items: items($0)) }
        let new = newSections.map { AppliedSection(section: $0, items: items($0)) }
        for operation in operations {
            switch operation {
            case let .section(step):
                try step._apply(to: &list, newElements: new, section: nil)
            case let .item(section, step):
                guard section >= 0 && section < list.count && section < new.count else {
                    throw ApplyError(
                        .indexOutOfRange, section: section,
                        "\(operation) names no section (count \(list.count))")
                }
                try step._apply(to: &list[section].items, newElements: new[section].items, section: section)
            }
        }
        try _checkCounts(list, new)
        return list
    }

    /// Rebuilds the new list of ``DiffableSection`` values from the old one;
    /// see ``apply(to:newSections:items:)``.
    ///
    /// - Complexity: O(*s* × *n*) for *s* steps on lists of about *n*
    ///   elements.
    public func apply<Section: DiffableSection>(
        to old: [Section], newSections: [Section]
    ) throws(ApplyError) -> [AppliedSection<Section, Section.Item>] {
        try apply(to: old, newSections: newSections) { $0.items }
    }
}

/// Throws unless `list` has the sections and item counts of `new`.
internal func _checkCounts<Section, Item>(
    _ list: [AppliedSection<Section, Item>], _ new: [AppliedSection<Section, Item>]
) throws(ApplyError) {
    guard list.count == new.count else {
        throw ApplyError(.countMismatch, "the update leaves \(list.count) sections, the new list has \(new.count)")
    }
    for section in list.indices where list[section].items.count != new[section].items.count {
        throw ApplyError(
            .countMismatch, section: section,
            "the update leaves \(list[section].items.count) items, the new section has \(new[section].items.count)")
    }
}
