public import JSONBytes
public import ListDiff

/// The answer of `GET /v1/users/{id}/feed/delta?since=…&format=…` (or of the `POST` variant) as
/// a client reads it: what changed between the snapshot it holds and the feed now, in one of the
/// three forms ``DeltaDocument`` writes.
///
/// Every form carries a ``Header`` (the new snapshot id, the next cursor when it changed and the
/// new versions of the sections kept in place whose items changed); the changes are ListDiff's, with the sections
/// and items they insert or replace: a UIKit batch (``Batch``), ordered Android-style steps
/// (``Sequential``) or an RFC 6902 patch (``JSONPatch``). An item replaced in place comes whole
/// or, when only fields of its data changed, as an ``ItemPatch`` (``ItemChange``). Apply any of
/// them with ``FeedDocument/applying(_:)``.
///
/// The body does not repeat what the request said: read it with the form asked for and the
/// snapshot it was asked from, which ``FeedDocument/applying(_:)`` checks against the document.
///
///     let delta = try FeedDelta(parsing: responseBody, format: .batch, since: document.snapshot)
///     document = try document.applying(delta)
public enum FeedDelta: Hashable, Sendable {
    /// One `performBatchUpdates` worth of changes.
    case batch(Batch)
    /// Steps applied one after the other.
    case sequential(Sequential)
    /// A JSON Patch on the feed document.
    case jsonPatch(JSONPatch)

    /// The wire names of the three forms, the `format` query parameter.
    public typealias Format = DeltaFormat
    /// An item's position, `[section, item]` on the wire.
    public typealias ItemPath = ListDiff.ItemPath
    /// A move from an old position to a new one, `[from, to]` on the wire.
    public typealias Move<Position: Hashable> = ListDiff.Move<Position>

    /// The members every form carries.
    public struct Header: Hashable, Sendable {
        /// The snapshot id the delta starts from: the `since` the client asked with (the body does
        /// not repeat it; the decoder takes it from the caller).
        public var since: String
        /// The snapshot id of the feed after the delta.
        public var snapshot: String
        /// Whether the next page's cursor changed (`next_cursor` is present).
        public var changesNextCursor: Bool
        /// The next page's cursor after the delta when it changed (nil: the page is now the
        /// last one, or the cursor did not change).
        public var nextCursor: String?
        /// The new versions of the sections kept in place whose items changed, by their index in
        /// the new page (`section_versions`, absent when none). Inserted and reloaded sections
        /// carry their own version; a JSON Patch replaces versions in the document instead.
        public var sectionVersions: [Int: String]
        /// How many changes the delta holds (inserts, deletes, moves and updates of sections and
        /// items, and headers and footers that came, went or changed), as the server counted them.
        public var changeCount: Int
        /// The new layouts of the sections kept in place whose layout changed (an item more or
        /// less, a header or footer come or gone), by their index in the new page
        /// (`section_layouts`, absent when none). Sections a delta carries whole bring their own;
        /// a JSON Patch replaces layouts in the document instead.
        public var sectionLayouts: [Int: SectionLayout]
        /// Whether the page's ``FeedDocument/prefetch`` hint changed (`prefetch` is present).
        public var changesPrefetch: Bool
        /// The new hint when it changed (nil: the page no longer has one).
        public var prefetch: Prefetch?

        /// Creates a header.
        public init(
            since: String, snapshot: String, changesNextCursor: Bool = false, nextCursor: String? = nil, sectionVersions: [Int: String] = [:],
            changeCount: Int, sectionLayouts: [Int: SectionLayout] = [:], changesPrefetch: Bool = false, prefetch: Prefetch? = nil
        ) {
            self.changesNextCursor = changesNextCursor
            self.since = since
            self.snapshot = snapshot
            self.nextCursor = nextCursor
            self.sectionVersions = sectionVersions
            self.changeCount = changeCount
            self.sectionLayouts = sectionLayouts
            self.changesPrefetch = changesPrefetch
            self.prefetch = prefetch
        }
    }

    /// The header of whichever form this is.
    public var header: Header {
        switch self {
        case .batch(let batch): batch.header
        case .sequential(let sequential): sequential.header
        case .jsonPatch(let patch): patch.header
        }
    }

