import FeedWire
import JSONBytes
import ListDiff
import Testing

// Hand-made documents: sections of items whose data is just their id, so expectations read
// like the lists they are.

private func item(_ id: String, _ version: String = "1") -> FeedDocument.Item {
    FeedDocument.Item(id: id, kind: "video", version: version, data: ["id": .string(id), "v": .string(version)])
}

private func section(_ id: String, _ items: [FeedDocument.Item], kind: String = "video_grid") -> FeedDocument.Section {
    FeedDocument.Section(id: id, kind: kind, version: "old-\(id)", columns: 2, items: items)
}

private func section(_ id: String, _ itemIDs: [String]) -> FeedDocument.Section {
    section(id, itemIDs.map { item($0) })
}

private func document(_ sections: [FeedDocument.Section]) -> FeedDocument {
    FeedDocument(snapshot: "old", viewer: 1, sections: sections, nextCursor: "o4")
}

/// A header from snapshot "old" to "new" that names the version of every section, `v-<id>` of `ids`.
private func header(_ ids: [String], cursor: String? = nil) -> FeedDelta.Header {
    FeedDelta.Header(
        since: "old", snapshot: "new", changesNextCursor: true, nextCursor: cursor,
        sectionVersions: Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($0.offset, "v-\($0.element)") }), changeCount: 1)
}

/// `expected` with the versions and snapshot a header from ``header(_:cursor:)`` gives.
private func finished(_ sections: [FeedDocument.Section], cursor: String? = nil) -> FeedDocument {
    var sections = sections
    for index in sections.indices { sections[index].version = "v-\(sections[index].id)" }
    return FeedDocument(snapshot: "new", viewer: 1, sections: sections, nextCursor: cursor)
}

private func path(_ section: Int, _ item: Int) -> ItemPath {
    ItemPath(section: section, item: item)
}

/// Expects `body` to be refused with ListDiff's `kind` of ``ApplyError`` (its section and index)
/// at `place` (`sections`, `items`, `operations[1]`, `patch[0]`).
private func expectRefusal(
    _ place: String, _ kind: ApplyError.Kind, section: Int? = nil, index: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws(DeltaApplyError) -> FeedDocument
) {
    do {
        let result = try body()
        Issue.record("applied, expected \(kind) at \(place): \(result.sections.map(\.id))", sourceLocation: sourceLocation)
    } catch {
        guard case .invalidOperations(let at, let refusal) = error, at == place, refusal.kind == kind, refusal.section == section,
            refusal.index == index
        else {
            Issue.record("\(error), expected \(kind) at \(place), section \(section as Any), index \(index as Any)", sourceLocation: sourceLocation)
            return
        }
    }
}

