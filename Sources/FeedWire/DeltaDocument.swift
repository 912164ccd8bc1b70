import JSONBytes
public import ListDiff

/// A delta between a snapshot and the current feed page as the client receives it, in one of
/// the three ``DeltaFormat``s, with the payloads of everything inserted or replaced taken from
/// the new page. The service computes it; ``bytes`` writes it (from the page's shared item
/// bytes, on each call).
///
/// Every form carries `snapshot` (the new id) and `change_count`, and `next_cursor` when it
/// changed; what the request said (the form, the snapshot it starts from) is not repeated.
/// Batch and sequential deltas carry `section_versions`, the new versions of the
/// sections kept in place whose items changed, by new index (inserted and reloaded sections carry
/// their own; a JSON Patch replaces them in the document). A list with nothing in it is left
/// out. An item that keeps its id and kind and changes only fields of its data travels as an
/// ``ItemPatch`` (its new version and those fields) instead of whole. A client that applies the
/// operations and copies those members holds exactly what a fresh fetch would return.
public struct DeltaDocument: Sendable {
    /// The form the operations are written in.
    public var format: DeltaFormat
    /// The snapshot of the new page.
    public var snapshot: String
    /// The snapshot's cursor and the new page's (nil: no next page); `next_cursor` is sent when
    /// they differ.
    public var nextCursor: (old: String?, new: String?)
    /// The new page's sections, where the payloads come from.
    public var page: [FeedSection]
    /// Sizes items for the screen width the feed was asked with.
    public var layout: Layout?
    /// What changed from the snapshot's structure (section ids, item ids and versions) to the
    /// new page's: the operations of every form are made from it.
    public var changes: DeltaChanges
    /// New indexes of the sections kept whole (not reloaded) whose items changed: their new
    /// versions travel in `section_versions` (JSON Patch replaces their `version`), since the
    /// item operations alone do not touch them.
    public var keptSectionsWithChangedItems: [Int]
    /// The items replaced in place that travel as patches, by their path in the new page. Every
    /// other replaced item is sent whole.
    public var itemPatches: [ItemPath: ItemPatch]
    /// Inserted items the snapshot already holds, unchanged, elsewhere: by their path in the new
    /// page, the path they have in the snapshot. Batch and sequential deltas send that old path
    /// (`{"old_path":[s,i]}`) instead of the item: a new video at the top of the grid slides one
    /// video of every grid section into the next, and those need no bytes of their own. A JSON
    /// Patch `move`s them (``movingHeldItems(_:)``).
    public var movedItems: [ItemPath: ItemPath]
    /// Headers and footers that came, went or changed in sections matched by id and kind, in new
    /// section order. A batch leaves out those of sections it carries whole.
    public var supplementaryChanges: [SupplementaryUpdate]
    /// New indexes of the sections matched by id and kind whose layout changed (an item more or
    /// less, a header or footer come or gone), with a width only. A batch leaves out those it
    /// carries whole.
    public var changedLayouts: [Int]
    /// The next page's hint the snapshot had, and the page's (nil: none); sent when they differ.
    public var prefetch: (old: Prefetch?, new: Prefetch?)

    /// A header or footer that differs between the snapshot and the page.
    public struct SupplementaryUpdate: Sendable {
        /// The section's index in the new page.
        public var section: Int
        /// Which view.
        public var element: SupplementaryElement
        /// Whether the section had no such view before (it is inserted) or has none now (removed).
        public var change: Change
        /// The fields that changed, when the view keeps its id and kind and a patch says it.
        public var patch: ItemPatch?

        /// How the view changed.
        public enum Change: Sendable {
            case inserted, changed, removed
        }

        /// Creates an update.
        public init(section: Int, element: SupplementaryElement, change: Change, patch: ItemPatch? = nil) {
            self.section = section
            self.element = element
            self.change = change
            self.patch = patch
        }
    }

    /// Creates the document's description; ``bytes`` writes it.
    public init(
        format: DeltaFormat, snapshot: String, nextCursor: (old: String?, new: String?), page: [FeedSection], layout: Layout?,
        changes: DeltaChanges, keptSectionsWithChangedItems: [Int], itemPatches: [ItemPath: ItemPatch] = [:],
        movedItems: [ItemPath: ItemPath] = [:], supplementaryChanges: [SupplementaryUpdate] = [], changedLayouts: [Int] = [],
        prefetch: (old: Prefetch?, new: Prefetch?) = (nil, nil)
    ) {
        self.format = format
        self.snapshot = snapshot
        self.nextCursor = nextCursor
        self.page = page
        self.layout = layout
        self.changes = changes
        self.keptSectionsWithChangedItems = keptSectionsWithChangedItems
        self.itemPatches = itemPatches
        self.movedItems = movedItems
        self.supplementaryChanges = supplementaryChanges
        self.changedLayouts = changedLayouts
        self.prefetch = prefetch
    }

