import FeedWire
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
        json.openDelta(
            format: format.rawValue, since: oldID, snapshot: newID, nextCursor: nextCursor,
            sectionVersions: page.map(\.versionText), changeCount: diff.changeCount)
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
        json.raw(",\"sections\":")
        json.batch(
            deletes: batch.sectionDeletes, inserts: batch.sectionInserts, moves: batch.sectionMoves, reloads: batch.sectionReloads
        ) { $0.int($1) }
        json.raw(",\"items\":")
        json.batch(deletes: batch.itemDeletes, inserts: batch.itemInserts, moves: batch.itemMoves, reloads: batch.itemReloads) {
            $0.path($1)
        }
        json.raw(",\"inserted_sections\":")
        json.array(batch.sectionInserts) { json, newIndex in
            json.raw("{\"index\":\(newIndex),\"section\":")
            page[newIndex].write(to: &json, layout: layout)
            json.raw("}")
        }
        json.raw(",\"reloaded_sections\":")
        json.array(batch.sectionReloads) { json, oldIndex in
            let newIndex = diff.sections.newIndex(forOldIndex: oldIndex)!
            json.raw("{\"old_index\":\(oldIndex),\"index\":\(newIndex),\"section\":")
            page[newIndex].write(to: &json, layout: layout)
            json.raw("}")
        }
        json.raw(",\"inserted_items\":")
        json.array(batch.itemInserts) { json, path in
            json.raw("{\"path\":")
            json.path(path)
            json.raw(",\"item\":")
            page[path.section].items[path.item].write(to: &json, layout: layout)
            json.raw("}")
        }
        json.raw(",\"reloaded_items\":")
        json.array(batch.itemReloads) { json, path in
            let sectionDiff = diff.itemsDiff(forOldSection: path.section)!
            let newPath = ItemPath(section: sectionDiff.newSection, item: sectionDiff.items.newIndex(forOldIndex: path.item)!)
            json.raw("{\"old_path\":")
            json.path(path)
            json.raw(",\"path\":")
            json.path(newPath)
            json.raw(",\"item\":")
            page[newPath.section].items[newPath.item].write(to: &json, layout: layout)
            json.raw("}")
        }
    }

    // MARK: sequential

    private func writeSequential(_ update: SectionedSequentialUpdate, to json: inout JSONWriter) {
        json.raw(",\"operations\":")
        json.array(update.operations) { json, operation in
            switch operation {
            case .section(let step):
                json.sequentialStep(step, target: "sections") { json, index in page[index].write(to: &json, layout: layout) }
            case .item(let section, let step):
                json.sequentialStep(step, target: "items", section: section) { json, index in
                    page[section].items[index].write(to: &json, layout: layout)
                }
            }
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
            json.patchOperation(operation) { json, value in
                switch value {
                case .section(let index), .element(let index): page[index].write(to: &json, layout: layout)
                case .item(let path): page[path.section].items[path.item].write(to: &json, layout: layout)
                }
            }
        }
        // Sections kept in place whose items changed carry a new version.
        for itemDiff in diff.itemDiffs where itemDiff.items.hasChanges {
            let newSection = itemDiff.newSection
            guard old.sections[itemDiff.oldSection].kind == page[newSection].kind.rawValue else { continue }
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
}