@Suite("Applying batch deltas")
struct BatchApplyTests {
    @Test("A section reload and a section move in the same batch: the reloaded section lands where the survivors put it")
    func reloadAndMoveInOneBatch() throws {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"]), section("C", ["c1"]), section("D", ["d1"])])
        let newB = section("B", [item("b9")], kind: "video_grid_stacked")
        let batch = FeedDelta.Batch(
            header: header(["D", "A", "B", "C"]),
            update: SectionedBatchUpdate(sectionMoves: [Move(from: 3, to: 0)], sectionReloads: [1]),
            reloadedSections: [FeedDelta.SectionPayload(oldPosition: 1, position: 2, value: newB)])
        let result = try old.applying(batch: batch)
        #expect(result == finished([section("D", ["d1"]), section("A", ["a1", "a2"]), newB, section("C", ["c1"])]))

        // The payload must say where the reload lands.
        var wrong = batch
        wrong.reloadedSections[0].position = 1
        #expect(throws: DeltaApplyError.payloadMismatch("reloaded_sections: old index 1 ends up at 2, not 1")) {
            try old.applying(batch: wrong)
        }
    }

    @Test("A deleted section takes its items with it, and item operations in it are rejected")
    func sectionDeleteWithItsItems() throws {
        let old = document([section("H", ["h"]), section("G0", ["x1", "x2"]), section("G1", ["y1", "y2"])])
        let batch = FeedDelta.Batch(
            header: header(["H", "G1"]),
            update: SectionedBatchUpdate(sectionDeletes: [1], itemDeletes: [path(2, 0)], itemInserts: [path(1, 1)]),
            insertedItems: [FeedDelta.ItemPayload(position: path(1, 1), value: item("y3"))])
        #expect(try old.applying(batch: batch) == finished([section("H", ["h"]), section("G1", ["y2", "y3"])]))

        var deletingInDeleted = batch
        deletingInDeleted.update.itemDeletes.append(path(1, 0))
        expectRefusal("items", .operationInChangedSection, section: 1, index: 0) { () throws(DeltaApplyError) in
            try old.applying(batch: deletingInDeleted)
        }
    }

    @Test("Item deletes and reloads use old paths, inserts and move targets new paths, in a section shifted by a section insert")
    func itemPathsAroundASectionInsert() throws {
        let old = document([section("A", ["a1", "a2", "a3"]), section("B", ["b1", "b2", "b3", "b4"])])
        let batch = FeedDelta.Batch(
            header: header(["N", "A", "B"]),
            update: SectionedBatchUpdate(
                sectionInserts: [0], itemDeletes: [path(1, 0)], itemInserts: [path(2, 3)],
                itemMoves: [Move(from: path(1, 3), to: path(2, 0))], itemReloads: [path(0, 1), path(1, 2)]),
            insertedSections: [FeedDelta.SectionPayload(position: 0, value: section("N", ["n1"]))],
            insertedItems: [FeedDelta.ItemPayload(position: path(2, 3), value: item("b5"))],
            reloadedItems: [
                FeedDelta.ItemReload(oldPosition: path(0, 1), position: path(1, 1), value: .item(item("a2", "2"))),
                FeedDelta.ItemReload(oldPosition: path(1, 2), position: path(2, 2), value: .item(item("b3", "2"))),
            ])
        let expected = finished([
            section("N", ["n1"]),
            section("A", [item("a1"), item("a2", "2"), item("a3")]),
            section("B", [item("b4"), item("b2"), item("b3", "2"), item("b5")]),
        ])
        #expect(try old.applying(batch: batch) == expected)

        // Reloads meet their positions in old order: swapped payload positions are refused.
        var swapped = batch
        swapped.reloadedItems[1].position = path(2, 1)
        #expect(throws: DeltaApplyError.payloadMismatch("reloaded_items: old path [1, 2] ends up at [2, 2], not [2, 1]")) {
            try old.applying(batch: swapped)
        }
    }

    @Test("Malformed batches are rejected with the violation named")
    func malformedBatchesAreRejected() throws {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"]), section("C", ["c1"]), section("D", ["d1"])])
        let ids = ["A", "B", "C", "D"]
        func batch(_ change: (inout FeedDelta.Batch) -> Void) -> FeedDelta.Batch {
            var batch = FeedDelta.Batch(header: header(ids))
            change(&batch)
            return batch
        }
        func rejects(_ expected: DeltaApplyError, sourceLocation: SourceLocation = #_sourceLocation, _ change: (inout FeedDelta.Batch) -> Void) {
            let batch = batch(change)
            #expect(throws: expected, sourceLocation: sourceLocation) { try old.applying(batch: batch) }
        }
        func rejects(
            _ place: String, _ kind: ApplyError.Kind, section: Int? = nil, index: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation,
            _ change: (inout FeedDelta.Batch) -> Void
        ) {
            let batch = batch(change)
            expectRefusal(place, kind, section: section, index: index, sourceLocation: sourceLocation) { () throws(DeltaApplyError) in
                try old.applying(batch: batch)
            }
        }
        rejects("sections", .indexOutOfRange, index: 9) {
            $0.update.sectionDeletes = [9]
            $0.header.sectionVersions = [0: "v-A", 1: "v-B", 2: "v-C"]
        }
        rejects("sections", .duplicateSource, index: 1) {
            $0.update.sectionDeletes = [1]
            $0.update.sectionMoves = [Move(from: 1, to: 0)]
        }
        rejects(.payloadMismatch("sections.inserts names 4 but inserted_sections has no entry for it")) {
            $0.update.sectionInserts = [4]
        }
        rejects("items", .indexOutOfRange, section: 0, index: 5) {
            $0.update.itemInserts = [path(0, 5)]
            $0.insertedItems = [FeedDelta.ItemPayload(position: path(0, 5), value: item("a9"))]
        }
        rejects("items", .duplicateDestination, section: 0, index: 2) {
            $0.update.itemInserts = [path(0, 2), path(0, 2)]
            $0.insertedItems = [FeedDelta.ItemPayload(position: path(0, 2), value: item("a3"))]
        }
        rejects(.payloadMismatch("reloaded_items has an entry for [1, 0] but items.reloads does not name it")) {
            $0.reloadedItems = [FeedDelta.ItemReload(oldPosition: path(1, 0), position: path(1, 0), value: .item(item("b1", "2")))]
        }
        rejects(.payloadMismatch("inserted_items has two entries for [1, 1]")) {
            $0.update.itemInserts = [path(1, 1)]
            $0.insertedItems = [FeedDelta.ItemPayload(position: path(1, 1), value: item("b2")), FeedDelta.ItemPayload(position: path(1, 1), value: item("b3"))]
        }
        rejects("items", .indexOutOfRange, section: 7, index: 0) {
            $0.update.itemDeletes = [path(7, 0)]
        }
        rejects(.itemMoveAcrossSections(from: path(0, 0), to: path(1, 0))) {
            $0.update.itemMoves = [Move(from: path(0, 0), to: path(1, 0))]
        }
        rejects("items", .operationInChangedSection, section: 3, index: 0) {
            $0.update.sectionMoves = [Move(from: 3, to: 0)]
            $0.update.itemReloads = [path(3, 0)]
            $0.reloadedItems = [FeedDelta.ItemReload(oldPosition: path(3, 0), position: path(0, 0), value: .item(item("d1", "2")))]
        }
        rejects(.countMismatch("section_versions names section 4 of 4")) {
            $0.header.sectionVersions = [0: "v-A", 4: "v-E"]
        }
        rejects(.snapshotMismatch(document: "old", since: "older")) {
            $0.header.since = "older"
        }
    }
}

