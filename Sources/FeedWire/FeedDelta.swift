public import JSONBytes
public import ListDiff

/// The answer of `GET /v1/users/{id}/feed/delta?since=…&format=…` (or of the `POST` variant) as
/// a client reads it: what changed between the snapshot it holds and the feed now, in one of the
/// three forms ``DeltaDocument`` writes.
///
/// Every form carries a ``Header`` (the new snapshot id, the next cursor and the version of every
/// section of the new page); the changes are ListDiff's, with the sections and items they insert
/// or replace: a UIKit batch (``Batch``), ordered Android-style steps (``Sequential``) or an RFC
/// 6902 patch (``JSONPatch``). Apply any of them with ``FeedDocument/applying(_:)``.
///
///     let delta = try FeedDelta(parsing: responseBody)
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
        /// The snapshot id the delta starts from (the one the client holds).
        public var since: String
        /// The snapshot id of the feed after the delta.
        public var snapshot: String
        /// The next page's cursor after the delta (null on the last page).
        public var nextCursor: String?
        /// The version of every section of the new page, in order.
        public var sectionVersions: [String]
        /// How many changes the delta holds (inserts, deletes, moves and updates of sections and
        /// items), as the server counted them.
        public var changeCount: Int

        /// Creates a header.
        public init(since: String, snapshot: String, nextCursor: String?, sectionVersions: [String], changeCount: Int) {
            self.since = since
            self.snapshot = snapshot
            self.nextCursor = nextCursor
            self.sectionVersions = sectionVersions
            self.changeCount = changeCount
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
        /// The new items, one per ``SectionedBatchUpdate/itemInserts`` path.
        public var insertedItems: [ItemPayload]
        /// The replacements of reloaded items, one per ``SectionedBatchUpdate/itemReloads`` path
        /// (their ``Payload/oldPosition``).
        public var reloadedItems: [ItemPayload]

        /// Creates a batch delta.
        public init(
            header: Header, update: SectionedBatchUpdate = SectionedBatchUpdate(),
            insertedSections: [SectionPayload] = [], reloadedSections: [SectionPayload] = [],
            insertedItems: [ItemPayload] = [], reloadedItems: [ItemPayload] = []
        ) {
            self.header = header
            self.update = update
            self.insertedSections = insertedSections
            self.reloadedSections = reloadedSections
            self.insertedItems = insertedItems
            self.reloadedItems = reloadedItems
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
    /// An item a batch inserts or reloads, by path.
    public typealias ItemPayload = Payload<ItemPath, FeedDocument.Item>

    /// Steps applied strictly in order, each position valid at the moment it is applied
    /// (Android's `ListUpdateCallback`): ListDiff's ``SectionedSequentialUpdate`` with the values
    /// each insert and change carries.
    ///
    /// Section steps come first and leave the sections in their final order; then item steps,
    /// each naming a section by its (new) index.
    public typealias Sequential = Ordered<Operation>

    /// An RFC 6902 JSON Patch on the feed document, for clients that keep the feed as JSON
    /// (web): ListDiff's operations on `/sections/3` and `/sections/3/items/2`, then replaces
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
        /// A step on the items of section `section` (its index at that moment).
        case items(section: Int, SequentialOperation, values: [FeedDocument.Item] = [])

        /// The step without its values.
        public var step: SectionedSequentialOperation {
            switch self {
            case .sections(let step, _): .section(step)
            case .items(let section, let step, _): .item(section: section, step)
            }
        }
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

extension FeedDelta: JSONConvertible {
    /// Reads a delta of any form from its JSON value, choosing the form by its `format` member.
    ///
    /// - Throws: ``FeedDecodingError`` naming the first member that is missing, of the wrong
    ///   type, or (for `format`, `op` and `target`) not a known name.
    public init(json: JSONValue) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: "")
        let format = try object.value("format", decodeName(Format.init(rawValue:), "batch, sequential or jsonpatch"))
        let header = Header(
            since: try object.string("since"), snapshot: try object.string("snapshot"),
            nextCursor: try object.optionalString("next_cursor"),
            sectionVersions: try object.array("section_versions", decodeString), changeCount: try object.index("change_count"))
        switch format {
        case .batch:
            let sections = try decodeBatchLists(try object.object("sections"), decodeIndex)
            let items = try decodeBatchLists(try object.object("items"), decodeItemPath)
            let update = SectionedBatchUpdate(
                sectionDeletes: sections.deletes, sectionInserts: sections.inserts, sectionMoves: sections.moves,
                sectionReloads: sections.reloads, itemDeletes: items.deletes, itemInserts: items.inserts, itemMoves: items.moves,
                itemReloads: items.reloads)
            let section = { (reload: Bool) in decodePayload(reload: reload, decodeIndex, "index", FeedDocument.Section.init(json:path:), "section") }
            let item = { (reload: Bool) in decodePayload(reload: reload, decodeItemPath, "path", FeedDocument.Item.init(json:path:), "item") }
            self = .batch(
                Batch(
                    header: header, update: update,
                    insertedSections: try object.array("inserted_sections", section(false)),
                    reloadedSections: try object.array("reloaded_sections", section(true)),
                    insertedItems: try object.array("inserted_items", item(false)),
                    reloadedItems: try object.array("reloaded_items", item(true))))
        case .sequential:
            self = .sequential(Sequential(header: header, operations: try object.array("operations", Operation.init(json:path:))))
        case .jsonpatch:
            self = .jsonPatch(JSONPatch(header: header, operations: try object.array("patch", PatchOperation.init(json:path:))))
        }
    }

    /// Parses and reads a delta from UTF-8 JSON bytes (a delta response body).
    ///
    /// - Throws: `JSONParseError` or ``FeedDecodingError``.
    public init(parsing bytes: some Collection<UInt8>) throws {
        try self.init(json: try JSONValue(parsing: bytes))
    }

    /// The delta as the server renders it.
    public var json: JSONValue {
        let header = header
        var members: [String: JSONValue] = [
            "format": .string(format.rawValue),
            "since": .string(header.since),
            "snapshot": .string(header.snapshot),
            "next_cursor": header.nextCursor.map(JSONValue.string) ?? .null,
            "section_versions": .array(header.sectionVersions.map(JSONValue.string)),
            "change_count": header.changeCount.json,
        ]
        switch self {
        case .batch(let batch):
            let update = batch.update
            members["sections"] = batchListsJSON(update.sectionDeletes, update.sectionInserts, update.sectionMoves, update.sectionReloads)
            members["items"] = batchListsJSON(update.itemDeletes, update.itemInserts, update.itemMoves, update.itemReloads)
            members["inserted_sections"] = .array(batch.insertedSections.map { $0.json("index", "section") })
            members["reloaded_sections"] = .array(batch.reloadedSections.map { $0.json("index", "section") })
            members["inserted_items"] = .array(batch.insertedItems.map { $0.json("path", "item") })
            members["reloaded_items"] = .array(batch.reloadedItems.map { $0.json("path", "item") })
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

/// A batch's four lists at one level, `{"deletes","inserts","moves","reloads"}`.
private func decodeBatchLists<Position>(
    _ object: JSONObjectReader, _ position: @escaping WireDecoder<Position>
) throws(FeedDecodingError) -> (deletes: [Position], inserts: [Position], moves: [Move<Position>], reloads: [Position]) {
    (
        try object.array("deletes", position), try object.array("inserts", position), try object.array("moves", decodeMove(position)),
        try object.array("reloads", position)
    )
}

private func batchListsJSON<Position: Hashable & WireJSON>(
    _ deletes: [Position], _ inserts: [Position], _ moves: [Move<Position>], _ reloads: [Position]
) -> JSONValue {
    .object([
        "deletes": .array(deletes.map(\.json)),
        "inserts": .array(inserts.map(\.json)),
        "moves": .array(moves.map { .array([$0.from.json, $0.to.json]) }),
        "reloads": .array(reloads.map(\.json)),
    ])
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
        let target = try object.value("target", decodeName(Target.init(rawValue:), "sections or items"))
        let step: SequentialOperation
        switch op {
        case "remove": step = .remove(at: try object.index("index"), count: try object.index("count"))
        case "insert": step = .insert(at: try object.index("index"), count: try object.index("count"))
        case "move": step = .move(from: try object.index("from"), to: try object.index("to"))
        case "change": step = .change(at: try object.index("index"), count: try object.index("count"))
        default: throw FeedDecodingError(path: object.memberPath("op"), reason: "must be remove, insert, move or change, not \"\(op)\"")
        }
        let carriesValues = op == "insert" || op == "change"
        switch target {
        case .sections:
            self = .sections(step, values: carriesValues ? try object.array("sections", FeedDocument.Section.init(json:path:)) : [])
        case .items:
            let section = try object.index("section")
            self = .items(section: section, step, values: carriesValues ? try object.array("items", FeedDocument.Item.init(json:path:)) : [])
        }
    }

    private enum Target: String {
        case sections, items
    }

    /// The step as the server renders it.
    public var json: JSONValue {
        let (target, section, step, values): (String, Int?, SequentialOperation, [JSONValue]) =
            switch self {
            case .sections(let step, let sections): ("sections", nil, step, sections.map(\.json))
            case .items(let section, let step, let items): ("items", section, step, items.map(\.json))
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
