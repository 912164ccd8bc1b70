import JSONBytes
public import ListDiff

// Applying a delta to a feed document, built on ListDiff's apply functions: ListDiff checks the
// operations against its rules (UIKit's for a batch, positions valid at their moment for steps)
// and rebuilds the lists; the feed adds what the wire carries beside ListDiff's operations.
//
// ListDiff's apply functions read inserted and replaced values from the *new* list, which a
// client does not have: a delta carries them instead, keyed by position (a batch) or inline (a
// step, a patch operation). So each level is run through ListDiff on stand-ins — the old
// elements' indexes, and a new list holding only the values the delta carries — and the feed's
// rules come on top: payloads exactly where the operations say, items never changing sections,
// the header's section versions, snapshot and cursor copied (or, for a patch, checked), and a
// delta from another snapshot refused.

/// Why a delta cannot be applied to a document. Applying never half-succeeds: the apply
/// functions return a new document or throw one of these, and the original is untouched.
///
/// The rules ListDiff checks come as its ``ApplyError`` (with ``invalidOperations(_:_:)``); the
/// others are the feed's. A client that gets one should fetch the whole feed again (and report
/// it: the server sent a delta that does not fit the snapshot it claims to start from).
public enum DeltaApplyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The delta starts from snapshot `since`, the document is snapshot `document`.
    case snapshotMismatch(document: String, since: String)
    /// The operations break one of ListDiff's rules (``ApplyError/Kind``): a position out of
    /// range (at its moment, for a step), named twice, an item operation in a section the batch
    /// changes whole or that does not exist, counts that do not add up. The first member says
    /// where: `sections` or `items` of a batch, `operations[2]`, `patch[0]`.
    case invalidOperations(String, ApplyError)
    /// A batch moves an item from one section to another (items never change sections).
    case itemMoveAcrossSections(from: ItemPath, to: ItemPath)
    /// A step's `count` differs from the number of values it carries, or `section_versions`
    /// names a section the result does not have.
    case countMismatch(String)
    /// A batch's payloads do not match its operations: an insert or reload without its section
    /// or item, a payload for a position no operation names, or at another position than the
    /// one the operations give.
    case payloadMismatch(String)
    /// A JSON Patch value is not a section or an item, or a field it replaces not of its type.
    case invalidDocument(String)
    /// A JSON Patch applied, but the result disagrees with the delta's own header (its section
    /// versions, snapshot or cursor), or fields of an item were replaced without its version.
    case resultMismatch(String)
    /// An item patched field by field does not hash to the version the delta announces for it
    /// (``FeedDocument/Item/computedVersion``): the patch met another version of the item than
    /// the one the server patched from.
    case itemVersionMismatch(item: String, announced: String, computed: String)

    /// A sentence saying what is wrong.
    public var description: String {
        switch self {
        case .snapshotMismatch(let document, let since): "the delta starts from snapshot \(since) but the document is snapshot \(document)"
        case .invalidOperations(let place, let error): "\(place): \(error.message)"
        case .itemMoveAcrossSections(let from, let to): "items.moves: \(from) → \(to) moves an item between sections"
        case .countMismatch(let reason): "counts do not add up: \(reason)"
        case .payloadMismatch(let reason): "payloads do not match the operations: \(reason)"
        case .invalidDocument(let reason): "not a feed value: \(reason)"
        case .resultMismatch(let reason): "the result disagrees with the delta's header: \(reason)"
        case .itemVersionMismatch(let item, let announced, let computed):
            "item \(item) hashes to version \(computed) after its patch, the delta announces \(announced)"
        }
    }
}

extension FeedDocument {
    /// Applies a delta of any form (see ``applying(batch:)``, ``applying(sequential:)`` and
    /// ``applying(jsonPatch:)``).
    ///
    /// - Returns: The document after the delta, equal to what a fresh fetch returns.
    /// - Throws: ``DeltaApplyError``; the document is never half-updated.
    public func applying(_ delta: FeedDelta) throws(DeltaApplyError) -> FeedDocument {
        switch delta {
        case .batch(let batch): try applying(batch: batch)
        case .sequential(let sequential): try applying(sequential: sequential)
        case .jsonPatch(let patch): try applying(jsonPatch: patch)
        }
    }