@Suite("Applying sequential deltas")
struct SequentialApplyTests {
    @Test("Steps apply in order, each against the list the previous steps left; a move is remove-then-insert")
    func stepsApplyInOrder() throws {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1", "b2", "b3"]), section("C", ["c1"])])
        let newN = section("N", ["n2"])
        let sequential = FeedDelta.Sequential(
            header: header(["C", "B", "N"]),
            operations: [
                .sections(.remove(at: 0, count: 1)),  // B C
                .sections(.insert(at: 1, count: 1), values: [section("N", ["n1"])]),  // B N C
                .sections(.move(from: 2, to: 0)),  // C B N
                .sections(.change(at: 2, count: 1), values: [newN]),  // C B N'
                .items(section: 1, .remove(at: 0, count: 1)),  // b2 b3
                .items(section: 1, .move(from: 1, to: 0)),  // b3 b2
                .items(section: 1, .insert(at: 2, count: 1), values: [.item(item("b4"))]),  // b3 b2 b4
                .items(section: 1, .change(at: 0, count: 1), values: [.item(item("b3", "2"))]),  // b3' b2 b4
            ])
        let expected = finished([section("C", ["c1"]), section("B", [item("b3", "2"), item("b2"), item("b4")]), newN])
        #expect(try old.applying(sequential: sequential) == expected)
    }

