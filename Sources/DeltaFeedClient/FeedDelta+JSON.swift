// Reading and writing deltas as the server sends them. Decoding is strict about types and
// structure (a path is two integers, an operation has the members its `op` needs) but leaves the
// meaning to the apply functions: a delta whose positions do not add up decodes fine and is then
// rejected by `FeedDocument.applying(_:)` with a precise ``DeltaApplyError``.

extension FeedDelta {
    /// Reads a delta of any form from its JSON value, choosing the form by its `format` member.
    ///
    /// - Throws: ``FeedDecodingError`` naming the first member that is missing, of the wrong
    ///   type, or (for `format` and `op`) not a known name.
    public init(json: JSONValue) throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: "")
        let formatName = try object.string("format")
        guard let format = Format(rawValue: formatName) else {
            throw FeedDecodingError(path: "format", reason: "must be batch, sequential or jsonpatch, not \"\(formatName)\"")
        }
        let header = try Header(object)
        switch format {
        case .batch: self = .batch(try Batch(object, header: header))
        case .sequential: self = .sequential(try Sequential(object, header: header))
        case .jsonpatch: self = .jsonPatch(try JSONPatch(object, header: header))
        }
    }

    /// Parses and reads a delta from UTF-8 JSON bytes (a delta response body).
    ///
    /// - Throws: ``JSONParseError`` or ``FeedDecodingError``.
    public init(parsing bytes: some Collection<UInt8>) throws {
        try self.init(json: try JSONValue(parsing: bytes))
    }

    /// The delta as the server renders it.
    public var json: JSONValue {
        var members = header.members
        members["format"] = .string(format.rawValue)
        switch self {
        case .batch(let batch): batch.addMembers(to: &members)
        case .sequential(let sequential):
            members["operations"] = .array(sequential.operations.map(\.json))
        case .jsonPatch(let patch):
            members["patch"] = .array(patch.operations.map(\.json))
        }
        return .object(members)
    }
}

extension FeedDelta: Codable {
    /// Decodes a delta through its ``JSONValue`` form.
    public init(from decoder: any Decoder) throws {
        try self.init(json: try JSONValue(from: decoder))
    }

    /// Encodes the delta's ``json`` form.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

// MARK: - Header

extension FeedDelta.Header {
    init(_ object: JSONObjectReader) throws(FeedDecodingError) {
        since = try object.string("since")
        snapshot = try object.string("snapshot")
        nextCursor = try object.optionalString("next_cursor")
        var versions: [String] = []
        for (index, value) in try object.array("section_versions").enumerated() {
            guard case .string(let version) = value else {
                throw FeedDecodingError(path: "section_versions[\(index)]", reason: "must be a string")
            }
            versions.append(version)
        }
        sectionVersions = versions
        changeCount = try object.index("change_count")
    }