    /// Makes `section_versions` (a JSON Patch: its `replace`s of `/sections/N/version`) name every
    /// section the client keeps, not only those whose items changed: for a client whose snapshot
    /// an earlier release made, which hashed section versions another way (session 40), so that
    /// what it holds after applying is the page a fresh fetch returns.
    public mutating func sendVersionOfEveryKeptSection() {
        let batch = changes.batch
        var whole = Set(batch.sectionInserts)
        for oldIndex in batch.sectionReloads { whole.insert(changes.newSection(forOldSection: oldIndex)) }
        keptSectionsWithChangedItems = page.indices.filter { !whole.contains($0) }
    }

    /// The JSON document.
    public var bytes: [UInt8] {
        // Written from one copy by mutating helpers: their closures capture it by address. The
        // closures of non-mutating ones each copied the whole document (a retain and a release
        // per member), several times per delta.
        var document = self
        return document.written()
    }

    private mutating func written() -> [UInt8] {
        var json = JSONWriter(capacity: 4096)
        let sectionVersions = format == .jsonpatch ? [] : keptSectionsWithChangedItems.map { (index: $0, version: page[$0].version) }
        json.openDelta(
            snapshot: snapshot, nextCursor: cursorChange, sectionVersions: sectionVersions, changeCount: changes.changeCount + supplementaryChanges.count)
        switch format {
        case .batch:
            let batch = changes.batch
            // Sections the batch inserts or reloads come whole, views and layout included.
            var whole = Set(batch.sectionInserts)
            for oldIndex in batch.sectionReloads { whole.insert(changes.newSection(forOldSection: oldIndex)) }
            writeHeaderExtras(to: &json, layouts: changedLayouts.filter { !whole.contains($0) })
            writeBatch(batch, to: &json)
            json.member("supplementary", supplementaryChanges.filter { !whole.contains($0.section) }) { json, update in
                json.raw("{\"section\":\(update.section),\"element\":\"\(update.element.rawValue)\",")
                writeView(update, key: "view", to: &json)
                json.literal("}")
            }
        case .sequential:
            writeHeaderExtras(to: &json, layouts: changedLayouts)
            writeSequential(changes.sequential, to: &json)
        case .jsonpatch:
            writePatch(changes.sequential.jsonPatch(), to: &json)
        }
        json.literal("}")
        return json.bytes
    }

    /// The new page's cursor when it differs from the snapshot's (`.some(nil)`: no next page
    /// now), nil when it is the same: what `next_cursor` says, in every form.
    private var cursorChange: String?? {
        nextCursor.old == nextCursor.new ? nil : .some(nextCursor.new)
    }

    /// `"section_layouts":{…}` when any, and `"prefetch"` when it changed.
    private func writeHeaderExtras(to json: inout JSONWriter, layouts: [Int]) {
        if let layout, !layouts.isEmpty {
            json.literal(",\"section_layouts\":{")
            for (position, index) in layouts.enumerated() {
                json.raw(position == 0 ? "\"\(index)\":" : ",\"\(index)\":")
                json.sectionLayout(page[index].sectionLayout(layout))
            }
            json.literal("}")
        }
        if prefetch.old != prefetch.new {
            json.literal(",\"prefetch\":")
            if let new = prefetch.new { json.prefetch(new) } else { json.literal("null") }
        }
    }

    /// The new header or footer as a member: `"key":{view}`, `"key":null` for a removal, or
    /// `"version":…,"patch":…` (inside `"key":{…}` when `nested`).
    private func writeView(_ update: SupplementaryUpdate, key: String, nested: Bool = false, to json: inout JSONWriter) {
        guard update.change != .removed, let view = page[update.section][update.element] else {
            json.raw("\"\(key)\":null")
            return
        }
        if let patch = update.patch {
            if nested { json.raw("\"\(key)\":{") }
            Self.patchMembers(patch, to: &json)
            if nested { json.literal("}") }
        } else {
            json.raw("\"\(key)\":")
            json.raw(bytes: view.json)
        }
    }

    private static func section(_ index: Int, of page: [FeedSection], layout: Layout?, to json: inout JSONWriter) {
        page[index].write(to: &json, layout: layout)
    }

    private static func item(_ path: ItemPath, of page: [FeedSection], layout: Layout?, to json: inout JSONWriter) {
        page[path.section].items[path.item].write(to: &json, layout: layout)
    }

    // MARK: batch