    /// Which form this is.
    public var format: Format {
        switch self {
        case .batch: .batch
        case .sequential: .sequential
        case .jsonPatch: .jsonpatch
        }
    }

    /// UIKit batch updates: ListDiff's ``SectionedBatchUpdate``, everything at once as in one
    /// `performBatchUpdates`, with the sections and items it inserts or reloads.
    ///
    /// Deletes and reloads name *old* positions, inserts *new* positions, moves go from old to
    /// new. Item operations only name sections that stay in place (not inserted, deleted,
    /// reloaded or moved: those come whole).
    ///
    ///     collectionView.performBatchUpdates {
    ///         collectionView.deleteSections(IndexSet(batch.update.sectionDeletes))
    ///         collectionView.insertSections(IndexSet(batch.update.sectionInserts))
    ///         // … as ListDiff's SectionedBatchUpdate documents
    ///     }
    public struct Batch: Hashable, Sendable {
        /// The common members.
        public var header: Header
        /// The operations (`sections` and `items` on the wire).
        public var update: SectionedBatchUpdate
        /// The new sections, one per ``SectionedBatchUpdate/sectionInserts`` index.
        public var insertedSections: [SectionPayload]
        /// The replacements of reloaded sections, one per ``SectionedBatchUpdate/sectionReloads``
        /// index (their ``Payload/oldPosition``).
        public var reloadedSections: [SectionPayload]
        /// The new items, one per ``SectionedBatchUpdate/itemInserts`` path, except those in
        /// ``insertedFromSnapshot``.
        public var insertedItems: [ItemPayload]
        /// Inserted items the snapshot holds unchanged at another path (`{"path","old_path"}`
        /// entries of `inserted_items`): from the old path to the new one. With
        /// ``insertedItems``, exactly one per ``SectionedBatchUpdate/itemInserts`` path.
        public var insertedFromSnapshot: [Move<ItemPath>]
        /// The replacements of reloaded items, one per ``SectionedBatchUpdate/itemReloads`` path
        /// (their ``Payload/oldPosition``): the whole item or a patch of the one at the old path.
        public var reloadedItems: [ItemReload]
        /// Headers and footers that came, went or changed in sections the batch does not carry
        /// whole, applied after the batch (`supplementary`), by new section index.
        public var supplementary: [SupplementaryChange]

        /// Creates a batch delta.
        public init(
            header: Header, update: SectionedBatchUpdate = SectionedBatchUpdate(),
            insertedSections: [SectionPayload] = [], reloadedSections: [SectionPayload] = [],
            insertedItems: [ItemPayload] = [], insertedFromSnapshot: [Move<ItemPath>] = [], reloadedItems: [ItemReload] = [],
            supplementary: [SupplementaryChange] = []
        ) {
            self.header = header
            self.update = update
            self.insertedSections = insertedSections
            self.reloadedSections = reloadedSections
            self.insertedItems = insertedItems
            self.insertedFromSnapshot = insertedFromSnapshot
            self.reloadedItems = reloadedItems
            self.supplementary = supplementary
        }
    }

    /// A header or footer that came, went or changed: `{"section":3,"element":"footer","view":{…}|null}`,
    /// or with `version` and `patch` for one whose data changed in a few fields. In a sequential
    /// delta it is a step: `{"op":"insert"|"remove"|"change","target":"header"|"footer","section":3,"view":…}`.
    public struct SupplementaryChange: Hashable, Sendable {
        /// The section, by its index in the new page (in a sequential delta, at that moment).
        public var section: Int
        /// Which view.
        public var element: SupplementaryElement
        /// The new view, whole or as a patch of the one the section has; nil removes it.
        public var view: ItemChange?

        /// Creates a change.
        public init(section: Int, element: SupplementaryElement, view: ItemChange?) {
            self.section = section
            self.element = element
            self.view = view
        }
    }

    /// A section or item a batch inserts or reloads: where it ends up, for a reload where it was,
    /// and its content.
    public struct Payload<Position: Hashable & Sendable, Value: Hashable & Sendable>: Hashable, Sendable {
        /// The old position a reload replaces (`old_index`, `old_path`); nil for an insert.
        public var oldPosition: Position?
        /// The new position (`index`, `path`).
        public var position: Position
        /// The whole section or item.
        public var value: Value