    var members: [String: JSONValue] {
        [
            "since": .string(since),
            "snapshot": .string(snapshot),
            "next_cursor": nextCursor.map(JSONValue.string) ?? .null,
            "section_versions": .array(sectionVersions.map(JSONValue.string)),
            "change_count": .int(Int64(changeCount)),
        ]
    }
}

// MARK: - Positions

private func decodeIndex(_ value: JSONValue, path: String) throws(FeedDecodingError) -> Int {
    guard case .int(let raw) = value, let index = Int(exactly: raw) else {
        throw FeedDecodingError(path: path, reason: "must be an integer")
    }
    return index
}

private func decodeIndexes(_ values: [JSONValue], path: String) throws(FeedDecodingError) -> [Int] {
    var indexes: [Int] = []
    for (offset, value) in values.enumerated() {
        indexes.append(try decodeIndex(value, path: "\(path)[\(offset)]"))
    }
    return indexes
}

private func decodePair(_ value: JSONValue, path: String) throws(FeedDecodingError) -> (JSONValue, JSONValue) {
    guard case .array(let elements) = value, elements.count == 2 else {
        throw FeedDecodingError(path: path, reason: "must be an array of two elements")
    }
    return (elements[0], elements[1])
}

private func decodePath(_ value: JSONValue, path: String) throws(FeedDecodingError) -> FeedDelta.ItemPath {
    let (section, item) = try decodePair(value, path: path)
    return FeedDelta.ItemPath(section: try decodeIndex(section, path: path + "[0]"), item: try decodeIndex(item, path: path + "[1]"))
}

private func decodePaths(_ values: [JSONValue], path: String) throws(FeedDecodingError) -> [FeedDelta.ItemPath] {
    var paths: [FeedDelta.ItemPath] = []
    for (offset, value) in values.enumerated() {
        paths.append(try decodePath(value, path: "\(path)[\(offset)]"))
    }
    return paths
}

extension FeedDelta.ItemPath {
    /// `[section, item]`.
    public var json: JSONValue { .array([.int(Int64(section)), .int(Int64(item))]) }
}

// MARK: - Batch

extension FeedDelta.Batch {
    init(_ object: JSONObjectReader, header: FeedDelta.Header) throws(FeedDecodingError) {
        self.header = header
        let sectionObject = try JSONObjectReader(try object.required("sections"), path: "sections")
        var sectionMoves: [FeedDelta.Move<Int>] = []
        for (offset, value) in try sectionObject.array("moves").enumerated() {
            let path = "sections.moves[\(offset)]"
            let (from, to) = try decodePair(value, path: path)
            sectionMoves.append(FeedDelta.Move(from: try decodeIndex(from, path: path + "[0]"), to: try decodeIndex(to, path: path + "[1]")))
        }
        sections = FeedDelta.SectionChanges(
            deletes: try decodeIndexes(try sectionObject.array("deletes"), path: "sections.deletes"),
            inserts: try decodeIndexes(try sectionObject.array("inserts"), path: "sections.inserts"),
            moves: sectionMoves,
            reloads: try decodeIndexes(try sectionObject.array("reloads"), path: "sections.reloads"))

        let itemObject = try JSONObjectReader(try object.required("items"), path: "items")
        var itemMoves: [FeedDelta.Move<FeedDelta.ItemPath>] = []
        for (offset, value) in try itemObject.array("moves").enumerated() {
            let path = "items.moves[\(offset)]"
            let (from, to) = try decodePair(value, path: path)
            itemMoves.append(FeedDelta.Move(from: try decodePath(from, path: path + "[0]"), to: try decodePath(to, path: path + "[1]")))
        }
        items = FeedDelta.ItemChanges(
            deletes: try decodePaths(try itemObject.array("deletes"), path: "items.deletes"),
            inserts: try decodePaths(try itemObject.array("inserts"), path: "items.inserts"),
            moves: itemMoves,
            reloads: try decodePaths(try itemObject.array("reloads"), path: "items.reloads"))

        insertedSections = []
        for (offset, value) in try object.array("inserted_sections").enumerated() {
            let entry = try JSONObjectReader(value, path: "inserted_sections[\(offset)]")
            insertedSections.append(
                FeedDelta.InsertedSection(
                    index: try entry.index("index"),
                    section: try FeedDocument.Section(json: try entry.required("section"), path: entry.memberPath("section"))))
        }
        reloadedSections = []
        for (offset, value) in try object.array("reloaded_sections").enumerated() {
            let entry = try JSONObjectReader(value, path: "reloaded_sections[\(offset)]")
            reloadedSections.append(
                FeedDelta.ReloadedSection(
                    oldIndex: try entry.index("old_index"), index: try entry.index("index"),
                    section: try FeedDocument.Section(json: try entry.required("section"), path: entry.memberPath("section"))))
        }
        insertedItems = []
        for (offset, value) in try object.array("inserted_items").enumerated() {
            let entry = try JSONObjectReader(value, path: "inserted_items[\(offset)]")
            insertedItems.append(
                FeedDelta.InsertedItem(
                    path: try decodePath(try entry.required("path"), path: entry.memberPath("path")),
                    item: try FeedDocument.Item(json: try entry.required("item"), path: entry.memberPath("item"))))
        }
        reloadedItems = []
        for (offset, value) in try object.array("reloaded_items").enumerated() {
            let entry = try JSONObjectReader(value, path: "reloaded_items[\(offset)]")
            reloadedItems.append(
                FeedDelta.ReloadedItem(
                    oldPath: try decodePath(try entry.required("old_path"), path: entry.memberPath("old_path")),
                    path: try decodePath(try entry.required("path"), path: entry.memberPath("path")),
                    item: try FeedDocument.Item(json: try entry.required("item"), path: entry.memberPath("item"))))
        }
    }

