import JSONBytes
public import ListDiff

/// A delta between a snapshot and the current feed page as the client receives it, in one of
/// the three ``DeltaFormat``s, with the payloads of everything inserted or replaced taken from
/// the new page. The service computes it; ``bytes`` writes it (from the page's shared item
/// bytes, on each call).
///
/// Every form carries `format`, `since`, `snapshot` (the new id), `next_cursor` and
/// `change_count`; batch and sequential deltas carry `section_versions`, the new versions of the
/// sections kept in place whose items changed, by new index (inserted and reloaded sections carry
/// their own; a JSON Patch replaces them in the document). A list with nothing in it is left
/// out. An item that keeps its id and kind and changes only fields of its data travels as an
/// ``ItemPatch`` (its new version and those fields) instead of whole. A client that applies the
/// operations and copies those members holds exactly what a fresh fetch would return.
public struct DeltaDocument: Sendable {
    /// The form the operations are written in.
    public var format: DeltaFormat
    /// The snapshot the client holds.
    public var since: String
    /// The snapshot of the new page.
    public var snapshot: String
    /// The new page's cursor.
    public var nextCursor: String?
    /// The new page's sections, where the payloads come from.
    public var page: [FeedSection]
    /// Sizes items for the screen width the feed was asked with.
    public var layout: Layout?
    /// The sectioned diff from the snapshot's structure (section ids, item ids and versions) to
    /// the new page's.
    public var diff: SectionedDiff<String, String>
    /// New indexes of the sections kept whole (not reloaded) whose items changed: their new
    /// versions travel in `section_versions` (JSON Patch replaces their `version`), since the
    /// item operations alone do not touch them.
    public var keptSectionsWithChangedItems: [Int]
    /// The items replaced in place that travel as patches, by their path in the new page. Every
    /// other replaced item is sent whole.
    public var itemPatches: [ItemPath: ItemPatch]

    /// Creates the document's description; ``bytes`` writes it.
    public init(
        format: DeltaFormat, since: String, snapshot: String, nextCursor: String?, page: [FeedSection], layout: Layout?,
        diff: SectionedDiff<String, String>, keptSectionsWithChangedItems: [Int], itemPatches: [ItemPath: ItemPatch] = [:]
    ) {
        self.format = format
        self.since = since
        self.snapshot = snapshot
        self.nextCursor = nextCursor
        self.page = page
        self.layout = layout
        self.diff = diff
        self.keptSectionsWithChangedItems = keptSectionsWithChangedItems
        self.itemPatches = itemPatches
    }

    /// The JSON document.
    public var bytes: [UInt8] {
        var json = JSONWriter(capacity: 4096)
        let sectionVersions = format == .jsonpatch ? [] : keptSectionsWithChangedItems.map { ($0, page[$0].versionText) }
        json.openDelta(
            format: format.rawValue, since: since, snapshot: snapshot, nextCursor: nextCursor,
            sectionVersions: sectionVersions, changeCount: diff.changeCount)
        switch format {
        case .batch: writeBatch(diff.batch, to: &json)
        case .sequential: writeSequential(diff.sequential, to: &json)
        case .jsonpatch: writePatch(diff.jsonPatch(), to: &json)
        }
        json.raw("}")
        return json.bytes
    }

    private func section(_ index: Int, to json: inout JSONWriter) {
        page[index].write(to: &json, layout: layout)
    }

    private func item(_ path: ItemPath, to json: inout JSONWriter) {
        page[path.section].items[path.item].write(to: &json, layout: layout)
    }

    // MARK: batch