    @Test("A step out of range at its moment, an unknown section or a count that disagrees with its values is rejected")
    func malformedStepsAreRejected() {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"])])
        func apply(_ operations: [FeedDelta.Operation]) throws(DeltaApplyError) -> FeedDocument {
            try old.applying(sequential: FeedDelta.Sequential(header: header(["A", "B"]), operations: operations))
        }
        // Removing section 0 leaves one section: index 1 no longer exists.
        expectRefusal("operations[1]", .indexOutOfRange, index: 1) { () throws(DeltaApplyError) in
            try apply([.sections(.remove(at: 0, count: 1)), .sections(.remove(at: 1, count: 1))])
        }
        expectRefusal("operations[0]", .indexOutOfRange, index: 1) { () throws(DeltaApplyError) in
            try apply([.items(section: 0, .remove(at: 1, count: 2))])
        }
        #expect(throws: DeltaApplyError.countMismatch("operations[0]: count 2 but 1 values")) {
            try apply([.items(section: 1, .insert(at: 0, count: 2), values: [.item(item("b0"))])])
        }
        expectRefusal("operations[0]", .malformedOperation) { () throws(DeltaApplyError) in
            try apply([.items(section: 1, .remove(at: 0, count: 0))])
        }
        expectRefusal("operations[0]", .indexOutOfRange, section: 2) { () throws(DeltaApplyError) in
            try apply([.items(section: 2, .change(at: 0, count: 1), values: [.item(item("x"))])])
        }
        expectRefusal("operations[0]", .indexOutOfRange, index: 2) { () throws(DeltaApplyError) in
            try apply([.items(section: 0, .move(from: 0, to: 2))])
        }
        #expect(throws: DeltaApplyError.countMismatch("section_versions names section 2 of 2")) {
            var header = header(["A", "B"])
            header.sectionVersions[2] = "v-C"
            return try old.applying(sequential: FeedDelta.Sequential(header: header, operations: [.items(section: 0, .remove(at: 0, count: 1))]))
        }
    }
}

@Suite("Applying JSON Patch deltas")
struct JSONPatchApplyTests {
    @Test("A patch of ListDiff's operations on sections and items, then the feed's fields, follows RFC 6902")
    func patchAppliesToTheDocument() throws {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"])])
        let patch = FeedDelta.JSONPatch(
            header: header(["B", "A"]),
            operations: [
                PatchOperation(op: .remove, path: "/sections/0/items/0"),
                PatchOperation(op: .add, path: "/sections/0/items/1", value: item("a3").json),
                PatchOperation(op: .move, path: "/sections/0", from: "/sections/1"),
                PatchOperation(op: .move, path: "/sections/1/items/0", from: "/sections/1/items/1"),
                PatchOperation(op: .replace, path: "/sections/1/items/1", value: item("a2", "2").json),
                PatchOperation(op: .replace, path: "/sections/0/version", value: "v-B"),
                PatchOperation(op: .replace, path: "/sections/1/version", value: "v-A"),
                PatchOperation(op: .replace, path: "/snapshot", value: "new"),
                PatchOperation(op: .replace, path: "/next_cursor", value: .null),
            ])
        let expected = finished([section("B", ["b1"]), section("A", [item("a3"), item("a2", "2")])])
        #expect(try old.applying(jsonPatch: patch) == expected)
    }