    func addMembers(to members: inout [String: JSONValue]) {
        func ints(_ values: [Int]) -> JSONValue { .array(values.map { .int(Int64($0)) }) }
        members["sections"] = .object([
            "deletes": ints(sections.deletes),
            "inserts": ints(sections.inserts),
            "moves": .array(sections.moves.map { .array([.int(Int64($0.from)), .int(Int64($0.to))]) }),
            "reloads": ints(sections.reloads),
        ])
        members["items"] = .object([
            "deletes": .array(items.deletes.map(\.json)),
            "inserts": .array(items.inserts.map(\.json)),
            "moves": .array(items.moves.map { .array([$0.from.json, $0.to.json]) }),
            "reloads": .array(items.reloads.map(\.json)),
        ])
        members["inserted_sections"] = .array(
            insertedSections.map {
                .object(["index": .int(Int64($0.index)), "section": $0.section.json])
            })
        members["reloaded_sections"] = .array(
            reloadedSections.map {
                .object(["old_index": .int(Int64($0.oldIndex)), "index": .int(Int64($0.index)), "section": $0.section.json])
            })
        members["inserted_items"] = .array(insertedItems.map { .object(["path": $0.path.json, "item": $0.item.json]) })
        members["reloaded_items"] = .array(
            reloadedItems.map {
                .object(["old_path": $0.oldPath.json, "path": $0.path.json, "item": $0.item.json])
            })
    }
}

// MARK: - Sequential

extension FeedDelta.Sequential {
    init(_ object: JSONObjectReader, header: FeedDelta.Header) throws(FeedDecodingError) {
        self.header = header
        var operations: [FeedDelta.Operation] = []
        for (offset, value) in try object.array("operations").enumerated() {
            operations.append(try FeedDelta.Operation(json: value, path: "operations[\(offset)]"))
        }
        self.operations = operations
    }
}

extension FeedDelta.Operation {
    /// Reads one step: `{"op":"remove"|"insert"|"move"|"change","target":"sections"|"items",
    /// "section"?:s, "index","count" | "from","to", "sections"|"items":[…]}`.
    ///
    /// - Throws: ``FeedDecodingError``.
    public init(json: JSONValue, path: String = "") throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        let op = try object.string("op")
        let target = try object.string("target")
        switch target {
        case "sections":
            func sections() throws(FeedDecodingError) -> [FeedDocument.Section] {
                var sections: [FeedDocument.Section] = []
                for (offset, value) in try object.array("sections").enumerated() {
                    sections.append(try FeedDocument.Section(json: value, path: object.memberPath("sections") + "[\(offset)]"))
                }
                return sections
            }
            switch op {
            case "remove": self = .removeSections(index: try object.index("index"), count: try object.index("count"))
            case "insert": self = .insertSections(index: try object.index("index"), count: try object.index("count"), sections: try sections())
            case "move": self = .moveSection(from: try object.index("from"), to: try object.index("to"))
            case "change": self = .changeSections(index: try object.index("index"), count: try object.index("count"), sections: try sections())
            default: throw FeedDecodingError(path: object.memberPath("op"), reason: "must be remove, insert, move or change, not \"\(op)\"")
            }
        case "items":
            let section = try object.index("section")
            func items() throws(FeedDecodingError) -> [FeedDocument.Item] {
                var items: [FeedDocument.Item] = []
                for (offset, value) in try object.array("items").enumerated() {
                    items.append(try FeedDocument.Item(json: value, path: object.memberPath("items") + "[\(offset)]"))
                }
                return items
            }
            switch op {
            case "remove": self = .removeItems(section: section, index: try object.index("index"), count: try object.index("count"))
            case "insert": self = .insertItems(section: section, index: try object.index("index"), count: try object.index("count"), items: try items())
            case "move": self = .moveItem(section: section, from: try object.index("from"), to: try object.index("to"))
            case "change": self = .changeItems(section: section, index: try object.index("index"), count: try object.index("count"), items: try items())
            default: throw FeedDecodingError(path: object.memberPath("op"), reason: "must be remove, insert, move or change, not \"\(op)\"")
            }
        default:
            throw FeedDecodingError(path: object.memberPath("target"), reason: "must be sections or items, not \"\(target)\"")
        }
    }