        /// Creates a payload.
        public init(oldPosition: Position? = nil, position: Position, value: Value) {
            self.oldPosition = oldPosition
            self.position = position
            self.value = value
        }
    }

    /// A section a batch inserts or reloads, by section index.
    public typealias SectionPayload = Payload<Int, FeedDocument.Section>
    /// An item a batch inserts, by path.
    public typealias ItemPayload = Payload<ItemPath, FeedDocument.Item>
    /// An item a batch reloads, by path: whole, or a patch of the item at its old path.
    public typealias ItemReload = Payload<ItemPath, ItemChange>

    /// Steps applied strictly in order, each position valid at the moment it is applied
    /// (Android's `ListUpdateCallback`): ListDiff's ``SectionedSequentialUpdate`` with the values
    /// each insert and change carries.
    ///
    /// Section steps come first and leave the sections in their final order; then item steps,
    /// each naming a section by its (new) index.
    public typealias Sequential = Ordered<Operation>

    /// An RFC 6902 JSON Patch on the feed document, for clients that keep the feed as JSON
    /// (web): ListDiff's operations on `/sections/3` and `/sections/3/items/2` (an item the
    /// document holds that now shows in another section is a `move` there), then replaces
    /// of `/sections/3/version`, `/snapshot` and `/next_cursor`. Apply it with
    /// ``FeedDocument/applying(jsonPatch:)``.
    public typealias JSONPatch = Ordered<PatchOperation>

    /// A form whose changes are operations applied in order: ``Sequential`` and ``JSONPatch``.
    public struct Ordered<Step: Hashable & Sendable>: Hashable, Sendable {
        /// The common members.
        public var header: Header
        /// The operations, in the order they must be applied.
        public var operations: [Step]

        /// Creates a delta.
        public init(header: Header, operations: [Step]) {
            self.header = header
            self.operations = operations
        }
    }

    /// One step of a ``Sequential`` delta, with the values an insert or change carries (none for
    /// a remove or move). The step's count travels with the values so a client can check they
    /// agree.
    public enum Operation: Hashable, Sendable {
        /// A step on the list of sections.
        case sections(SequentialOperation, values: [FeedDocument.Section] = [])
        /// A step on the items of section `section` (its index at that moment). An insert's values
        /// are whole items; a change's may be patches of the items it replaces.
        case items(section: Int, SequentialOperation, values: [ItemChange] = [])
        /// A header or footer inserted (the section had none), changed, or removed (`view` nil).
        /// These come after every section and item step.
        case supplementary(SupplementaryChange, inserted: Bool)

        /// The step without its values, for a section or item step (nil for a header or footer).
        public var step: SectionedSequentialOperation? {
            switch self {
            case .sections(let step, _): .section(step)
            case .items(let section, let step, _): .item(section: section, step)
            case .supplementary: nil
            }
        }
    }

}

/// What replaces an item in place: the whole item, or the fields of its data that changed.
public enum ItemChange: Hashable, Sendable {
    /// The whole item.
    case item(FeedDocument.Item)
    /// The item it replaces with these fields changed, at this new version.
    case patch(ItemPatch)
    /// An inserted item the client already holds, unchanged: the one at this path of the
    /// document the delta starts from (`{"old_path":[s,i]}`). Items slid from one grid section
    /// into the next travel this way. Only inserts carry it.
    case moved(from: ItemPath)

    /// The item after the change, from the one it replaces.
    ///
    /// - Throws: ``DeltaApplyError/payloadMismatch(_:)`` when a patched field is not in the old
    ///   item, ``DeltaApplyError/itemVersionMismatch(item:announced:computed:)`` when the patched
    ///   item does not hash to the version the patch announces.
    public func applied(to old: FeedDocument.Item, name: String) throws(DeltaApplyError) -> FeedDocument.Item {
        switch self {
        case .item(let item):
            return item
        case .moved(let path):
            throw .payloadMismatch("\(name) names the item at \(path) of the snapshot, which only an insert may")
        case .patch(let patch):
            guard let data = patch.applied(to: old.data) else {
                throw .payloadMismatch("\(name) patches a field that item \(old.id) does not have as a value")
            }
            var item = old
            item.data = data
            item.version = patch.version
            try item.checkVersion()
            return item
        }
    }
}