    /// The item at `path` of this document (the one a delta starts from), for a payload that
    /// names it (`verb`: what the payload does with it).
    private func item(at path: ItemPath, name: String, _ verb: String) throws(DeltaApplyError) -> FeedDocument.Item {
        guard sections.indices.contains(path.section), sections[path.section].items.indices.contains(path.item) else {
            throw .payloadMismatch("\(name) \(verb) \(path), which names no item")
        }
        return sections[path.section].items[path.item]
    }

    // MARK: Batch

    /// Applies a batch delta the way UIKit interprets one `performBatchUpdates`: ListDiff's
    /// ``SectionedBatchUpdate/apply(to:newSections:items:)`` rules, with the inserted and
    /// reloaded sections and items taken from the payloads; then the headers and footers of
    /// `supplementary`, by new section index.
    ///
    /// Every payload must be named by exactly one operation, and a reload's payload must say
    /// the position the batch gives it; items never move between sections, but an inserted item
    /// may be one this document holds at an old path (``FeedDelta/Batch/insertedFromSnapshot``). A reload that is a
    /// patch applies to the item at its old path, and the result must hash to the version it
    /// announces. Finally the sections named in `section_versions` and `section_layouts` take
    /// their new version and layout, and the document the header's snapshot, cursor and (when it
    /// changed) prefetch hint.
    ///
    /// - Returns: The document after the batch.
    /// - Throws: ``DeltaApplyError``.
    public func applying(batch: FeedDelta.Batch) throws(DeltaApplyError) -> FeedDocument {
        try checkStart(batch.header)
        let update = batch.update
        let insertedSections = try payloads(batch.insertedSections, \.position, "inserted_sections", "sections.inserts", update.sectionInserts)
        let reloadedSections = try payloads(batch.reloadedSections, \.oldPosition, "reloaded_sections", "sections.reloads", update.sectionReloads)
        var wholeInserts = batch.insertedItems
        for (offset, reference) in batch.insertedFromSnapshot.enumerated() {
            wholeInserts.append(
                FeedDelta.ItemPayload(
                    position: reference.to, value: try item(at: reference.from, name: "inserted_items (old_path \(offset))", "names")))
        }
        let insertedItems = try payloads(wholeInserts, \.position, "inserted_items", "items.inserts", update.itemInserts)
        var wholeReloads: [FeedDelta.ItemPayload] = []
        for (offset, reload) in batch.reloadedItems.enumerated() {
            let name = "reloaded_items[\(offset)]"
            guard let old = reload.oldPosition else { throw .payloadMismatch("\(name) has no old position") }
            let value: FeedDocument.Item
            if case .item(let item) = reload.value {
                value = item
            } else {
                value = try reload.value.applied(to: try item(at: old, name: name, "patches"), name: name)
            }
            wholeReloads.append(FeedDelta.ItemPayload(oldPosition: old, position: reload.position, value: value))
        }
        let reloadedItems = try payloads(wholeReloads, \.oldPosition, "reloaded_items", "items.reloads", update.itemReloads)

        // Sections: ListDiff places the old ones; the others come from the payloads.
        let sectionCount = sections.count - update.sectionDeletes.count + update.sectionInserts.count
        let placed = try listDiff("sections") { () throws(ApplyError) in
            try BatchUpdate(deletes: update.sectionDeletes, inserts: update.sectionInserts, moves: update.sectionMoves, reloads: update.sectionReloads)
                .apply(to: sections.indices.map { $0 as Int? }, newElements: [Int?](repeating: nil, count: max(0, sectionCount)))
        }
        var result = self
        result.sections = try resolve(
            placed, old: sections, inserted: { insertedSections[$0] }, reloads: update.sectionReloads, reloaded: { reloadedSections[$0]! },
            position: { $0 }, name: "reloaded_sections: old index")

        // Items of the sections kept in place (neither moved nor replaced), by old and new index.
        let moved = Set(update.sectionMoves.map(\.to))
        var keptAt: [Int: Int] = [:]
        for (new, old) in placed.enumerated() where !moved.contains(new) {
            if let old { keptAt[old] = new }
        }
        for move in update.itemMoves where keptAt[move.from.section].map({ $0 != move.to.section }) ?? false {
            throw .itemMoveAcrossSections(from: move.from, to: move.to)
        }
        var itemCounts = [Int](repeating: 0, count: placed.count)
        for (old, new) in keptAt { itemCounts[new] = sections[old].items.count }
        for path in update.itemDeletes { if let new = keptAt[path.section] { itemCounts[new] -= 1 } }
        for path in update.itemInserts where itemCounts.indices.contains(path.section) { itemCounts[path.section] += 1 }
        let placedItems = try listDiff("items") { () throws(ApplyError) in
            try update.apply(
                to: sections.map { section in section.items.indices.map { $0 as Int? } },
                newSections: itemCounts.map { [Int?](repeating: nil, count: max(0, $0)) }
            ) { (items: [Int?]) in items }
        }
        let reloadsBySection = Dictionary(grouping: update.itemReloads, by: \.section)
        for (old, new) in keptAt {
            result.sections[new].items = try resolve(
                placedItems[new].items, old: sections[old].items, inserted: { insertedItems[$0] },
                reloads: reloadsBySection[old, default: []].map(\.item), reloaded: { reloadedItems[ItemPath(section: old, item: $0)]! },
                position: { ItemPath(section: new, item: $0) }, name: "reloaded_items: old path")
        }
        for (offset, change) in batch.supplementary.enumerated() {
            try result.apply(change, inserted: nil, name: "supplementary[\(offset)]")
        }
        try result.finish(with: batch.header)
        return result
    }

