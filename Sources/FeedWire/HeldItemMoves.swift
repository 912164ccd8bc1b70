import ListDiff

extension DeltaDocument {
    /// The JSON Patch operations of `operations` (ListDiff's, sections first, then items) with
    /// every `add` of an item the snapshot holds (``movedItems``) turned into a `move` of that
    /// item from where it is at that moment, so it travels as two paths instead of whole.
    ///
    /// ListDiff's steps remove such an item from its old section before they add it to the
    /// next (a new video at the top: each grid section drops its last video, then takes the one
    /// before it). Here that `remove` is held back until the item's `add` comes and becomes the
    /// `move`; an item added before its removal (a deleted video: each section takes the first
    /// video of the next) moves at once and its later `remove` is dropped. Every later path of the
    /// section is shifted by what is held back or gone early, so each operation still applies to
    /// the document as the earlier ones left it (RFC 6902). When something does not add up (an
    /// item held back that no `add` takes), the operations come back as they were.
    func movingHeldItems(_ operations: [JSONPatchOperation]) -> [JSONPatchOperation] {
        guard !movedItems.isEmpty else { return operations }
        var moves: HeldItemMoves
        switch changes {
        case .diff(let diff): moves = HeldItemMoves(diff: diff, held: Set(movedItems.values))
        case .itemsEdited(let edits): moves = HeldItemMoves(edits: edits, page: page, held: Set(movedItems.values))
        case .itemsUpdated: return operations
        }
        var result: [JSONPatchOperation] = []
        result.reserveCapacity(operations.count)
        for operation in operations {
            guard let moved = moves.step(operation, movedFrom: movedItems) else { return operations }
            result += moved
        }
        return moves.settled ? result : operations
    }
}

/// The simulation ``DeltaDocument/movingHeldItems(_:)`` runs: each section's items as the
/// operations so far left them, with items held back (removed for ListDiff, still in the
/// document) or gone early (moved out of the document, not yet removed for ListDiff).
private struct HeldItemMoves {
    struct Entry {
        /// Where the item was in the snapshot; nil for one added or replaced since.
        var old: ItemPath?
        /// Still in the list ListDiff's operations see.
        var listed = true
        /// Still in the document.
        var present = true
    }

    /// For each section now, the snapshot's section it is (nil: added or replaced).
    var sections: [Int?]
    /// The snapshot's item counts of its sections kept in place.
    let oldCounts: [Int: Int]
    /// The items, by section now, of the sections item operations reached.
    var entries: [Int: [Entry]] = [:]
    /// Old paths of items some `add` will take from the snapshot.
    let held: Set<ItemPath>
    var taken: Set<ItemPath> = []
    var itemStepsBegan = false

    init(diff: SectionedDiff<String, String>, held: Set<ItemPath>) {
        sections = Array(0..<diff.sections.oldCount)
        var counts: [Int: Int] = [:]
        for itemDiff in diff.itemDiffs { counts[itemDiff.oldSection] = itemDiff.items.oldCount }
        oldCounts = counts
        self.held = held
    }

    /// For edits in place: the sections are the page's, each section's old item count its count
    /// now less what was inserted, plus what was deleted.
    init(edits: OrderedItemEdits, page: [FeedSection], held: Set<ItemPath>) {
        sections = Array(0..<page.count)
        var counts: [Int: Int] = [:]
        for path in edits.inserts + edits.deletes + edits.updatedNewPaths { counts[path.section] = page[path.section].items.count }
        for path in edits.inserts { counts[path.section]! -= 1 }
        for path in edits.deletes { counts[path.section]! += 1 }
        oldCounts = counts
        self.held = held
    }

    /// Whether every item is where ListDiff's operations put it.
    var settled: Bool { entries.values.allSatisfy { $0.allSatisfy { $0.listed && $0.present } } }

    static func pointer(_ section: Int, _ item: Int) -> JSONPointer {
        JSONPointer(tokens: ["sections", String(section), "items", String(item)])
    }