extension FeedDocument.Item {
    /// Checks that the item's data hashes to its version (``computedVersion``).
    ///
    /// - Throws: ``DeltaApplyError/itemVersionMismatch(item:announced:computed:)``.
    public func checkVersion() throws(DeltaApplyError) {
        let computed = computedVersion
        guard computed == version else { throw .itemVersionMismatch(item: id, announced: version, computed: computed) }
    }
}

/// One RFC 6902 operation of the feed's JSON Patch: ListDiff's operation with its value as sent.
public struct PatchOperation: Hashable, Sendable {
    /// The `op` member: add, remove, replace or move (the feed's patch uses no other).
    public var op: JSONPatchOperation.Kind
    /// The location the operation applies to.
    public var path: JSONPointer
    /// The source of a `move`.
    public var from: JSONPointer?
    /// The value of `add` and `replace` (`.null` is a value; nil means absent).
    public var value: JSONValue?

    /// Creates an operation.
    public init(op: JSONPatchOperation.Kind, path: JSONPointer, from: JSONPointer? = nil, value: JSONValue? = nil) {
        self.op = op
        self.path = path
        self.from = from
        self.value = value
    }
}

// MARK: - JSON

extension FeedDelta {
    /// Reads a delta from its JSON value: the answer to a request for `format` since the
    /// snapshot `since` (what the body does not repeat).
    ///
    /// - Throws: ``FeedDecodingError`` naming the first member that is missing, of the wrong
    ///   type, or (for `op` and `target`) not a known name.
    public init(json: JSONValue, format: Format, since: String) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: "")
        let header = Header(
            since: since, snapshot: try object.string("snapshot"),
            changesNextCursor: object.has("next_cursor"), nextCursor: try object.optionalString("next_cursor"),
            sectionVersions: try object.optionalObject("section_versions", decodeSectionVersions) ?? [:],
            changeCount: try object.index("change_count"),
            sectionLayouts: try object.optionalObject("section_layouts", decodeSectionLayouts) ?? [:],
            changesPrefetch: object.has("prefetch"), prefetch: try object.optional("prefetch", decodePrefetch))
        switch format {
        case .batch:
            let sections = try decodeBatchLists(object, "sections", decodeIndex)
            let items = try decodeBatchLists(object, "items", decodeItemPath)
            let update = SectionedBatchUpdate(
                sectionDeletes: sections.deletes, sectionInserts: sections.inserts, sectionMoves: sections.moves,
                sectionReloads: sections.reloads, itemDeletes: items.deletes, itemInserts: items.inserts, itemMoves: items.moves,
                itemReloads: items.reloads)
            let section = { (reload: Bool) in decodePayload(reload: reload, decodeIndex, "index", FeedDocument.Section.init(json:path:), "section") }
            let item = decodePayload(reload: false, decodeItemPath, "path", FeedDocument.Item.init(json:path:), "item")
            // `inserted_items`: `{"path","item"}`, or `{"path","old_path"}` for an item the snapshot holds.
            var insertedItems: [ItemPayload] = []
            var insertedFromSnapshot: [Move<ItemPath>] = []
            for entry in try object.optionalArray("inserted_items", { value, path throws(FeedDecodingError) in (value, path) }) {
                let members = try JSONObjectReader(entry.0, path: entry.1)
                if members.has("old_path") {
                    insertedFromSnapshot.append(
                        Move(from: try members.value("old_path", decodeItemPath), to: try members.value("path", decodeItemPath)))
                } else {
                    insertedItems.append(try item(entry.0, entry.1))
                }
            }
            self = .batch(
                Batch(
                    header: header, update: update,
                    insertedSections: try object.optionalArray("inserted_sections", section(false)),
                    reloadedSections: try object.optionalArray("reloaded_sections", section(true)),
                    insertedItems: insertedItems, insertedFromSnapshot: insertedFromSnapshot,
                    reloadedItems: try object.optionalArray("reloaded_items", decodeItemReload),
                    supplementary: try object.optionalArray("supplementary", decodeSupplementaryChange)))
        case .sequential:
            self = .sequential(Sequential(header: header, operations: try object.array("operations", Operation.init(json:path:))))
        case .jsonpatch:
            self = .jsonPatch(JSONPatch(header: header, operations: try object.array("patch", PatchOperation.init(json:path:))))
        }
    }

    /// Parses and reads a delta from UTF-8 JSON bytes (a delta response body).
    ///
    /// - Throws: `JSONParseError` or ``FeedDecodingError``.
    public init(parsing bytes: some Collection<UInt8>, format: Format, since: String) throws {
        try self.init(json: try JSONValue(parsing: bytes), format: format, since: since)
    }

    /// The delta as the server renders it (without the request's form and snapshot).
    public var json: JSONValue {
        let header = header
        var members: [String: JSONValue] = [
            "snapshot": .string(header.snapshot),
            "change_count": header.changeCount.json,
        ]
        if header.changesNextCursor { members["next_cursor"] = header.nextCursor.map(JSONValue.string) ?? .null }
        if !header.sectionVersions.isEmpty {
            members["section_versions"] = .object(
                Dictionary(uniqueKeysWithValues: header.sectionVersions.map { (String($0.key), JSONValue.string($0.value)) }))
        }
        if !header.sectionLayouts.isEmpty {
            members["section_layouts"] = .object(
                Dictionary(uniqueKeysWithValues: header.sectionLayouts.map { (String($0.key), $0.value.json) }))
        }
        if header.changesPrefetch { members["prefetch"] = header.prefetch?.json ?? .null }
        func list(_ name: String, _ values: [JSONValue]) {
            if !values.isEmpty { members[name] = .array(values) }
        }
        switch self {
        case .batch(let batch):
            let update = batch.update
            members["sections"] = batchListsJSON(update.sectionDeletes, update.sectionInserts, update.sectionMoves, update.sectionReloads)
            members["items"] = batchListsJSON(update.itemDeletes, update.itemInserts, update.itemMoves, update.itemReloads)
            list("inserted_sections", batch.insertedSections.map { $0.json("index", "section") })
            list("reloaded_sections", batch.reloadedSections.map { $0.json("index", "section") })
            // In the order of the inserts, whole or by old path, as the server writes them.
            let order = Dictionary(update.itemInserts.enumerated().map { ($1, $0) }) { first, _ in first }
            let inserted =
                batch.insertedItems.map { ($0.position, $0.json("path", "item")) }
                + batch.insertedFromSnapshot.map { ($0.to, JSONValue.object(["path": $0.to.json, "old_path": $0.from.json])) }
            list("inserted_items", inserted.sorted { order[$0.0, default: .max] < order[$1.0, default: .max] }.map(\.1))
            list("reloaded_items", batch.reloadedItems.map(\.json))
            list("supplementary", batch.supplementary.map(\.json))
        case .sequential(let sequential):
            members["operations"] = .array(sequential.operations.map(\.json))
        case .jsonPatch(let patch):
            members["patch"] = .array(patch.operations.map(\.json))
        }
        return .object(members)
    }
}