    @Test("An operation that does not apply, or a result that disagrees with the header, is rejected")
    func failingPatchesAreRejected() {
        let old = document([section("A", ["a1"])])
        func apply(_ operations: [PatchOperation]) throws(DeltaApplyError) -> FeedDocument {
            try old.applying(jsonPatch: FeedDelta.JSONPatch(header: header(["A"], cursor: "o4"), operations: operations))
        }
        expectRefusal("patch[0]", .indexOutOfRange, index: 1) { () throws(DeltaApplyError) in
            try apply([PatchOperation(op: .remove, path: "/sections/1")])
        }
        expectRefusal("patch[0]", .invalidPath) { () throws(DeltaApplyError) in
            try apply([PatchOperation(op: .replace, path: "/sections/01", value: "x")])
        }
        expectRefusal("patch[0]", .invalidPath) { () throws(DeltaApplyError) in
            try apply([PatchOperation(op: .add, path: "/sections/-", value: section("B", ["b1"]).json)])
        }
        expectRefusal("patch[0]", .invalidPath) { () throws(DeltaApplyError) in
            try apply([PatchOperation(op: .move, path: "/sections/0/items", from: "/sections/0")])
        }
        expectRefusal("patch[0]", .invalidPath) { () throws(DeltaApplyError) in
            try apply([PatchOperation(op: .replace, path: "/sections/0/items/0/id", value: 7)])
        }
        #expect(throws: DeltaApplyError.resultMismatch("/sections/0 (A) has version old-A, section_versions says v-A")) {
            try apply([PatchOperation(op: .replace, path: "/snapshot", value: "new")])
        }
        let wrongID: JSONValue = ["id": 7, "kind": "video", "version": "1", "data": .null]
        #expect(throws: DeltaApplyError.invalidDocument("patch[0].value.id: must be a string")) {
            try apply([PatchOperation(op: .replace, path: "/sections/0/items/0", value: wrongID)])
        }
    }
}

@Suite("Decoding deltas and JSON")
struct DecodingTests {
    static let batchText = """
        {"snapshot":"new","next_cursor":null,"section_versions":{"0":"v-N","1":"v-A"},"change_count":2,
         "sections":{"deletes":[],"inserts":[0],"moves":[],"reloads":[]},
         "items":{"deletes":[[0,1]],"inserts":[],"moves":[],"reloads":[]},
         "inserted_sections":[{"index":0,"section":{"id":"N","kind":"ad","version":"v-N","columns":1,
           "items":[{"id":"ad:1","kind":"ad","version":"9","data":{"title":"Sale \\u00e9 \\ud83c\\udf89","n":1.5e3},"size":{"width":366,"height":261}}]}}],
         "reloaded_sections":[],"inserted_items":[],"reloaded_items":[]}
        """

    @Test("A batch delta from the wire decodes, applies, and re-encodes to the same value")
    func batchDeltaRoundTrips() throws {
        let delta = try FeedDelta(parsing: Array(DecodingTests.batchText.utf8), format: .batch, since: "old")
        guard case .batch(let batch) = delta else {
            Issue.record("decoded as \(delta.format)")
            return
        }
        #expect(batch.insertedSections.first?.value.items.first?.data["title"] == "Sale é 🎉")
        #expect(batch.insertedSections.first?.value.items.first?.data["n"] == .double(1500))
        let size = batch.insertedSections.first?.value.items.first?.size
        #expect(size?.width == 366 && size?.height == 261)
        #expect(try FeedDelta(json: delta.json, format: delta.format, since: delta.header.since) == delta)
        #expect(try FeedDelta(parsing: delta.json.serialized(), format: delta.format, since: delta.header.since) == delta)

        let old = document([section("A", ["a1", "a2"])])
        let result = try old.applying(delta)
        #expect(result.sections.map(\.id) == ["N", "A"])
        #expect(result.sections[1].items.map(\.id) == ["a1"])
        #expect(result.nextCursor == nil)
    }