    /// The operations that stand for `operation`; nil when it is not one this can follow.
    mutating func step(_ operation: JSONPatchOperation, movedFrom: [ItemPath: ItemPath]) -> [JSONPatchOperation]? {
        let tokens = operation.path.tokens
        guard tokens.first == "sections", tokens.count >= 2, let section = JSONPointer.arrayIndex(tokens[1]) else { return nil }
        if tokens.count == 2 {
            // Section steps all come first; they only move the snapshot's sections around.
            guard !itemStepsBegan else { return nil }
            switch operation.kind {
            case .add:
                guard section <= sections.count else { return nil }
                sections.insert(nil, at: section)
            case .remove:
                guard section < sections.count else { return nil }
                sections.remove(at: section)
            case .replace:
                guard section < sections.count else { return nil }
                sections[section] = nil
            case .move:
                guard let from = operation.from?.tokens.last.flatMap(JSONPointer.arrayIndex), from < sections.count else { return nil }
                let moved = sections.remove(at: from)
                guard section <= sections.count else { return nil }
                sections.insert(moved, at: section)
            }
            return [operation]
        }
        guard tokens.count == 4, tokens[2] == "items", let index = JSONPointer.arrayIndex(tokens[3]), load(section) else { return nil }
        itemStepsBegan = true
        switch operation.kind {
        case .remove:
            guard let (position, physical) = locate(index, in: section), position < entries[section]!.count else { return nil }
            let entry = entries[section]![position]
            if !entry.present {
                // Moved out already: ListDiff removes it only now.
                entries[section]!.remove(at: position)
                return []
            }
            if let old = entry.old, held.contains(old), !taken.contains(old) {
                // Its add comes later and moves it: it stays in the document until then.
                entries[section]![position].listed = false
                return []
            }
            entries[section]!.remove(at: position)
            return [JSONPatchOperation(kind: .remove, path: Self.pointer(section, physical))]
        case .add:
            if case .item(let path)? = operation.value, let old = movedFrom[path], let source = take(old) {
                guard let (position, physical) = locate(index, in: section) else { return nil }
                entries[section]!.insert(Entry(old: nil), at: position)
                return [JSONPatchOperation(kind: .move, path: Self.pointer(section, physical), from: source)]
            }
            guard let (position, physical) = locate(index, in: section) else { return nil }
            entries[section]!.insert(Entry(old: nil), at: position)
            return [JSONPatchOperation(kind: .add, path: Self.pointer(section, physical), value: operation.value)]
        case .replace:
            guard let (position, physical) = locate(index, in: section), position < entries[section]!.count, entries[section]![position].present
            else { return nil }
            entries[section]![position].old = nil
            return [JSONPatchOperation(kind: .replace, path: Self.pointer(section, physical), value: operation.value)]
        case .move:
            guard let fromTokens = operation.from?.tokens, fromTokens.count == 4, fromTokens[1] == tokens[1],
                let from = JSONPointer.arrayIndex(fromTokens[3]),
                let (fromPosition, fromPhysical) = locate(from, in: section), fromPosition < entries[section]!.count
            else { return nil }
            let entry = entries[section]!.remove(at: fromPosition)
            guard let (position, physical) = locate(index, in: section) else { return nil }
            entries[section]!.insert(entry, at: position)
            guard entry.present else { return [] }
            return [JSONPatchOperation(kind: .move, path: Self.pointer(section, physical), from: Self.pointer(section, fromPhysical))]
        }
    }

    /// Reads in the items of `section` (a section now) from the snapshot the first time; false
    /// for a section added or replaced, whose items no item step names.
    private mutating func load(_ section: Int) -> Bool {
        if entries[section] != nil { return true }
        guard sections.indices.contains(section), let old = sections[section], let count = oldCounts[old] else { return false }
        entries[section] = (0..<count).map { Entry(old: ItemPath(section: old, item: $0)) }
        return true
    }

    /// Where the `index`-th listed item of `section` is in its entries (its count for one past the
    /// end), and its index in the document.
    private func locate(_ index: Int, in section: Int) -> (position: Int, physical: Int)? {
        guard let list = entries[section], index >= 0 else { return nil }
        var listed = 0
        var physical = 0
        for (position, entry) in list.enumerated() {
            if entry.listed {
                if listed == index { return (position, physical) }
                listed += 1
            }
            if entry.present { physical += 1 }
        }
        return listed == index ? (list.count, physical) : nil
    }

    /// Takes the snapshot's item at `old` out of the document, where it is now: held back (its
    /// remove came) or still listed (its remove comes later and is dropped). Nil when it is not
    /// in the document any more (its section went or was replaced).
    private mutating func take(_ old: ItemPath) -> JSONPointer? {
        guard !taken.contains(old), let section = sections.firstIndex(of: old.section), load(section),
            let position = entries[section]!.firstIndex(where: { $0.old == old && $0.present })
        else { return nil }
        let physical = entries[section]![..<position].filter(\.present).count
        if entries[section]![position].listed {
            entries[section]![position].present = false
        } else {
            entries[section]!.remove(at: position)
        }
        taken.insert(old)
        return Self.pointer(section, physical)
    }
}