    private mutating func writeBatch(_ batch: SectionedBatchUpdate, to json: inout JSONWriter) {
        json.batchLists(
            "sections", deletes: batch.sectionDeletes, inserts: batch.sectionInserts, moves: batch.sectionMoves,
            reloads: batch.sectionReloads
        ) { $0.int($1) }
        json.batchLists("items", deletes: batch.itemDeletes, inserts: batch.itemInserts, moves: batch.itemMoves, reloads: batch.itemReloads) {
            $0.path($1)
        }
        json.member("inserted_sections", batch.sectionInserts) { json, newIndex in
            json.literal("{\"index\":")
            json.int(newIndex)
            json.literal(",\"section\":")
            Self.section(newIndex, of: page, layout: layout, to: &json)
            json.literal("}")
        }
        json.member("reloaded_sections", batch.sectionReloads) { json, oldIndex in
            let newIndex = changes.newSection(forOldSection: oldIndex)
            json.literal("{\"old_index\":")
            json.int(oldIndex)
            json.literal(",\"index\":")
            json.int(newIndex)
            json.literal(",\"section\":")
            Self.section(newIndex, of: page, layout: layout, to: &json)
            json.literal("}")
        }
        json.member("inserted_items", batch.itemInserts) { json, path in
            json.literal("{\"path\":")
            json.path(path)
            if let oldPath = movedItems[path] {
                json.literal(",\"old_path\":")
                json.path(oldPath)
            } else {
                json.literal(",\"item\":")
                Self.item(path, of: page, layout: layout, to: &json)
            }
            json.literal("}")
        }
        json.member("reloaded_items", batch.itemReloads) { json, path in
            let newPath = changes.newPath(forOldPath: path)
            json.literal("{\"old_path\":")
            json.path(path)
            json.literal(",\"path\":")
            json.path(newPath)
            if let patch = itemPatches[newPath] {
                json.literal(",")
                Self.patchMembers(patch, to: &json)
            } else {
                json.literal(",\"item\":")
                Self.item(newPath, of: page, layout: layout, to: &json)
            }
            json.literal("}")
        }
    }

    /// `"version":"…","patch":{merge patch}`.
    private static func patchMembers(_ patch: ItemPatch, to json: inout JSONWriter) {
        json.literal("\"version\":")
        json.string(patch.version)
        json.literal(",\"patch\":")
        json.raw(bytes: patch.mergePatchJSON)
    }

    // MARK: sequential

    private func writeSequential(_ update: SectionedSequentialUpdate, to json: inout JSONWriter) {
        json.literal(",\"operations\":[")
        // `sequentialStep`'s closure is optional, so escaping: it captures these four, not a copy of self.
        let (page, layout, itemPatches, movedItems) = (page, layout, itemPatches, movedItems)
        var first = true
        for operation in update.operations {
            if !first { json.literal(",") }
            first = false
            switch operation {
            case .section(let step):
                json.sequentialStep(step, target: "sections") { json, index in Self.section(index, of: page, layout: layout, to: &json) }
            case .item(let section, let step):
                json.sequentialStep(step, target: "items", section: section) { json, index in
                    let path = ItemPath(section: section, item: index)
                    if case .change = step, let patch = itemPatches[path] {
                        json.literal("{")
                        Self.patchMembers(patch, to: &json)
                        json.literal("}")
                    } else if case .insert = step, let oldPath = movedItems[path] {
                        json.literal("{\"old_path\":")
                        json.path(oldPath)
                        json.literal("}")
                    } else {
                        Self.item(path, of: page, layout: layout, to: &json)
                    }
                }
            }
        }
        // Headers and footers last, each on the section where it now is.
        for update in supplementaryChanges {
            if !first { json.literal(",") }
            first = false
            let op =
                switch update.change {
                case .inserted: "insert"
                case .changed: "change"
                case .removed: "remove"
                }
            json.raw("{\"op\":\"\(op)\",\"target\":\"\(update.element.rawValue)\",\"section\":\(update.section)")
            if update.change != .removed {
                json.literal(",")
                writeView(update, key: "view", nested: true, to: &json)
            }
            json.literal("}")
        }
        json.literal("]")
    }

    // MARK: JSON Patch

