extension FeedDocument {
    /// Applies a batch delta the way UIKit interprets one `performBatchUpdates`.
    ///
    /// No diffing: the new lists are built from the old ones and the operations, in the
    /// following way, at both levels (the list of sections, and the items of each section
    /// that stays in place):
    ///
    /// 1. Every old position is named by at most one of deletes, reloads and move sources, and
    ///    every new position by at most one of inserts and move destinations. The new list has
    ///    `old − deletes + inserts` positions.
    /// 2. Inserted elements go at their new index; moved ones at their move destination.
    /// 3. The remaining old elements (neither deleted nor moved; reloaded ones included) fill
    ///    the free positions in their old order.
    /// 4. Reloaded elements are replaced with their payload, which must say the position step 3
    ///    gave them.
    ///
    /// Item operations may only name a section that is neither inserted, deleted, reloaded nor
    /// moved; deletes, reloads and move sources use its old index and old item indexes, inserts
    /// and move destinations its new index and new item indexes. Finally every section's
    /// version is set from `section_versions`, and the snapshot and cursor from the header.
    ///
    /// - Returns: The document after the batch.
    /// - Throws: ``DeltaApplyError``: an index out of range, a position named twice, an item
    ///   operation in a whole section or an unknown section, counts that do not add up, a payload
    ///   missing or at another position, or a delta starting from another snapshot.
    public func applying(batch: FeedDelta.Batch) throws(DeltaApplyError) -> FeedDocument {
        try checkStart(batch.header)

        // Sections.
        let inserted = try payloads(
            batch.insertedSections, key: \.index, name: "inserted_sections", operation: "sections.inserts", expected: batch.sections.inserts)
        var sectionLevel = try BatchLevel.apply(
            old: sections, deletes: batch.sections.deletes, reloads: batch.sections.reloads,
            moves: batch.sections.moves, inserts: batch.sections.inserts,
            level: .sections, payload: { inserted[$0]!.section })
        let reloadedByOld = try payloads(
            batch.reloadedSections, key: \.oldIndex, name: "reloaded_sections", operation: "sections.reloads", expected: batch.sections.reloads)
        for (oldIndex, reload) in reloadedByOld {
            let position = sectionLevel.newIndexOfOld[oldIndex]!
            guard reload.index == position else {
                throw .payloadMismatch("reloaded_sections: old index \(oldIndex) ends up at \(position), not \(reload.index)")
            }
            sectionLevel.elements[position] = reload.section
        }

        // Which sections items may be named in: those kept in place, by old and by new index.
        var keptNewIndex: [Int: Int] = [:]
        var keptOldIndex: [Int: Int] = [:]
        for oldIndex in sections.indices where sectionLevel.roles[oldIndex] == nil {
            let newIndex = sectionLevel.newIndexOfOld[oldIndex]!
            keptNewIndex[oldIndex] = newIndex
            keptOldIndex[newIndex] = oldIndex
        }
        func keptSection(old index: Int, operation: String) throws(DeltaApplyError) -> Int {
            guard sections.indices.contains(index) else {
                throw .unknownSection(operation: operation, section: index, count: sections.count)
            }
            guard keptNewIndex[index] != nil else { throw .itemOperationInWholeSection(operation: operation, section: index) }
            return index
        }
        func keptSection(new index: Int, operation: String) throws(DeltaApplyError) -> Int {
            guard sectionLevel.elements.indices.contains(index) else {
                throw .unknownSection(operation: operation, section: index, count: sectionLevel.elements.count)
            }
            guard let oldIndex = keptOldIndex[index] else { throw .itemOperationInWholeSection(operation: operation, section: index) }
            return oldIndex
        }

        // Items, grouped by the old index of their section.
        var groups: [Int: ItemGroup] = [:]
        for path in batch.items.deletes {
            groups[try keptSection(old: path.section, operation: "items.deletes"), default: ItemGroup()].deletes.append(path.item)
        }
        for path in batch.items.reloads {
            groups[try keptSection(old: path.section, operation: "items.reloads"), default: ItemGroup()].reloads.append(path.item)
        }
        for move in batch.items.moves {
            let oldSection = try keptSection(old: move.from.section, operation: "items.moves")
            guard keptNewIndex[oldSection] == move.to.section else { throw .itemMoveAcrossSections(from: move.from, to: move.to) }
            groups[oldSection, default: ItemGroup()].moves.append(FeedDelta.Move(from: move.from.item, to: move.to.item))
        }
        for path in batch.items.inserts {
            groups[try keptSection(new: path.section, operation: "items.inserts"), default: ItemGroup()].inserts.append(path.item)
        }
        let insertedItems = try payloads(batch.insertedItems, key: \.path, name: "inserted_items", operation: "items.inserts", expected: batch.items.inserts)
        let reloadedItems = try payloads(batch.reloadedItems, key: \.oldPath, name: "reloaded_items", operation: "items.reloads", expected: batch.items.reloads)

        var result = self
        result.sections = sectionLevel.elements
        for (oldSection, group) in groups.sorted(by: { $0.key < $1.key }) {
            let newSection = keptNewIndex[oldSection]!
            var itemLevel = try BatchLevel.apply(
                old: sections[oldSection].items, deletes: group.deletes, reloads: group.reloads,
                moves: group.moves, inserts: group.inserts,
                level: .items(oldSection: oldSection, newSection: newSection),
                payload: { insertedItems[FeedDelta.ItemPath(section: newSection, item: $0)]!.item })
            for oldItem in group.reloads {
                let oldPath = FeedDelta.ItemPath(section: oldSection, item: oldItem)
                let reload = reloadedItems[oldPath]!
                let position = FeedDelta.ItemPath(section: newSection, item: itemLevel.newIndexOfOld[oldItem]!)
                guard reload.path == position else {
                    throw .payloadMismatch("reloaded_items: old path \(oldPath) ends up at \(position), not \(reload.path)")
                }
                itemLevel.elements[position.item] = reload.item
            }
            result.sections[newSection].items = itemLevel.elements
        }
        try result.finish(with: batch.header)
        return result
    }
}