/// A string that must be one of the names `known` accepts (`names` lists them).
private func decodeName<Name>(_ known: @escaping (String) -> Name?, _ names: String) -> WireDecoder<Name> {
    { value, path throws(FeedDecodingError) in
        let name = try decodeString(value, path: path)
        guard let known = known(name) else { throw FeedDecodingError(path: path, reason: "must be \(names), not \"\(name)\"") }
        return known
    }
}

/// A batch's four lists at one level, member `name` = `{"deletes","inserts","moves","reloads"}`,
/// each absent when empty (and the member when all are).
private func decodeBatchLists<Position>(
    _ delta: JSONObjectReader, _ name: String, _ position: @escaping WireDecoder<Position>
) throws(FeedDecodingError) -> (deletes: [Position], inserts: [Position], moves: [Move<Position>], reloads: [Position]) {
    guard let object = try delta.optionalObject(name, { value, path throws(FeedDecodingError) in try JSONObjectReader(value, path: path) })
    else { return ([], [], [], []) }
    return (
        try object.optionalArray("deletes", position), try object.optionalArray("inserts", position),
        try object.optionalArray("moves", decodeMove(position)), try object.optionalArray("reloads", position)
    )
}

/// The four lists as the server writes them: only those with something in them; nil when none has.
private func batchListsJSON<Position: Hashable & WireJSON>(
    _ deletes: [Position], _ inserts: [Position], _ moves: [Move<Position>], _ reloads: [Position]
) -> JSONValue? {
    var members: [String: JSONValue] = [:]
    if !deletes.isEmpty { members["deletes"] = .array(deletes.map(\.json)) }
    if !inserts.isEmpty { members["inserts"] = .array(inserts.map(\.json)) }
    if !moves.isEmpty { members["moves"] = .array(moves.map { .array([$0.from.json, $0.to.json]) }) }
    if !reloads.isEmpty { members["reloads"] = .array(reloads.map(\.json)) }
    return members.isEmpty ? nil : .object(members)
}