    /// The step as the server renders it.
    public var json: JSONValue {
        func int(_ value: Int) -> JSONValue { .int(Int64(value)) }
        switch self {
        case .removeSections(let index, let count):
            return .object(["op": "remove", "target": "sections", "index": int(index), "count": int(count)])
        case .insertSections(let index, let count, let sections):
            return .object(["op": "insert", "target": "sections", "index": int(index), "count": int(count), "sections": .array(sections.map(\.json))])
        case .moveSection(let from, let to):
            return .object(["op": "move", "target": "sections", "from": int(from), "to": int(to)])
        case .changeSections(let index, let count, let sections):
            return .object(["op": "change", "target": "sections", "index": int(index), "count": int(count), "sections": .array(sections.map(\.json))])
        case .removeItems(let section, let index, let count):
            return .object(["op": "remove", "target": "items", "section": int(section), "index": int(index), "count": int(count)])
        case .insertItems(let section, let index, let count, let items):
            return .object([
                "op": "insert", "target": "items", "section": int(section), "index": int(index), "count": int(count), "items": .array(items.map(\.json)),
            ])
        case .moveItem(let section, let from, let to):
            return .object(["op": "move", "target": "items", "section": int(section), "from": int(from), "to": int(to)])
        case .changeItems(let section, let index, let count, let items):
            return .object([
                "op": "change", "target": "items", "section": int(section), "index": int(index), "count": int(count), "items": .array(items.map(\.json)),
            ])
        }
    }
}

// MARK: - JSON Patch

extension FeedDelta.JSONPatch {
    init(_ object: JSONObjectReader, header: FeedDelta.Header) throws(FeedDecodingError) {
        self.header = header
        var operations: [PatchOperation] = []
        for (offset, value) in try object.array("patch").enumerated() {
            operations.append(try PatchOperation(json: value, path: "patch[\(offset)]"))
        }
        self.operations = operations
    }
}

extension PatchOperation {
    /// Reads one RFC 6902 operation. `value` is required for add, replace and test (and may be
    /// `null`); `from` for move and copy.
    ///
    /// - Throws: ``FeedDecodingError``.
    public init(json: JSONValue, path: String = "") throws(FeedDecodingError) {
        let object = try JSONObjectReader(json, path: path)
        let name = try object.string("op")
        guard let op = Kind(rawValue: name) else {
            throw FeedDecodingError(path: object.memberPath("op"), reason: "must be add, remove, replace, move, copy or test, not \"\(name)\"")
        }
        self.op = op
        self.path = try object.string("path")
        switch op {
        case .add, .replace, .test:
            value = try object.required("value")
            from = nil
        case .move, .copy:
            from = try object.string("from")
            value = nil
        case .remove:
            value = nil
            from = nil
        }
    }

    /// The operation as JSON.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["op": .string(op.rawValue), "path": .string(path)]
        if let from { members["from"] = .string(from) }
        if let value { members["value"] = value }
        return .object(members)
    }
}
