import JSONBytes
import ListDiff

/// Renders the difference between a stored snapshot and the current feed page as JSON, in one of
/// the three ``DeltaFormat``s, with the payloads of everything inserted or replaced.
///
/// Every form carries `since`, `snapshot` (the new id), `next_cursor` and `section_versions` (the
/// version of every section of the new page, in order), so a client that applies the operations
/// and copies those fields holds exactly what a fresh fetch would return.
struct DeltaRenderer {
    let old: SnapshotStructure
    let oldID: String
    let page: [FeedSection]
    /// The page's structure (already computed when the page was composed).
    let new: SnapshotStructure
    let newID: String
    let nextCursor: String?
    /// Sizes items for the screen width the feed was asked with.
    var layout: Layout? { new.parameters.width.map(Layout.init(width:)) }

    typealias Diff = SectionedDiff<String, String>

    func diff() -> Diff {
        SectionedDiff(
            oldSections: old.sections, newSections: new.sections,
            sectionIdentifier: { $0.id },
            isSectionContentEqual: { $0.kind == $1.kind },
            items: { $0.items },
            itemIdentifier: { $0.id },
            isItemContentEqual: { $0.version == $1.version })
    }

    func render(_ format: DeltaFormat) -> [UInt8] {
        let diff = diff()
        var json = JSONWriter(capacity: 4096)
        json.raw("{\"format\":")
        json.string(format.rawValue)
        json.raw(",\"since\":")
        json.string(oldID)
        json.raw(",\"snapshot\":")
        json.string(newID)
        json.raw(",\"next_cursor\":")
        json.optionalString(nextCursor)
        json.raw(",\"section_versions\":[")
        for (index, section) in page.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("\"")
            json.raw(section.versionText)
            json.raw("\"")
        }
        json.raw("],\"change_count\":")
        json.int(diff.changeCount)
        switch format {
        case .batch: writeBatch(diff.batch, diff: diff, to: &json)
        case .sequential: writeSequential(diff.sequential, to: &json)
        case .jsonpatch: writePatch(diff.jsonPatch(), diff: diff, to: &json)
        }
        json.raw("}")
        return json.bytes
    }

    // MARK: batch

    private func writeBatch(_ batch: SectionedBatchUpdate, diff: Diff, to json: inout JSONWriter) {
        json.raw(",\"sections\":{\"deletes\":")
        json.ints(batch.sectionDeletes)
        json.raw(",\"inserts\":")
        json.ints(batch.sectionInserts)
        json.raw(",\"moves\":[")
        for (index, move) in batch.sectionMoves.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("[\(move.from),\(move.to)]")
        }
        json.raw("],\"reloads\":")
        json.ints(batch.sectionReloads)
        json.raw("},\"items\":{\"deletes\":")
        writePaths(batch.itemDeletes, to: &json)
        json.raw(",\"inserts\":")
        writePaths(batch.itemInserts, to: &json)
        json.raw(",\"moves\":[")
        for (index, move) in batch.itemMoves.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("[[\(move.from.section),\(move.from.item)],[\(move.to.section),\(move.to.item)]]")
        }
        json.raw("],\"reloads\":")
        writePaths(batch.itemReloads, to: &json)
        json.raw("},\"inserted_sections\":[")
        for (index, newIndex) in batch.sectionInserts.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{\"index\":\(newIndex),\"section\":")
            page[newIndex].write(to: &json, layout: layout)
            json.raw("}")
        }
        json.raw("],\"reloaded_sections\":[")
        for (index, oldIndex) in batch.sectionReloads.enumerated() {
            if index > 0 { json.raw(",") }
            let newIndex = diff.sections.newIndex(forOldIndex: oldIndex)!
            json.raw("{\"old_index\":\(oldIndex),\"index\":\(newIndex),\"section\":")
            page[newIndex].write(to: &json, layout: layout)
            json.raw("}")
        }
        json.raw("],\"inserted_items\":[")
        for (index, path) in batch.itemInserts.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{\"path\":[\(path.section),\(path.item)],\"item\":")
            page[path.section].items[path.item].write(to: &json, layout: layout)
            json.raw("}")
        }
        json.raw("],\"reloaded_items\":[")
        for (index, path) in batch.itemReloads.enumerated() {
            if index > 0 { json.raw(",") }
            let sectionDiff = diff.itemsDiff(forOldSection: path.section)!
            let newItem = sectionDiff.items.newIndex(forOldIndex: path.item)!
            json.raw("{\"old_path\":[\(path.section),\(path.item)],\"path\":[\(sectionDiff.newSection),\(newItem)],\"item\":")
            page[sectionDiff.newSection].items[newItem].write(to: &json, layout: layout)
            json.raw("}")
        }
        json.raw("]")
    }

    // MARK: sequential

    private func writeSequential(_ update: SectionedSequentialUpdate, to json: inout JSONWriter) {
        json.raw(",\"operations\":[")
        for (index, operation) in update.operations.enumerated() {
            if index > 0 { json.raw(",") }
            switch operation {
            case .section(let step):
                writeStep(step, target: "sections", section: nil, to: &json)
            case .item(let section, let step):
                writeStep(step, target: "items", section: section, to: &json)
            }
        }
        json.raw("]")
    }

    private func writeStep(_ step: SequentialOperation, target: String, section: Int?, to json: inout JSONWriter) {
        func values(_ range: Range<Int>) {
            json.raw(",\"\(target)\":[")
            for index in range {
                if index > range.lowerBound { json.raw(",") }
                if let section {
                    page[section].items[index].write(to: &json, layout: layout)
                } else {
                    page[index].write(to: &json, layout: layout)
                }
            }
            json.raw("]")
        }
        let sectionField = section.map { ",\"section\":\($0)" } ?? ""
        switch step {
        case .remove(let at, let count):
            json.raw("{\"op\":\"remove\",\"target\":\"\(target)\"\(sectionField),\"index\":\(at),\"count\":\(count)}")
        case .insert(let at, let count):
            json.raw("{\"op\":\"insert\",\"target\":\"\(target)\"\(sectionField),\"index\":\(at),\"count\":\(count)")
            values(at..<at + count)
            json.raw("}")
        case .move(let from, let to):
            json.raw("{\"op\":\"move\",\"target\":\"\(target)\"\(sectionField),\"from\":\(from),\"to\":\(to)}")
        case .change(let at, let count):
            json.raw("{\"op\":\"change\",\"target\":\"\(target)\"\(sectionField),\"index\":\(at),\"count\":\(count)")
            values(at..<at + count)
            json.raw("}")
        }
    }

    // MARK: JSON Patch

    private func writePatch(_ patch: JSONPatch, diff: Diff, to json: inout JSONWriter) {
        json.raw(",\"patch\":[")
        var first = true
        func separator() {
            if !first { json.raw(",") }
            first = false
        }
        for operation in patch.operations {
            separator()
            json.raw("{\"op\":\"\(operation.kind.rawValue)\",\"path\":")
            json.string(operation.path.description)
            if let from = operation.from {
                json.raw(",\"from\":")
                json.string(from.description)
            }
            if let value = operation.value {
                json.raw(",\"value\":")
                switch value {
                case .section(let index): page[index].write(to: &json, layout: layout)
                case .item(let path): page[path.section].items[path.item].write(to: &json, layout: layout)
                case .element(let index): page[index].write(to: &json, layout: layout)
                }
            }
            json.raw("}")
        }
        // Sections kept in place whose items changed carry a new version.
        for itemDiff in diff.itemDiffs where itemDiff.items.hasChanges {
            let newSection = itemDiff.newSection
            guard old.sections[itemDiff.oldSection].kind == page[newSection].kind else { continue }
            separator()
            json.raw("{\"op\":\"replace\",\"path\":\"/sections/\(newSection)/version\",\"value\":\"\(page[newSection].versionText)\"}")
        }
        separator()
        json.raw("{\"op\":\"replace\",\"path\":\"/snapshot\",\"value\":\"\(newID)\"}")
        separator()
        json.raw("{\"op\":\"replace\",\"path\":\"/next_cursor\",\"value\":")
        json.optionalString(nextCursor)
        json.raw("}]")
    }

    private func writePaths(_ paths: [ItemPath], to json: inout JSONWriter) {
        json.raw("[")
        for (index, path) in paths.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("[\(path.section),\(path.item)]")
        }
        json.raw("]")
    }
}