    /// Applies a header or footer change to a section of the result: `inserted` says what the
    /// step claims (a sequential insert needs no view there, a change or remove one), nil for a
    /// batch entry, which may set a view where there was none.
    private mutating func apply(_ change: FeedDelta.SupplementaryChange, inserted: Bool?, name: String) throws(DeltaApplyError) {
        let element = change.element
        try checkSection(change.section, name: name, "the \(element.rawValue) of section \(change.section)")
        let current = sections[change.section][element]
        if inserted == true, current != nil {
            throw .payloadMismatch("\(name) inserts a \(element.rawValue) into section \(change.section), which has one")
        }
        if inserted == false || change.view == nil || change.view?.isPatch == true, current == nil {
            throw .payloadMismatch("\(name) changes or removes the \(element.rawValue) of section \(change.section), which has none")
        }
        switch change.view {
        case nil: sections[change.section][element] = nil
        case .item(let view)?: sections[change.section][element] = view
        case let patch?: sections[change.section][element] = try patch.applied(to: current!, name: name)
        }
    }

    // MARK: Sequential

    /// Applies a sequential delta the way Android's `ListUpdateCallback` receives one: each
    /// step in order, against the list as the previous steps left it, as ListDiff's
    /// ``SequentialUpdate/apply(to:newElements:)`` checks and applies it, with the values the
    /// step carries.
    ///
    /// Item steps name their section by its index at that moment; a change may carry patches of
    /// the items it replaces, each checked against the version it announces, and an insert items
    /// this document (the one the delta starts from) holds, by their path in it. Finally the sections
    /// named in `section_versions` take their new version, and the document the header's
    /// snapshot and cursor.
    ///
    /// - Returns: The document after every step.
    /// - Throws: ``DeltaApplyError``: a step out of range at its moment, a count below one or
    ///   different from the values carried, an unknown section, or a delta starting from
    ///   another snapshot.
    public func applying(sequential: FeedDelta.Sequential) throws(DeltaApplyError) -> FeedDocument {
        try checkStart(sequential.header)
        var result = self
        for (offset, operation) in sequential.operations.enumerated() {
            let name = "operations[\(offset)]"
            switch operation {
            case .sections(let step, let values):
                try runStep(step, values: values, on: &result.sections, name: name)
            case .items(let section, let step, let changes):
                try result.checkSection(section, name: name, "\(step)")
                let items = result.sections[section].items
                var values: [FeedDocument.Item] = []
                for (offset, change) in changes.enumerated() {
                    if case .item(let item) = change {
                        values.append(item)
                        continue
                    }
                    if case .moved(let from) = change, case .insert = step {
                        // The document the delta starts from, not the one the steps so far made.
                        values.append(try item(at: from, name: "\(name).items[\(offset)]", "names"))
                        continue
                    }
                    guard case .change(let at, _) = step, items.indices.contains(at + offset) else {
                        throw .payloadMismatch("\(name) carries a patch for no item it replaces (\(step), value \(offset))")
                    }
                    values.append(try change.applied(to: items[at + offset], name: "\(name).items[\(offset)]"))
                }
                try runStep(step, values: values, on: &result.sections[section].items, name: name)
            case .supplementary(let change, let inserted):
                try result.apply(change, inserted: inserted, name: name)
            }
        }
        try result.finish(with: sequential.header)
        return result
    }

