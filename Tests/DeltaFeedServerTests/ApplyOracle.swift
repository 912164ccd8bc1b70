import DeltaFeedClient

/// The reference client's first apply implementation, kept as a test oracle: the three delta
/// forms read independently of ListDiff's apply functions (a batch interpreted level by level as
/// UIKit does, steps on plain arrays, a JSON Patch on the document's JSON). The production apply
/// (FeedWire, built on ListDiff) must agree with it on every delta, valid or not.
enum ApplyOracle {
    struct Refusal: Error, CustomStringConvertible {
        let description: String

        init(_ description: String) {
            self.description = description
        }
    }

    static func apply(_ delta: FeedDelta, to document: FeedDocument) throws(Refusal) -> FeedDocument {
        guard delta.header.since == document.snapshot else { throw Refusal("starts from \(delta.header.since)") }
        var result: FeedDocument
        switch delta {
        case .batch(let batch): result = try apply(batch, to: document)
        case .sequential(let sequential): result = try apply(sequential, to: document)
        case .jsonPatch(let patch):
            do {
                result = try FeedDocument(json: try patched(document.json, patch.operations))
            } catch {
                throw Refusal("\(error)")
            }
            // The patch carries versions, snapshot and cursor itself: they must be the header's.
            guard patch.header.sectionVersions.allSatisfy({ result.sections.indices.contains($0.key) && result.sections[$0.key].version == $0.value }),
                result.snapshot == patch.header.snapshot, !patch.header.changesNextCursor || result.nextCursor == patch.header.nextCursor
            else { throw Refusal("the result disagrees with the header") }
            // Every item and view the patch changed (its data or its version) hashes to the
            // version it ends with.
            for section in result.sections {
                for item in section.items + [section.header, section.footer].compactMap({ $0 }) where item.computedVersion != item.version {
                    guard document.sections.contains(where: { $0.items.contains(item) || $0.header == item || $0.footer == item }) else {
                        throw Refusal("item \(item.id) was patched to data that does not hash to its version")
                    }
                }
            }
            return result
        }
        for (index, version) in delta.header.sectionVersions {
            guard result.sections.indices.contains(index) else { throw Refusal("section_versions names no section") }
            result.sections[index].version = version
        }
        for (index, layout) in delta.header.sectionLayouts {
            guard result.sections.indices.contains(index) else { throw Refusal("section_layouts names no section") }
            result.sections[index].layout = layout
        }
        if delta.header.changesPrefetch { result.prefetch = delta.header.prefetch }
        result.snapshot = delta.header.snapshot
        if delta.header.changesNextCursor { result.nextCursor = delta.header.nextCursor }
        return result
    }

    // MARK: Item patches

    /// The item a reload or change leaves: the whole item, or `old` merged with the patch as
    /// RFC 7396 merges (every patched member must be a value `old` has), hashing to the patch's
    /// version.
    private static func patched(_ old: FeedDocument.Item, with change: ItemChange) throws(Refusal) -> FeedDocument.Item {
        let patch: ItemPatch
        switch change {
        case .item(let item): return item
        case .patch(let found): patch = found
        case .moved: throw Refusal("an old path where an item is replaced")
        }
        func merge(_ target: JSONValue, _ patch: JSONValue) throws(Refusal) -> JSONValue {
            guard case .object(let patchMembers) = patch else { return patch }
            guard case .object(var members) = target else { throw Refusal("patch of a value that is not an object") }
            for (key, value) in patchMembers {
                guard let current = members[key] else { throw Refusal("patch of a member the item does not have") }
                if case .object = value {
                    members[key] = try merge(current, value)
                } else {
                    if case .object = current { throw Refusal("patch replaces an object") }
                    members[key] = value
                }
            }
            return .object(members)
        }
        var item = old
        item.data = try merge(old.data, patch.mergePatch)
        item.version = patch.version
        guard item.computedVersion == patch.version else { throw Refusal("patched item hashes to another version") }
        return item
    }

    // MARK: Batch