/// `section_versions`: `{"<new section index>":"<version>"}`.
private func decodeSectionVersions(_ value: JSONValue, path: String) throws(FeedDecodingError) -> [Int: String] {
    let object = try JSONObjectReader(value, path: path)
    var versions: [Int: String] = [:]
    for key in object.keys {
        guard let index = JSONPointer.arrayIndex(key) else {
            throw FeedDecodingError(path: object.memberPath(key), reason: "must be named by a section index")
        }
        versions[index] = try object.string(key)
    }
    return versions
}

/// `section_layouts`: `{"<new section index>":{layout}}`.
private func decodeSectionLayouts(_ value: JSONValue, path: String) throws(FeedDecodingError) -> [Int: SectionLayout] {
    let object = try JSONObjectReader(value, path: path)
    var layouts: [Int: SectionLayout] = [:]
    for key in object.keys {
        guard let index = JSONPointer.arrayIndex(key) else {
            throw FeedDecodingError(path: object.memberPath(key), reason: "must be named by a section index")
        }
        layouts[index] = try object.value(key, decodeSectionLayout)
    }
    return layouts
}

/// A batch's `supplementary` entry: `{"section","element","view"}` (view null: removed) or
/// `{"section","element","version","patch"}`.
private func decodeSupplementaryChange(_ json: JSONValue, path: String) throws(FeedDecodingError) -> FeedDelta.SupplementaryChange {
    let object = try JSONObjectReader(json, path: path)
    return FeedDelta.SupplementaryChange(
        section: try object.index("section"), element: try object.value("element", decodeName(SupplementaryElement.init(rawValue:), "header or footer")),
        view: try decodeView(object))
}

/// The view a supplementary change carries: `view` (an item, `{"version","patch"}`, or null),
/// or `version` and `patch` beside it (a batch entry).
private func decodeView(_ object: JSONObjectReader) throws(FeedDecodingError) -> ItemChange? {
    if object.has("patch") { return .patch(try ItemPatch(object)) }
    return try object.optional("view", ItemChange.init(json:path:))
}

extension FeedDelta.SupplementaryChange {
    /// The batch entry.
    fileprivate var json: JSONValue {
        var members: [String: JSONValue] = ["section": section.json, "element": .string(element.rawValue)]
        switch view {
        case nil: members["view"] = .null
        case .item(let item)?: members["view"] = item.json
        case .patch(let patch)?: members.merge(patch.members) { $1 }
        case .moved?: preconditionFailure("a header or footer is never carried by reference")
        }
        return .object(members)
    }
}

/// `{"old_path","path","item"}` or `{"old_path","path","version","patch"}`.
private func decodeItemReload(_ json: JSONValue, path: String) throws(FeedDecodingError) -> FeedDelta.ItemReload {
    let object = try JSONObjectReader(json, path: path)
    return FeedDelta.ItemReload(
        oldPosition: try object.value("old_path", decodeItemPath), position: try object.value("path", decodeItemPath),
        value: try ItemChange(object))
}

extension ItemChange {
    /// Whether this is a patch rather than a whole item.
    public var isPatch: Bool {
        if case .patch = self { return true }
        return false
    }