    // MARK: JSON Patch

    /// Applies a JSON Patch delta: ListDiff's operations on the sections (`/sections/3`) and on
    /// the items of one section (`/sections/3/items/2`), each as ListDiff's
    /// ``JSONPatch/apply(to:newElements:at:)`` checks and applies it with the operation's value;
    /// a `move` of an item from one section's items to another's (an item the snapshot holds,
    /// slid into the next section); replaces of a section's `version` and `layout`, `/snapshot` and `/next_cursor`, which the
    /// feed adds; a section's `header` or `footer` added where it has none, replaced or removed
    /// where it has one; `/prefetch` added, replaced or removed; and an item (or a header or
    /// footer) patched field by field: replaces of existing values under its `data`, then of its
    /// `version`, where it must hash to that version. Any other operation or location is refused.
    ///
    /// Afterwards the result is checked against the delta's header: its snapshot and cursor (and
    /// section versions, if it names any) must be the header's, and no item may be left with
    /// replaced fields but no new version.
    ///
    /// - Returns: The document after the patch.
    /// - Throws: ``DeltaApplyError``.
    public func applying(jsonPatch: FeedDelta.JSONPatch) throws(DeltaApplyError) -> FeedDocument {
        try checkStart(jsonPatch.header)
        var result = self
        var fieldsReplaced: Set<String> = []
        for (offset, operation) in jsonPatch.operations.enumerated() {
            try result.apply(operation, name: "patch[\(offset)]", fieldsReplaced: &fieldsReplaced)
        }
        if let item = fieldsReplaced.min() {
            throw .resultMismatch("\(item) had fields replaced but not its version")
        }
        let header = jsonPatch.header
        guard result.snapshot == header.snapshot else {
            throw .resultMismatch("/snapshot is \(result.snapshot), the header says \(header.snapshot)")
        }
        guard !header.changesNextCursor || result.nextCursor == header.nextCursor else {
            throw .resultMismatch("/next_cursor is \(result.nextCursor ?? "null"), the header says \(header.nextCursor ?? "null")")
        }
        for (index, version) in header.sectionVersions.sorted(by: { $0.key < $1.key }) {
            guard result.sections.indices.contains(index) else {
                throw .resultMismatch("section_versions names section \(index), the patched document has \(result.sections.count)")
            }
            guard result.sections[index].version == version else {
                throw .resultMismatch(
                    "/sections/\(index) (\(result.sections[index].id)) has version \(result.sections[index].version), section_versions says \(version)")
            }
        }
        return result
    }

