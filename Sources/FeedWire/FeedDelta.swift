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