    private static func apply(_ batch: FeedDelta.Batch, to document: FeedDocument) throws(Refusal) -> FeedDocument {
        let update = batch.update
        let old = document.sections
        let inserted = try payloads(batch.insertedSections.map { ($0.position, $0) }, expected: update.sectionInserts)
        let reloaded = try payloads(batch.reloadedSections.map { ($0.oldPosition ?? -1, $0) }, expected: update.sectionReloads)
        var sectionLevel = try Level.apply(
            old: old, deletes: update.sectionDeletes, reloads: update.sectionReloads, moves: update.sectionMoves,
            inserts: update.sectionInserts, payload: { inserted[$0]!.value })
        for (oldIndex, reload) in reloaded {
            guard reload.position == sectionLevel.newIndexOfOld[oldIndex] else { throw Refusal("reloaded section at another position") }
            sectionLevel.elements[reload.position] = reload.value
        }

        // Items may only be named in sections kept in place, by old and by new index.
        var keptNew: [Int: Int] = [:]
        var keptOld: [Int: Int] = [:]
        for oldIndex in old.indices where sectionLevel.roles[oldIndex] == nil {
            keptNew[oldIndex] = sectionLevel.newIndexOfOld[oldIndex]!
            keptOld[sectionLevel.newIndexOfOld[oldIndex]!] = oldIndex
        }
        func kept(old index: Int) throws(Refusal) -> Int {
            guard keptNew[index] != nil else { throw Refusal("item operation in old section \(index), not kept") }
            return index
        }
        func kept(new index: Int) throws(Refusal) -> Int {
            guard let oldIndex = keptOld[index] else { throw Refusal("item operation in new section \(index), not kept") }
            return oldIndex
        }
        var groups: [Int: (deletes: [Int], reloads: [Int], moves: [Move<Int>], inserts: [Int])] = [:]
        for path in update.itemDeletes { groups[try kept(old: path.section), default: ([], [], [], [])].deletes.append(path.item) }
        for path in update.itemReloads { groups[try kept(old: path.section), default: ([], [], [], [])].reloads.append(path.item) }
        for move in update.itemMoves {
            let oldSection = try kept(old: move.from.section)
            guard keptNew[oldSection] == move.to.section else { throw Refusal("item move across sections") }
            groups[oldSection, default: ([], [], [], [])].moves.append(Move(from: move.from.item, to: move.to.item))
        }
        for path in update.itemInserts { groups[try kept(new: path.section), default: ([], [], [], [])].inserts.append(path.item) }
        // An inserted item may name the one the document holds at an old path instead.
        var whole = batch.insertedItems
        for reference in batch.insertedFromSnapshot {
            guard old.indices.contains(reference.from.section), old[reference.from.section].items.indices.contains(reference.from.item) else {
                throw Refusal("inserted item from an old path that names no item")
            }
            whole.append(FeedDelta.ItemPayload(position: reference.to, value: old[reference.from.section].items[reference.from.item]))
        }
        let insertedItems = try payloads(whole.map { ($0.position, $0) }, expected: update.itemInserts)
        let reloadedItems = try payloads(
            batch.reloadedItems.map { ($0.oldPosition ?? ItemPath(section: -1, item: -1), $0) }, expected: update.itemReloads)

        var result = document
        result.sections = sectionLevel.elements
        for (oldSection, group) in groups {
            let newSection = keptNew[oldSection]!
            var itemLevel = try Level.apply(
                old: old[oldSection].items, deletes: group.deletes, reloads: group.reloads, moves: group.moves, inserts: group.inserts,
                payload: { insertedItems[ItemPath(section: newSection, item: $0)]!.value })
            for oldItem in group.reloads {
                let reload = reloadedItems[ItemPath(section: oldSection, item: oldItem)]!
                guard reload.position == ItemPath(section: newSection, item: itemLevel.newIndexOfOld[oldItem]!) else {
                    throw Refusal("reloaded item at another position")
                }
                itemLevel.elements[reload.position.item] = try patched(old[oldSection].items[oldItem], with: reload.value)
            }
            result.sections[newSection].items = itemLevel.elements
        }
        for change in batch.supplementary { try apply(change, inserted: nil, to: &result) }
        return result
    }

    // MARK: Headers and footers

    /// Sets, patches or removes a section's header or footer. A sequential step says whether it
    /// inserts (`inserted` true: no view there before) or changes or removes one (false: a view
    /// there); a batch entry (nil) may set a view where there was none.
    private static func apply(_ change: FeedDelta.SupplementaryChange, inserted: Bool?, to document: inout FeedDocument) throws(Refusal) {
        guard document.sections.indices.contains(change.section) else { throw Refusal("no section \(change.section) for a view") }
        let current = change.element == .header ? document.sections[change.section].header : document.sections[change.section].footer
        switch (inserted, current) {
        case (true?, _?): throw Refusal("a view inserted where there is one")
        case (false?, nil): throw Refusal("a view changed or removed where there is none")
        default: break
        }
        var view: FeedDocument.Item?
        switch change.view {
        case nil:
            guard current != nil else { throw Refusal("a view removed where there is none") }
        case .item(let whole)?: view = whole
        case let patch?:
            guard let current else { throw Refusal("a view patched where there is none") }
            view = try patched(current, with: patch)
        }
        if change.element == .header { document.sections[change.section].header = view } else { document.sections[change.section].footer = view }
    }