    private mutating func writePatch(_ patch: JSONPatch, to json: inout JSONWriter) {
        json.literal(",\"patch\":[")
        var first = true
        func separator() {
            if !first { json.literal(",") }
            first = false
        }
        for operation in movingHeldItems(patch.operations) {
            if operation.kind == .replace, case .item(let path)? = operation.value, let itemPatch = itemPatches[path] {
                // The fields that changed, then the version they lead to.
                for change in itemPatch.changes {
                    separator()
                    json.literal("{\"op\":\"replace\",\"path\":")
                    json.string(operation.path.appending("data").appending(JSONPointer(tokens: change.path)).description)
                    json.literal(",\"value\":")
                    json.raw(bytes: change.value.serialized())
                    json.literal("}")
                }
                separator()
                json.literal("{\"op\":\"replace\",\"path\":")
                json.string(operation.path.appending("version").description)
                json.literal(",\"value\":")
                json.string(itemPatch.version)
                json.literal("}")
                continue
            }
            separator()
            json.patchOperation(operation) { json, value in
                switch value {
                case .section(let index), .element(let index): Self.section(index, of: page, layout: layout, to: &json)
                case .item(let path): Self.item(path, of: page, layout: layout, to: &json)
                }
            }
        }
        func replace(_ path: String, value: (inout JSONWriter) -> Void) {
            separator()
            json.literal("{\"op\":\"replace\",\"path\":")
            json.string(path)
            json.literal(",\"value\":")
            value(&json)
            json.literal("}")
        }
        for update in supplementaryChanges {
            let location = "/sections/\(update.section)/\(update.element.rawValue)"
            if let patch = update.patch {
                for change in patch.changes {
                    replace(location + "/data" + JSONPointer(tokens: change.path).description) { $0.raw(bytes: change.value.serialized()) }
                }
                replace(location + "/version") { $0.string(patch.version) }
                continue
            }
            separator()
            switch update.change {
            case .removed:
                json.literal("{\"op\":\"remove\",\"path\":")
                json.string(location)
            case .inserted, .changed:
                json.raw("{\"op\":\"\(update.change == .inserted ? "add" : "replace")\",\"path\":")
                json.string(location)
                json.literal(",\"value\":")
                json.raw(bytes: page[update.section][update.element]!.json)
            }
            json.literal("}")
        }
        if let layout {
            for index in changedLayouts {
                replace("/sections/\(index)/layout") { $0.sectionLayout(page[index].sectionLayout(layout)) }
            }
        }
        for index in keptSectionsWithChangedItems {
            replace("/sections/\(index)/version") { $0.string(page[index].versionText) }
        }
        if prefetch.old != prefetch.new {
            separator()
            switch prefetch.new {
            case let new?:
                json.raw("{\"op\":\"\(prefetch.old == nil ? "add" : "replace")\",\"path\":\"/prefetch\",\"value\":")
                json.prefetch(new)
            case nil:
                json.literal("{\"op\":\"remove\",\"path\":\"/prefetch\"")
            }
            json.literal("}")
        }
        replace("/snapshot") { $0.string(snapshot) }
        if case .some(let new) = cursorChange {
            replace("/next_cursor") { $0.optionalString(new) }
        }
        json.literal("]")
    }
}

/// What changed between a snapshot's structure and the new page's, as a ``DeltaDocument``
/// writes it.
public enum DeltaChanges: Sendable {
    /// The sectioned diff of the two structures (section ids and kinds, item ids and versions).
    case diff(SectionedDiff<String, String>)
    /// Only these items changed, each in place (the same id and kind at the same path), and
    /// nothing else: the new page is the snapshot's with those items rendered again. Paths
    /// ascending. The forms are built from the paths, without a diff; they equal the diff's.
    case itemsUpdated([ItemPath])
    /// Every section kept its place and its own content, and in each the items kept their
    /// order: some deleted, inserted or updated (a new video at the top of a grid: each grid
    /// section passes its last video on and takes the one before it). The forms are built from
    /// the edits, without a diff; they equal the diff's.
    case itemsEdited(OrderedItemEdits)

    /// The batch form.
    public var batch: SectionedBatchUpdate {
        switch self {
        case .diff(let diff): diff.batch
        case .itemsUpdated(let paths): SectionedBatchUpdate(reloadingItemsAt: paths)
        case .itemsEdited(let edits): edits.batch
        }
    }

    /// The sequential form (the JSON Patch is made from it).
    public var sequential: SectionedSequentialUpdate {
        switch self {
        case .diff(let diff): diff.sequential
        case .itemsUpdated(let paths): SectionedSequentialUpdate(changingItemsAt: paths)
        case .itemsEdited(let edits): edits.sequential
        }
    }

    /// How many operations the change counts (`change_count`, before headers and footers).
    public var changeCount: Int {
        switch self {
        case .diff(let diff): diff.changeCount
        case .itemsUpdated(let paths): paths.count
        case .itemsEdited(let edits): edits.changeCount
        }
    }

    /// The new index of a section kept from the snapshot.
    func newSection(forOldSection oldIndex: Int) -> Int {
        switch self {
        case .diff(let diff): diff.sections.newIndex(forOldIndex: oldIndex)!
        case .itemsUpdated, .itemsEdited: oldIndex
        }
    }

    /// The new path of an item kept from the snapshot (the batch's reloaded items).
    func newPath(forOldPath path: ItemPath) -> ItemPath {
        switch self {
        case .diff(let diff):
            let sectionDiff = diff.itemsDiff(forOldSection: path.section)!
            return ItemPath(section: sectionDiff.newSection, item: sectionDiff.items.newIndex(forOldIndex: path.item)!)
        case .itemsUpdated: return path
        case .itemsEdited(let edits): return edits.newPath(ofUpdatedItemAt: path)!
        }
    }
}