/// The item operations of one kept section: old indexes for deletes, reloads and move sources,
/// new indexes for inserts and move destinations.
private struct ItemGroup {
    var deletes: [Int] = []
    var reloads: [Int] = []
    var moves: [FeedDelta.Move<Int>] = []
    var inserts: [Int] = []
}

/// Indexes payloads by their key and checks that the keys are exactly the positions the
/// operations name (each once).
private func payloads<Payload, Key: Hashable>(
    _ entries: [Payload], key: KeyPath<Payload, Key>, name: String, operation: String, expected: [Key]
) throws(DeltaApplyError) -> [Key: Payload] {
    var byKey: [Key: Payload] = [:]
    for entry in entries {
        let entryKey = entry[keyPath: key]
        guard byKey.updateValue(entry, forKey: entryKey) == nil else {
            throw .payloadMismatch("\(name) has two entries for \(entryKey)")
        }
    }
    var named = Set<Key>()
    for position in expected {
        guard named.insert(position).inserted else { throw .conflictingOperations("\(operation) names \(position) twice") }
        guard byKey[position] != nil else { throw .payloadMismatch("\(operation) names \(position) but \(name) has no entry for it") }
    }
    if let extra = byKey.keys.first(where: { !named.contains($0) }) {
        throw .payloadMismatch("\(name) has an entry for \(extra) but \(operation) does not name it")
    }
    return byKey
}

/// One level of a batch (the sections, or the items of one section) interpreted as UIKit does.
struct BatchLevel<Element> {
    /// What happens to an old element.
    enum Role: Equatable {
        case delete, reload, move
    }

    /// Which list the level is, for error messages.
    enum Level {
        case sections
        case items(oldSection: Int, newSection: Int)
    }