    private mutating func apply(_ operation: PatchOperation, name: String, fieldsReplaced: inout Set<String>) throws(DeltaApplyError) {
        let tokens = operation.path.tokens
        func string(_ value: JSONValue, nullable: Bool = false) throws(DeltaApplyError) -> String? {
            if case .string(let string) = value { return string }
            guard nullable, value == .null else { throw .invalidDocument("\(name): \(operation.path) must be a string\(nullable ? " or null" : "")") }
            return nil
        }
        // The feed's own fields.
        if operation.op == .replace, let value = operation.value {
            if tokens == ["snapshot"] {
                snapshot = try string(value)!
                return
            }
            if tokens == ["next_cursor"] {
                nextCursor = try string(value, nullable: true)
                return
            }
            if tokens.count == 3, tokens[0] == "sections", tokens[2] == "layout", let section = JSONPointer.arrayIndex(tokens[1]) {
                try checkSection(section, name: name, "\(operation.path)")
                sections[section].layout = try decoded(value, decodeSectionLayout, name: name)
                return
            }
            if tokens.count == 3, tokens[0] == "sections", tokens[2] == "version", let section = JSONPointer.arrayIndex(tokens[1]) {
                try checkSection(section, name: name, "\(operation.path)")
                sections[section].version = try string(value)!
                return
            }
            // A field of an item's data, or the item's version after its fields.
            if tokens.count >= 5, tokens[0] == "sections", tokens[2] == "items", let section = JSONPointer.arrayIndex(tokens[1]),
                let item = JSONPointer.arrayIndex(tokens[3]), tokens[4] == "data" || (tokens[4] == "version" && tokens.count == 5)
            {
                try checkSection(section, name: name, "\(operation.path)")
                guard sections[section].items.indices.contains(item) else {
                    throw .invalidOperations(
                        name, ApplyError(.indexOutOfRange, section: section, "\(operation.path) names no item (count \(sections[section].items.count))"))
                }
                try replaceField(
                    of: &sections[section].items[item], at: "/sections/\(section)/items/\(item)", tokens: tokens[4...], value: value,
                    operation: operation, name: name, fieldsReplaced: &fieldsReplaced)
                return
            }
            // A field of a header's or footer's data, or its version after its fields.
            if tokens.count >= 4, tokens[0] == "sections", let element = SupplementaryElement(rawValue: tokens[2]),
                let section = JSONPointer.arrayIndex(tokens[1]), tokens[3] == "data" || (tokens[3] == "version" && tokens.count == 4)
            {
                try checkSection(section, name: name, "\(operation.path)")
                guard var view = sections[section][element] else {
                    throw .invalidDocument("\(name): \(operation.path): section \(section) has no \(element.rawValue)")
                }
                try replaceField(
                    of: &view, at: "/sections/\(section)/\(element.rawValue)", tokens: tokens[3...], value: value, operation: operation, name: name,
                    fieldsReplaced: &fieldsReplaced)
                sections[section][element] = view
                return
            }
        }
        // The next page's hint, which comes and goes with the next page.
        if tokens == ["prefetch"] {
            switch (operation.op, operation.value) {
            case (.add, let value?), (.replace, let value?):
                guard operation.op == .add || prefetch != nil else { throw .invalidDocument("\(name): replace /prefetch, which the document does not have") }
                prefetch = try decoded(value, decodePrefetch, name: name)
            case (.remove, nil):
                guard prefetch != nil else { throw .invalidDocument("\(name): remove /prefetch, which the document does not have") }
                prefetch = nil
            default: throw .invalidDocument("\(name): \(operation.op) /prefetch")
            }
            return
        }
        // A whole header or footer: added where there is none, replaced, or removed.
        if tokens.count == 3, tokens[0] == "sections", let element = SupplementaryElement(rawValue: tokens[2]),
            let section = JSONPointer.arrayIndex(tokens[1]), operation.op != .move
        {
            try checkSection(section, name: name, "\(operation.path)")
            let present = sections[section][element] != nil
            guard present == (operation.op != .add) else {
                throw .invalidDocument("\(name): \(operation.op) \(operation.path), but the section \(present ? "has" : "has no") \(element.rawValue)")
            }
            sections[section][element] = try operation.value.map { value throws(DeltaApplyError) in
                try decoded(value, FeedDocument.Item.init(json:path:), name: name)
            }
            return
        }
        // Sections and items: one ListDiff operation on one array, whose value the operation carries.
        func refuse(_ reason: String) -> DeltaApplyError { .invalidOperations(name, ApplyError(.invalidPath, "\(operation.op) \(operation.path) \(reason)")) }
        guard let index = tokens.last.flatMap(JSONPointer.arrayIndex) else { throw refuse("does not end with an array index") }
        let change = operation.op == .add ? 1 : operation.op == .remove ? -1 : 0
        let step = JSONPatchOperation(kind: operation.op, path: operation.path, from: operation.from, value: operation.value.map { _ in .element(index) })
        func decode<Value>(_ decoder: WireDecoder<Value>) throws(DeltaApplyError) -> [Value] {
            guard let value = operation.value else { return [] }
            return [try decoded(value, decoder, name: name)]
        }
        if tokens.count == 2, tokens[0] == "sections" {
            let values = try decode(FeedDocument.Section.init(json:path:))
            try run(name, on: &sections, newCount: sections.count + change, values: values, at: index) { (old, new) throws(ApplyError) in
                try ListDiff.JSONPatch(operations: [step]).apply(to: old, newElements: new, at: "/sections")
            }
        } else if tokens.count == 4, tokens[0] == "sections", tokens[2] == "items", let section = JSONPointer.arrayIndex(tokens[1]),
            operation.op == .move, let from = operation.from?.tokens, from.count == 4, from[0] == "sections", from[2] == "items",
            let fromSection = JSONPointer.arrayIndex(from[1]), fromSection != section, let fromIndex = JSONPointer.arrayIndex(from[3])
        {
            // An item the document holds, moved into another section (a new video above it slid
            // it there): out of one items array, into the other.
            try checkSection(fromSection, name: name, "\(operation.from!)")
            try checkSection(section, name: name, "\(operation.path)")
            guard sections[fromSection].items.indices.contains(fromIndex) else {
                throw .invalidOperations(name, ApplyError(.indexOutOfRange, section: fromSection, "\(operation.from!) names no item"))
            }
            guard index <= sections[section].items.count else {
                throw .invalidOperations(name, ApplyError(.indexOutOfRange, section: section, "\(operation.path) is past the end of the items"))
            }
            sections[section].items.insert(sections[fromSection].items.remove(at: fromIndex), at: index)
        } else if tokens.count == 4, tokens[0] == "sections", tokens[2] == "items", let section = JSONPointer.arrayIndex(tokens[1]) {
            try checkSection(section, name: name, "\(operation.path)")
            let values = try decode(FeedDocument.Item.init(json:path:))
            try run(name, on: &sections[section].items, newCount: sections[section].items.count + change, values: values, at: index) {
                (old, new) throws(ApplyError) in
                try ListDiff.JSONPatch(operations: [step]).apply(to: old, newElements: new, at: JSONPointer(tokens: Array(tokens.prefix(3))))
            }
        } else {
            throw refuse("is not a section, an item, a header or footer, a section's version or layout, /snapshot, /next_cursor or /prefetch")
        }
    }