    private func writeBatch(_ batch: SectionedBatchUpdate, to json: inout JSONWriter) {
        json.batchLists(
            "sections", deletes: batch.sectionDeletes, inserts: batch.sectionInserts, moves: batch.sectionMoves,
            reloads: batch.sectionReloads
        ) { $0.int($1) }
        json.batchLists("items", deletes: batch.itemDeletes, inserts: batch.itemInserts, moves: batch.itemMoves, reloads: batch.itemReloads) {
            $0.path($1)
        }
        json.member("inserted_sections", batch.sectionInserts) { json, newIndex in
            json.raw("{\"index\":\(newIndex),\"section\":")
            section(newIndex, to: &json)
            json.raw("}")
        }
        json.member("reloaded_sections", batch.sectionReloads) { json, oldIndex in
            let newIndex = diff.sections.newIndex(forOldIndex: oldIndex)!
            json.raw("{\"old_index\":\(oldIndex),\"index\":\(newIndex),\"section\":")
            section(newIndex, to: &json)
            json.raw("}")
        }
        json.member("inserted_items", batch.itemInserts) { json, path in
            json.raw("{\"path\":")
            json.path(path)
            json.raw(",\"item\":")
            item(path, to: &json)
            json.raw("}")
        }
        json.member("reloaded_items", batch.itemReloads) { json, path in
            let sectionDiff = diff.itemsDiff(forOldSection: path.section)!
            let newPath = ItemPath(section: sectionDiff.newSection, item: sectionDiff.items.newIndex(forOldIndex: path.item)!)
            json.raw("{\"old_path\":")
            json.path(path)
            json.raw(",\"path\":")
            json.path(newPath)
            if let patch = itemPatches[newPath] {
                json.raw(",")
                patchMembers(patch, to: &json)
            } else {
                json.raw(",\"item\":")
                item(newPath, to: &json)
            }
            json.raw("}")
        }
    }

    /// `"version":"…","patch":{merge patch}`.
    private func patchMembers(_ patch: ItemPatch, to json: inout JSONWriter) {
        json.raw("\"version\":")
        json.string(patch.version)
        json.raw(",\"patch\":")
        json.raw(bytes: patch.mergePatch.serialized())
    }

    // MARK: sequential

    private func writeSequential(_ update: SectionedSequentialUpdate, to json: inout JSONWriter) {
        json.raw(",\"operations\":")
        json.array(update.operations) { json, operation in
            switch operation {
            case .section(let step):
                json.sequentialStep(step, target: "sections") { json, index in section(index, to: &json) }
            case .item(let section, let step):
                json.sequentialStep(step, target: "items", section: section) { json, index in
                    let path = ItemPath(section: section, item: index)
                    if case .change = step, let patch = itemPatches[path] {
                        json.raw("{")
                        patchMembers(patch, to: &json)
                        json.raw("}")
                    } else {
                        item(path, to: &json)
                    }
                }
            }
        }
    }

    // MARK: JSON Patch

    private func writePatch(_ patch: JSONPatch, to json: inout JSONWriter) {
        json.raw(",\"patch\":[")
        var first = true
        func separator() {
            if !first { json.raw(",") }
            first = false
        }
        for operation in patch.operations {
            if operation.kind == .replace, case .item(let path)? = operation.value, let itemPatch = itemPatches[path] {
                // The fields that changed, then the version they lead to.
                for change in itemPatch.changes {
                    separator()
                    json.raw("{\"op\":\"replace\",\"path\":")
                    json.string(operation.path.appending("data").appending(JSONPointer(tokens: change.path)).description)
                    json.raw(",\"value\":")
                    json.raw(bytes: change.value.serialized())
                    json.raw("}")
                }
                separator()
                json.raw("{\"op\":\"replace\",\"path\":")
                json.string(operation.path.appending("version").description)
                json.raw(",\"value\":")
                json.string(itemPatch.version)
                json.raw("}")
                continue
            }
            separator()
            json.patchOperation(operation) { json, value in
                switch value {
                case .section(let index), .element(let index): section(index, to: &json)
                case .item(let path): item(path, to: &json)
                }
            }
        }
        func replace(_ path: String, value: (inout JSONWriter) -> Void) {
            separator()
            json.raw("{\"op\":\"replace\",\"path\":")
            json.string(path)
            json.raw(",\"value\":")
            value(&json)
            json.raw("}")
        }
        for index in keptSectionsWithChangedItems {
            replace("/sections/\(index)/version") { $0.string(page[index].versionText) }
        }
        replace("/snapshot") { $0.string(snapshot) }
        replace("/next_cursor") { $0.optionalString(nextCursor) }
        json.raw("]")
    }
}