    /// The new list (reloaded elements still hold their old value).
    var elements: [Element]
    /// For each old index, its new index (nil when deleted).
    var newIndexOfOld: [Int?]
    /// For each old index, what the batch does to it (nil: kept in place).
    var roles: [Role?]

    static func apply(
        old: [Element], deletes: [Int], reloads: [Int], moves: [FeedDelta.Move<Int>], inserts: [Int],
        level: Level, payload: (Int) -> Element
    ) throws(DeltaApplyError) -> BatchLevel {
        func oldOutOfRange(_ operation: String, _ index: Int) -> DeltaApplyError {
            switch level {
            case .sections: .sectionIndexOutOfRange(operation: "sections.\(operation)", index: index, count: old.count)
            case .items(let section, _): .itemIndexOutOfRange(operation: "items.\(operation)", section: section, index: index, count: old.count)
            }
        }
        func describe(_ index: Int, new: Bool) -> String {
            switch level {
            case .sections: "section \(new ? "new" : "old") index \(index)"
            case .items(let oldSection, let newSection): "item \(new ? "new" : "old") path [\(new ? newSection : oldSection), \(index)]"
            }
        }

        var roles = [Role?](repeating: nil, count: old.count)
        func claim(_ index: Int, _ role: Role, _ operation: String) throws(DeltaApplyError) {
            guard old.indices.contains(index) else { throw oldOutOfRange(operation, index) }
            if let existing = roles[index] {
                throw .conflictingOperations("\(describe(index, new: false)) is named by \(existing) and \(role)")
            }
            roles[index] = role
        }
        for index in deletes { try claim(index, .delete, "deletes") }
        for index in reloads { try claim(index, .reload, "reloads") }
        for move in moves { try claim(move.from, .move, "moves") }

        let levelName =
            switch level {
            case .sections: "sections"
            case .items(let oldSection, _): "items of old section \(oldSection)"
            }
        let newCount = old.count - deletes.count + inserts.count
        guard newCount >= 0 else {
            throw .countMismatch("\(levelName): \(old.count) old − \(deletes.count) deletes + \(inserts.count) inserts is negative")
        }
        func newOutOfRange(_ operation: String, _ index: Int) -> DeltaApplyError {
            switch level {
            case .sections: .sectionIndexOutOfRange(operation: "sections.\(operation)", index: index, count: newCount)
            case .items(_, let section): .itemIndexOutOfRange(operation: "items.\(operation)", section: section, index: index, count: newCount)
            }
        }
        var slots = [Element?](repeating: nil, count: newCount)
        func place(_ element: Element, at index: Int, _ operation: String) throws(DeltaApplyError) {
            guard slots.indices.contains(index) else { throw newOutOfRange(operation, index) }
            guard slots[index] == nil else {
                throw .conflictingOperations("\(describe(index, new: true)) is the target of two inserts or moves")
            }
            slots[index] = element
        }
        for index in inserts { try place(payload(index), at: index, "inserts") }
        var newIndexOfOld = [Int?](repeating: nil, count: old.count)
        for move in moves {
            try place(old[move.from], at: move.to, "moves")
            newIndexOfOld[move.from] = move.to
        }
        var free = 0
        for (index, element) in old.enumerated() where roles[index] == nil || roles[index] == .reload {
            while free < newCount, slots[free] != nil { free += 1 }
            guard free < newCount else {
                throw .countMismatch("\(levelName): more kept elements than free positions among \(newCount) (at \(describe(index, new: false)))")
            }
            slots[free] = element
            newIndexOfOld[index] = free
            free += 1
        }
        var elements: [Element] = []
        elements.reserveCapacity(newCount)
        for (index, slot) in slots.enumerated() {
            guard let slot else { throw .countMismatch("\(levelName): nothing ends up at \(describe(index, new: true))") }
            elements.append(slot)
        }
        return BatchLevel(elements: elements, newIndexOfOld: newIndexOfOld, roles: roles)
    }
}
