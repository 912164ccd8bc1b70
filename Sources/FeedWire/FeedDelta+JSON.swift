public import JSONBytes
public import ListDiff

// FeedDelta and its parts as JSON: reading a delta from the body the server sent
// (``FeedDelta/init(parsing:format:since:)``) and writing one back.

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
            sectionVersions: try object.optionalObject("section_versions", bySectionIndex(decodeString)) ?? [:],
            changeCount: try object.index("change_count"),
            sectionLayouts: try object.optionalObject("section_layouts", bySectionIndex(decodeSectionLayout)) ?? [:],
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

/// `section_versions` (`{"<new section index>":"<version>"}`) and `section_layouts`
/// (`{"<new section index>":{layout}}`): an object whose members are named by section indexes,
/// each value read by `decode`.
private func bySectionIndex<Value>(_ decode: @escaping WireDecoder<Value>) -> WireDecoder<[Int: Value]> {
    { (value, path) throws(FeedDecodingError) in
        let object = try JSONObjectReader(value, path: path)
        var values: [Int: Value] = [:]
        for key in object.keys {
            guard let index = JSONPointer.arrayIndex(key) else {
                throw FeedDecodingError(path: object.memberPath(key), reason: "must be named by a section index")
            }
            values[index] = try object.value(key, decode)
        }
        return values
    }
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