    @Test(
        "Malformed deltas are rejected at decoding, naming the member",
        arguments: [
            (
                FeedDelta.Format.batch, #"{"snapshot":"b","change_count":0,"sections":{"deletes":[[1]],"inserts":[],"moves":[],"reloads":[]}}"#,
                "sections.deletes[0]"
            ),
            (
                FeedDelta.Format.batch,
                #"{"snapshot":"b","change_count":0,"sections":{"deletes":[],"inserts":[],"moves":[[0,1]],"reloads":[]},"items":{"deletes":[[0,"1"]],"inserts":[],"moves":[],"reloads":[]}}"#,
                "items.deletes[0][1]"
            ),
            (
                FeedDelta.Format.sequential, #"{"snapshot":"b","change_count":0,"operations":[{"op":"explode","target":"sections","index":0,"count":1}]}"#,
                "operations[0].op"
            ),
            (
                FeedDelta.Format.sequential, #"{"snapshot":"b","change_count":0,"operations":[{"op":"remove","target":"items","index":0,"count":1}]}"#,
                "operations[0].section"
            ),
            (.jsonpatch, #"{"snapshot":"b","change_count":0,"patch":[{"op":"add","path":"/x"}]}"#, "patch[0].value"),
            // The feed's patch is ListDiff's operations: no test or copy.
            (
                FeedDelta.Format.jsonpatch, #"{"snapshot":"b","change_count":0,"patch":[{"op":"test","path":"/snapshot","value":"a"}]}"#,
                "patch[0].op"
            ),
            (
                FeedDelta.Format.jsonpatch, #"{"snapshot":"b","change_count":0,"patch":[{"op":"remove","path":"x"}]}"#,
                "patch[0].path"
            ),
            (.jsonpatch, #"{"snapshot":"b","section_versions":{"0":"x","1":1},"change_count":0,"patch":[]}"#, "section_versions.1"),
            (.batch, #"{"snapshot":"b","section_versions":{"first":"x"},"change_count":0}"#, "section_versions.first"),
            (.batch, #"{"snapshot":"b","section_versions":["x"],"change_count":0}"#, "section_versions"),
            (.batch, #"{"snapshot":"b","section_layouts":{"first":{}},"change_count":0}"#, "section_layouts.first"),
            (.sequential, #"{"snapshot":"b","section_layouts":{"0":1},"change_count":0,"operations":[]}"#, "section_layouts.0"),
            (
                FeedDelta.Format.batch,
                #"{"snapshot":"b","change_count":1,"items":{"reloads":[[0,0]]},"reloaded_items":[{"old_path":[0,0],"path":[0,0],"version":"1","patch":{"video":{"title":null}}}]}"#,
                "reloaded_items[0].patch"
            ),
        ])
    func malformedDeltasAreRejected(format: FeedDelta.Format, text: String, path: String) {
        let error = #expect(throws: FeedDecodingError.self) { try FeedDelta(parsing: Array(text.utf8), format: format, since: "a") }
        #expect(error?.path == path, "\(String(describing: error))")
    }

    @Test("Kinds a newer server may add still decode: kept as sent, with no known kind")
    func unknownKindsDecode() throws {
        let text = #"{"id":"s","kind":"story_rail","version":"1","columns":1,"items":[{"id":"i","kind":"story","version":"1","data":{}}]}"#
        let section = try FeedDocument.Section(json: try JSONValue(parsing: Array(text.utf8)))
        #expect(section.kind == "story_rail" && section.knownKind == nil)
        #expect(section.items[0].kind == "story" && section.items[0].knownKind == nil)
        #expect(section.json == (try JSONValue(parsing: Array(text.utf8))))
        #expect(FeedDocument.Section(id: "g", kind: "video_grid", version: "1", columns: 2, items: []).knownKind == .videoGrid)
        #expect(item("a1").knownKind == .video)
    }

    @Test("JSON parsing is exact: numbers, escapes and surrogate pairs; invalid texts are rejected")
    func jsonParsing() throws {
        let value = try JSONValue(
            parsing: #" {"a":[1,-0,2.5,1e2,9223372036854775807,9223372036854775808,true,false,null],"s":"q\"\\\/\b\f\n\r\t\u0041\u00e9\ud83d\ude00"} "#)
        // 2^63 is beyond Int64, and 9.223372036854776e18 (what a Double would say) is not its value: kept as written.
        let twoToThe63 = try JSONValue(parsing: "9223372036854775808")
        guard case .number(let exact) = twoToThe63 else {
            Issue.record("2^63 parsed as \(twoToThe63)")
            return
        }
        #expect(exact.text == "9223372036854775808")
        #expect(value["a"] == [1, 0, 2.5, .double(100), .int(Int64.max), twoToThe63, true, false, .null])
        #expect(value["s"] == "q\"\\/\u{8}\u{C}\n\r\tAé😀")
        #expect(try JSONValue(parsing: value.serialized()) == value)
        #expect(JSONValue.string("a\u{1}\"").jsonText == #""a\u0001\"""#)
        for invalid in ["", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"\\x\"", "\"\\ud800\"", "[1] 2", "\"a\nb\"", "nan"] {
            #expect(throws: JSONParseError.self, "\(invalid)") { try JSONValue(parsing: invalid) }
        }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: String(repeating: "[", count: 600) + String(repeating: "]", count: 600)) }
    }
}

@Suite("Applying headers, footers, layouts and the prefetch hint")
struct SupplementaryApplyTests {
    private static func view(_ id: String, count: Int) -> FeedDocument.Item {
        var view = FeedDocument.Item(id: id, kind: "see_all", version: "", data: ["count": .int(Int64(count)), "title": "See all"])
        view.version = view.computedVersion
        return view
    }

    private static let layout = SectionLayout(
        height: 100, insets: Insets(top: 8, left: 8, bottom: 8, right: 8), frames: [Frame(x: 8, y: 8, width: 50, height: 50)])

    private static func start() -> FeedDocument {
        var carousel = section("S", ["u1"])
        carousel.footer = view("see_all", count: 1)
        return document([section("A", ["a1"]), carousel])
    }

    /// The document after the footer's count became 2, the layout `layout` and a prefetch hint.
    private static func expected() -> FeedDocument {
        var result = finished(start().sections)
        result.sections[1].footer = view("see_all", count: 2)
        result.sections[1].layout = layout
        result.prefetch = Prefetch(index: 1, section: "S")
        return result
    }

    private static func fullHeader() -> FeedDelta.Header {
        var header = FeedWireTests.header(["A", "S"])
        header.sectionLayouts = [1: layout]
        header.changesPrefetch = true
        header.prefetch = Prefetch(index: 1, section: "S")
        return header
    }

    private static let patch = ItemPatch(version: view("see_all", count: 2).version, changes: [ItemPatch.Change(path: ["count"], value: .int(2))])

    @Test("A footer patched after a batch, a layout and the hint copied: the document a fresh fetch gives, and back through the wire")
    func batch() throws {
        let delta = FeedDelta.batch(
            FeedDelta.Batch(header: Self.fullHeader(), supplementary: [FeedDelta.SupplementaryChange(section: 1, element: .footer, view: .patch(Self.patch))]))
        #expect(try Self.start().applying(delta) == Self.expected())
        #expect(try FeedDelta(parsing: delta.json.serialized(), format: delta.format, since: delta.header.since) == delta)
    }

    @Test("Sequential steps insert, change and remove views, each checked against what the section has")
    func sequential() throws {
        let change = FeedDelta.Operation.supplementary(FeedDelta.SupplementaryChange(section: 1, element: .footer, view: .patch(Self.patch)), inserted: false)
        let delta = FeedDelta.sequential(FeedDelta.Sequential(header: Self.fullHeader(), operations: [change]))
        #expect(try Self.start().applying(delta) == Self.expected())
        #expect(try FeedDelta(parsing: delta.json.serialized(), format: delta.format, since: delta.header.since) == delta)

        let title = Self.view("title", count: 0)
        func apply(_ operations: [FeedDelta.Operation]) throws(DeltaApplyError) -> FeedDocument {
            try Self.start().applying(.sequential(FeedDelta.Sequential(header: header(["A", "S"]), operations: operations)))
        }
        // An insert where there is a view, a change or a remove where there is none: refused.
        #expect(throws: DeltaApplyError.self) {
            try apply([.supplementary(FeedDelta.SupplementaryChange(section: 1, element: .footer, view: .item(title)), inserted: true)])
        }
        #expect(throws: DeltaApplyError.self) {
            try apply([.supplementary(FeedDelta.SupplementaryChange(section: 0, element: .header, view: .item(title)), inserted: false)])
        }
        #expect(throws: DeltaApplyError.self) {
            try apply([.supplementary(FeedDelta.SupplementaryChange(section: 0, element: .footer, view: nil), inserted: false)])
        }
        #expect(throws: DeltaApplyError.self) {
            try apply([.supplementary(FeedDelta.SupplementaryChange(section: 5, element: .header, view: .item(title)), inserted: true)])
        }
        let inserted = try apply([.supplementary(FeedDelta.SupplementaryChange(section: 0, element: .header, view: .item(title)), inserted: true)])
        #expect(inserted.sections[0].header == title)
        let removed = try apply([.supplementary(FeedDelta.SupplementaryChange(section: 1, element: .footer, view: nil), inserted: false)])
        #expect(removed.sections[1].footer == nil)
        // A patch that does not lead to the version it announces: refused.
        let wrong = ItemPatch(version: Self.patch.version, changes: [ItemPatch.Change(path: ["count"], value: .int(3))])
        #expect(throws: DeltaApplyError.self) {
            try apply([.supplementary(FeedDelta.SupplementaryChange(section: 1, element: .footer, view: .patch(wrong)), inserted: false)])
        }
    }