    /// A replace of a field under an item's (or view's) `data` (`tokens` from `data` on), or of
    /// its `version` after its fields, which must then hash to it.
    private func replaceField(
        of item: inout FeedDocument.Item, at location: String, tokens: ArraySlice<String>, value: JSONValue, operation: PatchOperation,
        name: String, fieldsReplaced: inout Set<String>
    ) throws(DeltaApplyError) {
        if tokens.first == "version" {
            guard case .string(let version) = value else { throw .invalidDocument("\(name): \(operation.path) must be a string") }
            item.version = version
            try item.checkVersion()
            fieldsReplaced.remove(location)
            return
        }
        let field = Array(tokens.dropFirst())
        guard !field.isEmpty, let data = ItemPatch(version: "", changes: [ItemPatch.Change(path: field, value: value)]).applied(to: item.data)
        else {
            throw .invalidDocument("\(name): \(operation.path) is not a value the item has")
        }
        item.data = data
        fieldsReplaced.insert(location)
    }

    /// A patch value read as a feed value.
    private func decoded<Value>(_ value: JSONValue, _ decoder: WireDecoder<Value>, name: String) throws(DeltaApplyError) -> Value {
        do {
            return try decoder(value, name + ".value")
        } catch {
            throw .invalidDocument(error.description)
        }
    }

    // MARK: Shared

    /// Checks that a delta starts from this document's snapshot.
    private func checkStart(_ header: FeedDelta.Header) throws(DeltaApplyError) {
        guard header.since == snapshot else { throw .snapshotMismatch(document: snapshot, since: header.since) }
    }

    private func checkSection(_ section: Int, name: String, _ what: String) throws(DeltaApplyError) {
        guard sections.indices.contains(section) else {
            throw .invalidOperations(name, ApplyError(.indexOutOfRange, section: section, "\(what) names no section (count \(sections.count))"))
        }
    }

    /// Copies the header into a document whose sections are in their final order: the versions
    /// `section_versions` names, the snapshot and the cursor.
    private mutating func finish(with header: FeedDelta.Header) throws(DeltaApplyError) {
        for (index, version) in header.sectionVersions.sorted(by: { $0.key < $1.key }) {
            guard sections.indices.contains(index) else {
                throw .countMismatch("section_versions names section \(index) of \(sections.count)")
            }
            sections[index].version = version
        }
        for (index, layout) in header.sectionLayouts.sorted(by: { $0.key < $1.key }) {
            guard sections.indices.contains(index) else {
                throw .countMismatch("section_layouts names section \(index) of \(sections.count)")
            }
            sections[index].layout = layout
        }
        if header.changesPrefetch { prefetch = header.prefetch }
        snapshot = header.snapshot
        if header.changesNextCursor { nextCursor = header.nextCursor }
    }
}

/// Runs a ListDiff apply function, naming the place of its error.
private func listDiff<Result>(_ place: String, _ body: () throws(ApplyError) -> Result) throws(DeltaApplyError) -> Result {
    do {
        return try body()
    } catch {
        throw .invalidOperations(place, error)
    }
}