    /// Payloads by key, which must be exactly the positions the operations name.
    private static func payloads<Key: Hashable, Payload>(_ entries: [(Key, Payload)], expected: [Key]) throws(Refusal) -> [Key: Payload] {
        var byKey: [Key: Payload] = [:]
        for (key, entry) in entries {
            guard byKey.updateValue(entry, forKey: key) == nil else { throw Refusal("two payloads for \(key)") }
        }
        guard Set(expected) == Set(byKey.keys) else { throw Refusal("payloads do not match the operations") }
        return byKey
    }

    /// One level of a batch (the sections, or the items of one section) interpreted as UIKit does.
    private struct Level<Element> {
        enum Role { case delete, reload, move }

        var elements: [Element]
        var newIndexOfOld: [Int?]
        var roles: [Role?]

        static func apply(
            old: [Element], deletes: [Int], reloads: [Int], moves: [Move<Int>], inserts: [Int], payload: (Int) -> Element
        ) throws(Refusal) -> Level {
            var roles = [Role?](repeating: nil, count: old.count)
            func claim(_ index: Int, _ role: Role) throws(Refusal) {
                guard old.indices.contains(index), roles[index] == nil else { throw Refusal("old index \(index) out of range or named twice") }
                roles[index] = role
            }
            for index in deletes { try claim(index, .delete) }
            for index in reloads { try claim(index, .reload) }
            for move in moves { try claim(move.from, .move) }
            let newCount = old.count - deletes.count + inserts.count
            guard newCount >= 0 else { throw Refusal("negative count") }
            var slots = [Element?](repeating: nil, count: newCount)
            func place(_ element: Element, at index: Int) throws(Refusal) {
                guard slots.indices.contains(index), slots[index] == nil else { throw Refusal("new index \(index) out of range or named twice") }
                slots[index] = element
            }
            var newIndexOfOld = [Int?](repeating: nil, count: old.count)
            for index in inserts { try place(payload(index), at: index) }
            for move in moves {
                try place(old[move.from], at: move.to)
                newIndexOfOld[move.from] = move.to
            }
            var free = 0
            for (index, element) in old.enumerated() where roles[index] == nil || roles[index] == .reload {
                while free < newCount, slots[free] != nil { free += 1 }
                guard free < newCount else { throw Refusal("more kept elements than free positions") }
                slots[free] = element
                newIndexOfOld[index] = free
                free += 1
            }
            var elements: [Element] = []
            for slot in slots {
                guard let slot else { throw Refusal("a position nothing fills") }
                elements.append(slot)
            }
            return Level(elements: elements, newIndexOfOld: newIndexOfOld, roles: roles)
        }
    }

    // MARK: Sequential

    private static func apply(_ sequential: FeedDelta.Sequential, to document: FeedDocument) throws(Refusal) -> FeedDocument {
        var result = document
        for operation in sequential.operations {
            switch operation {
            case .sections(let step, let values):
                try apply(step, values: values, to: &result.sections)
            case .items(let section, let step, let changes):
                guard result.sections.indices.contains(section) else { throw Refusal("no section \(section)") }
                let items = result.sections[section].items
                var values: [FeedDocument.Item] = []
                for (offset, change) in changes.enumerated() {
                    switch (change, step) {
                    case (.item(let item), _): values.append(item)
                    case (.patch, .change(let index, _)) where items.indices.contains(index + offset):
                        values.append(try patched(items[index + offset], with: change))
                    case (.patch, _): throw Refusal("a patch where no item is replaced")
                    case (.moved(let from), .insert):
                        // The document the delta starts from, not the one the steps so far made.
                        guard document.sections.indices.contains(from.section), document.sections[from.section].items.indices.contains(from.item) else {
                            throw Refusal("an old path that names no item")
                        }
                        values.append(document.sections[from.section].items[from.item])
                    case (.moved, _): throw Refusal("an old path where nothing is inserted")
                    }
                }
                try apply(step, values: values, to: &result.sections[section].items)
            case .supplementary(let change, let inserted):
                try apply(change, inserted: inserted, to: &result)
            }
        }
        return result
    }