    /// Reads `{"item":{…}}`-style members: `item`, or `version` and `patch` (when `patch` is there).
    fileprivate init(_ object: JSONObjectReader) throws(FeedDecodingError) {
        guard object.has("patch") else {
            self = .item(try object.value("item", FeedDocument.Item.init(json:path:)))
            return
        }
        self = .patch(try ItemPatch(object))
    }

    /// A sequential change's value: an item, or `{"version","patch"}`.
    fileprivate init(json: JSONValue, path: String) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        self = object.has("patch") ? .patch(try ItemPatch(object)) : .item(try FeedDocument.Item(json: json, path: path))
    }

    /// A sequential insert's value: an item, or `{"old_path":[s,i]}`.
    fileprivate init(inserted json: JSONValue, path: String) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        self = object.has("old_path") ? .moved(from: try object.value("old_path", decodeItemPath)) : .item(try FeedDocument.Item(json: json, path: path))
    }

    /// The value as a sequential step carries it.
    var json: JSONValue {
        switch self {
        case .item(let item): item.json
        case .patch(let patch): .object(patch.members)
        case .moved(let path): .object(["old_path": path.json])
        }
    }
}

extension ItemPatch {
    /// Reads `version` and `patch` (a merge patch of fields: no nulls, no empty objects).
    fileprivate init(_ object: JSONObjectReader) throws(FeedDecodingError) {
        let version = try object.string("version")
        let mergePatch = try object.required("patch")
        guard let patch = ItemPatch(version: version, mergePatch: mergePatch) else {
            throw FeedDecodingError(path: object.memberPath("patch"), reason: "must be an object of changed fields, without null or empty objects")
        }
        self = patch
    }

    /// `version` and `patch`.
    fileprivate var members: [String: JSONValue] { ["version": .string(version), "patch": mergePatch] }
}

extension FeedDelta.ItemReload {
    /// `{"old_path","path"}` with `item`, or `version` and `patch`.
    fileprivate var json: JSONValue {
        var members: [String: JSONValue] = ["path": position.json]
        if let oldPosition { members["old_path"] = oldPosition.json }
        switch value {
        case .item(let item): members["item"] = item.json
        case .patch(let patch): members.merge(patch.members) { $1 }
        case .moved(let path): members["old_path"] = path.json
        }
        return .object(members)
    }
}

/// A position as JSON: an index, or `[section, item]`.
protocol WireJSON {
    var json: JSONValue { get }
}

extension Int: WireJSON {}
extension ItemPath: WireJSON {}
extension FeedDocument.Section: WireJSON {}
extension FeedDocument.Item: WireJSON {}

/// `{"index"|"path":…,"section"|"item":…}`, with `"old_index"|"old_path"` for a reload.
private func decodePayload<Position, Value>(
    reload: Bool, _ position: @escaping WireDecoder<Position>, _ positionKey: String, _ value: @escaping WireDecoder<Value>, _ valueKey: String
) -> WireDecoder<FeedDelta.Payload<Position, Value>> {
    { json, path throws(FeedDecodingError) in
        let object = try JSONObjectReader(json, path: path)
        return FeedDelta.Payload(
            oldPosition: reload ? try object.value("old_" + positionKey, position) : nil, position: try object.value(positionKey, position),
            value: try object.value(valueKey, value))
    }
}

extension FeedDelta.Payload where Position: WireJSON, Value: WireJSON {
    fileprivate func json(_ positionKey: String, _ valueKey: String) -> JSONValue {
        var members = [positionKey: position.json, valueKey: value.json]
        if let oldPosition { members["old_" + positionKey] = oldPosition.json }
        return .object(members)
    }
}