/// Applies one sequential step to `list` through ListDiff, with the values it carries.
private func runStep<Element>(_ step: SequentialOperation, values: [Element], on list: inout [Element], name: String) throws(DeltaApplyError) {
    let (at, count, change): (Int, Int, Int) =
        switch step {
        case .remove(let at, let count): (at, 0, -count)
        case .insert(let at, let count): (at, count, count)
        case .move: (0, 0, 0)
        case .change(let at, let count): (at, count, 0)
        }
    guard values.count == count else { throw .countMismatch("\(name): count \(count) but \(values.count) values") }
    try run(name, on: &list, newCount: list.count + change, values: values, at: at) { (old, new) throws(ApplyError) in
        try SequentialUpdate(operations: [step]).apply(to: old, newElements: new)
    }
}

/// Runs one ListDiff operation on `list`. ListDiff checks its positions and reads the values it
/// inserts or replaces from the new list (of `newCount` elements), which holds `values` from
/// `at` and nothing elsewhere: the operation's own values are all a client has.
private func run<Element>(
    _ name: String, on list: inout [Element], newCount: Int, values: [Element], at: Int,
    _ apply: ([Element?], [Element?]) throws(ApplyError) -> [Element?]
) throws(DeltaApplyError) {
    var new = [Element?](repeating: nil, count: max(0, newCount))
    if at >= 0, at + values.count <= new.count {  // elsewhere ListDiff refuses the operation
        new.replaceSubrange(at..<at + values.count, with: values.map { $0 })
    }
    let result = try listDiff(name) { () throws(ApplyError) in try apply(list.map { $0 }, new) }
    let elements = result.compactMap { $0 }
    guard elements.count == result.count else { throw .payloadMismatch("\(name): the operation needs a value it does not carry") }
    list = elements
}

/// Indexes a batch's payloads by `key` (the new position of an insert, the old one of a reload),
/// and checks they are exactly the positions the operation list `operation` names.
private func payloads<Position, Value>(
    _ entries: [FeedDelta.Payload<Position, Value>], _ key: (FeedDelta.Payload<Position, Value>) -> Position?, _ name: String,
    _ operation: String, _ expected: [Position]
) throws(DeltaApplyError) -> [Position: FeedDelta.Payload<Position, Value>] {
    var byKey: [Position: FeedDelta.Payload<Position, Value>] = [:]
    for entry in entries {
        guard let position = key(entry) else { throw .payloadMismatch("\(name) has an entry without an old position") }
        guard byKey.updateValue(entry, forKey: position) == nil else { throw .payloadMismatch("\(name) has two entries for \(position)") }
    }
    if let missing = expected.first(where: { byKey[$0] == nil }) {
        throw .payloadMismatch("\(operation) names \(missing) but \(name) has no entry for it")
    }
    let named = Set(expected)
    if let extra = entries.compactMap(key).first(where: { !named.contains($0) }) {
        throw .payloadMismatch("\(name) has an entry for \(extra) but \(operation) does not name it")
    }
    return byKey
}

/// The new list of one level of a batch from ListDiff's placement of old indexes (nil where the
/// batch inserts or reloads): kept and moved elements from `old`, inserted ones from their
/// payloads, reloaded ones from theirs, which must say the position ListDiff gave them. ListDiff
/// fills the positions no insert or move claims with the kept and reloaded elements in old
/// order, so the reloads, in ascending old order, meet those positions in ascending order.
private func resolve<Position: Comparable, Value>(
    _ placed: [Int?], old: [Value], inserted: (Position) -> FeedDelta.Payload<Position, Value>?, reloads: [Int],
    reloaded: (Int) -> FeedDelta.Payload<Position, Value>, position: (Int) -> Position, name: String
) throws(DeltaApplyError) -> [Value] {
    var reloads = reloads.sorted().makeIterator()
    var result: [Value] = []
    result.reserveCapacity(placed.count)
    for (index, source) in placed.enumerated() {
        if let source {
            result.append(old[source])
        } else if let payload = inserted(position(index)) {
            result.append(payload.value)
        } else if let reload = reloads.next() {
            let payload = reloaded(reload)
            guard payload.position == position(index) else {
                throw .payloadMismatch("\(name) \(payload.oldPosition ?? payload.position) ends up at \(position(index)), not \(payload.position)")
            }
            result.append(payload.value)
        } else {
            throw .payloadMismatch("nothing ends up at \(position(index))")
        }
    }
    return result
}