    private static func apply<T>(_ step: SequentialOperation, values: [T], to list: inout [T]) throws(Refusal) {
        switch step {
        case .remove(let index, let count):
            guard count > 0, index >= 0, index + count <= list.count else { throw Refusal("\(step) on \(list.count)") }
            list.removeSubrange(index..<index + count)
        case .insert(let index, let count):
            guard count > 0, count == values.count, index >= 0, index <= list.count else { throw Refusal("\(step) on \(list.count)") }
            list.insert(contentsOf: values, at: index)
        case .move(let from, let to):
            guard list.indices.contains(from), list.indices.contains(to) else { throw Refusal("\(step) on \(list.count)") }
            list.insert(list.remove(at: from), at: to)
        case .change(let index, let count):
            guard count > 0, count == values.count, index >= 0, index + count <= list.count else { throw Refusal("\(step) on \(list.count)") }
            list.replaceSubrange(index..<index + count, with: values)
        }
    }

    // MARK: JSON Patch, on the document's JSON (RFC 6902's add, remove, replace and move)

    private static func patched(_ document: JSONValue, _ operations: [PatchOperation]) throws(Refusal) -> JSONValue {
        var document = document
        for operation in operations {
            let path = operation.path.tokens[...]
            switch operation.op {
            case .add: try add(operation.value!, at: path, in: &document)
            case .remove: _ = try remove(at: path, in: &document)
            case .replace:
                _ = try remove(at: path, in: &document)
                try add(operation.value!, at: path, in: &document)
            case .move:
                let from = operation.from!.tokens
                if from == Array(path) { continue }
                guard !(path.count > from.count && Array(path.prefix(from.count)) == from) else { throw Refusal("move into its own child") }
                // A move stays in its array, or takes an item from one section's items to another's
                // (an item the snapshot holds, slid into the next section).
                let betweenItems =
                    from.count == 4 && path.count == 4 && from[0] == "sections" && from[2] == "items" && path[path.startIndex] == "sections"
                    && path[path.startIndex + 2] == "items"
                guard from.dropLast() == Array(path.dropLast()) || betweenItems else { throw Refusal("move across arrays") }
                try add(try remove(at: from[...], in: &document), at: path, in: &document)
            }
        }
        return document
    }

    private static func add(_ value: JSONValue, at path: ArraySlice<String>, in document: inout JSONValue) throws(Refusal) {
        guard let token = path.first else {
            document = value
            return
        }
        switch document {
        case .object(var members):
            if path.count == 1 {
                members[token] = value
            } else {
                guard var member = members[token] else { throw Refusal("no member \(token)") }
                try add(value, at: path.dropFirst(), in: &member)
                members[token] = member
            }
            document = .object(members)
        case .array(var elements):
            let index = try arrayIndex(token, count: elements.count, allowEnd: path.count == 1)
            if path.count == 1 {
                elements.insert(value, at: index)
            } else {
                try add(value, at: path.dropFirst(), in: &elements[index])
            }
            document = .array(elements)
        default:
            throw Refusal("cannot add under a \(document.typeName)")
        }
    }

    private static func remove(at path: ArraySlice<String>, in document: inout JSONValue) throws(Refusal) -> JSONValue {
        guard let token = path.first else { throw Refusal("cannot remove the whole document") }
        switch document {
        case .object(var members):
            guard var member = members[token] else { throw Refusal("no member \(token)") }
            let removed: JSONValue
            if path.count == 1 {
                removed = member
                members[token] = nil
            } else {
                removed = try remove(at: path.dropFirst(), in: &member)
                members[token] = member
            }
            document = .object(members)
            return removed
        case .array(var elements):
            let index = try arrayIndex(token, count: elements.count, allowEnd: false)
            let removed = path.count == 1 ? elements.remove(at: index) : try remove(at: path.dropFirst(), in: &elements[index])
            document = .array(elements)
            return removed
        default:
            throw Refusal("cannot remove under a \(document.typeName)")
        }
    }

    /// `0`, or digits without a leading zero, below `count` (or equal to it when `allowEnd`).
    private static func arrayIndex(_ token: String, count: Int, allowEnd: Bool) throws(Refusal) -> Int {
        let digits = token.utf8
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            digits.count == 1 || digits.first != UInt8(ascii: "0"), let index = Int(token), index < count || (allowEnd && index == count)
        else { throw Refusal("\"\(token)\" is not an index of an array of \(count)") }
        return index
    }
}