extension FeedDelta.Operation {
    /// Reads one step: `{"op":"remove"|"insert"|"move"|"change","target":"sections"|"items",
    /// "section"?:s, "index","count" | "from","to", "sections"|"items":[…]}`.
    ///
    /// - Throws: ``FeedDecodingError``.
    public init(json: JSONValue, path: String) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        let op = try object.string("op")
        let target = try object.value("target", decodeName(Target.init(rawValue:), "sections, items, header or footer"))
        let itemSection: Int?
        switch target {
        case .view(let element):
            let section = try object.index("section")
            switch op {
            case "remove": self = .supplementary(FeedDelta.SupplementaryChange(section: section, element: element, view: nil), inserted: false)
            case "insert", "change":
                let view = try object.value("view", ItemChange.init(json:path:))
                guard op == "change" || !view.isPatch else {
                    throw FeedDecodingError(path: object.memberPath("view"), reason: "an insert carries the whole view")
                }
                self = .supplementary(FeedDelta.SupplementaryChange(section: section, element: element, view: view), inserted: op == "insert")
            default: throw FeedDecodingError(path: object.memberPath("op"), reason: "must be insert, remove or change, not \"\(op)\"")
            }
            return
        case .sections: itemSection = nil
        case .items: itemSection = try object.index("section")
        }
        let step: SequentialOperation
        switch op {
        case "remove": step = .remove(at: try object.index("index"), count: try object.index("count"))
        case "insert": step = .insert(at: try object.index("index"), count: try object.index("count"))
        case "move": step = .move(from: try object.index("from"), to: try object.index("to"))
        case "change": step = .change(at: try object.index("index"), count: try object.index("count"))
        default: throw FeedDecodingError(path: object.memberPath("op"), reason: "must be remove, insert, move or change, not \"\(op)\"")
        }
        let carriesValues = op == "insert" || op == "change"
        if let itemSection {
            let value = op == "insert" ? ItemChange.init(inserted:path:) : ItemChange.init(json:path:)
            self = .items(section: itemSection, step, values: carriesValues ? try object.array("items", value) : [])
        } else {
            self = .sections(step, values: carriesValues ? try object.array("sections", FeedDocument.Section.init(json:path:)) : [])
        }
    }

    /// What a step applies to: the sections, one section's items, or its header or footer.
    private enum Target {
        case sections, items
        case view(SupplementaryElement)

        init?(rawValue: String) {
            switch rawValue {
            case "sections": self = .sections
            case "items": self = .items
            default:
                guard let element = SupplementaryElement(rawValue: rawValue) else { return nil }
                self = .view(element)
            }
        }
    }

    /// The step as the server renders it.
    public var json: JSONValue {
        let target: String
        let section: Int?
        let step: SequentialOperation
        let values: [JSONValue]
        switch self {
        case .sections(let sectionStep, let sections): (target, section, step, values) = ("sections", nil, sectionStep, sections.map(\.json))
        case .items(let index, let itemStep, let items): (target, section, step, values) = ("items", index, itemStep, items.map(\.json))
        case .supplementary(let change, let inserted):
            var members: [String: JSONValue] = [
                "op": .string(change.view == nil ? "remove" : inserted ? "insert" : "change"), "target": .string(change.element.rawValue),
                "section": change.section.json,
            ]
            if let view = change.view { members["view"] = view.json }
            return .object(members)
        }
        var members: [String: JSONValue] = ["target": .string(target)]
        if let section { members["section"] = section.json }
        switch step {
        case .remove(let at, let count): members.merge(["op": "remove", "index": at.json, "count": count.json]) { $1 }
        case .insert(let at, let count): members.merge(["op": "insert", "index": at.json, "count": count.json, target: .array(values)]) { $1 }
        case .move(let from, let to): members.merge(["op": "move", "from": from.json, "to": to.json]) { $1 }
        case .change(let at, let count): members.merge(["op": "change", "index": at.json, "count": count.json, target: .array(values)]) { $1 }
        }
        return .object(members)
    }
}

extension PatchOperation {
    /// Reads one operation. `value` is required for add and replace (and may be `null`); `from`
    /// for move.
    ///
    /// - Throws: ``FeedDecodingError``.
    public init(json: JSONValue, path: String) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        op = try object.value("op", decodeName(JSONPatchOperation.Kind.init(rawValue:), "add, remove, replace or move"))
        self.path = try object.value("path", decodePointer)
        from = op == .move ? try object.value("from", decodePointer) : nil
        value = op == .add || op == .replace ? try object.required("value") : nil
    }

    /// The operation as JSON.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["op": .string(op.rawValue), "path": .string(path.description)]
        if let from { members["from"] = .string(from.description) }
        if let value { members["value"] = value }
        return .object(members)
    }
}