    @Test("A JSON Patch replaces a footer's fields then its version, and the layout and hint in the document")
    func jsonPatch() throws {
        let layout = try JSONValue(
            parsing: Array(#"{"height":100,"insets":{"top":8,"left":8,"bottom":8,"right":8},"frames":[{"x":8,"y":8,"width":50,"height":50}]}"#.utf8))
        let operations = [
            PatchOperation(op: .replace, path: JSONPointer("/sections/1/footer/data/count"), value: .int(2)),
            PatchOperation(op: .replace, path: JSONPointer("/sections/1/footer/version"), value: .string(Self.patch.version)),
            PatchOperation(op: .replace, path: JSONPointer("/sections/1/layout"), value: layout),
            PatchOperation(op: .replace, path: JSONPointer("/sections/0/version"), value: "v-A"),
            PatchOperation(op: .replace, path: JSONPointer("/sections/1/version"), value: "v-S"),
            PatchOperation(op: .add, path: JSONPointer("/prefetch"), value: ["index": 1, "section": "S"]),
            PatchOperation(op: .replace, path: JSONPointer("/snapshot"), value: "new"),
            PatchOperation(op: .replace, path: JSONPointer("/next_cursor"), value: .null),
        ]
        let patch = FeedDelta.JSONPatch(header: header(["A", "S"]), operations: operations)
        #expect(try Self.start().applying(.jsonPatch(patch)) == Self.expected())
        // Fields replaced without the version after them, or a header added where there is one: refused.
        #expect(throws: DeltaApplyError.self) {
            try Self.start().applying(.jsonPatch(FeedDelta.JSONPatch(header: header(["A", "S"]), operations: [operations[0]] + operations[4...])))
        }
        let add = PatchOperation(op: .add, path: JSONPointer("/sections/1/footer"), value: Self.view("x", count: 0).json)
        #expect(throws: DeltaApplyError.self) {
            try Self.start().applying(.jsonPatch(FeedDelta.JSONPatch(header: header(["A", "S"]), operations: [add] + operations[3...])))
        }
    }

    @Test("A sequential step on a header or footer from the wire is read, or refused naming the member")
    func decoding() {
        let insertPatch =
            #"{"snapshot":"b","change_count":1,"operations":[{"op":"insert","target":"footer","section":0,"view":{"version":"1","patch":{"count":2}}}]}"#
        let error = #expect(throws: FeedDecodingError.self) { try FeedDelta(parsing: Array(insertPatch.utf8), format: .sequential, since: "a") }
        #expect(error?.path == "operations[0].view")
        let unknownTarget = #"{"snapshot":"b","change_count":1,"operations":[{"op":"remove","target":"aside","section":0}]}"#
        let targetError = #expect(throws: FeedDecodingError.self) { try FeedDelta(parsing: Array(unknownTarget.utf8), format: .sequential, since: "a") }
        #expect(targetError?.path == "operations[0].target")
    }
}
