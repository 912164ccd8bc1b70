import DeltaFeedClient
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

/// A header from snapshot "old" to "new" whose section versions are `v-<id>` of `ids`.
private func header(_ ids: [String], cursor: String? = nil) -> FeedDelta.Header {
    FeedDelta.Header(since: "old", snapshot: "new", nextCursor: cursor, sectionVersions: ids.map { "v-\($0)" }, changeCount: 1)
}

/// `expected` with the versions and snapshot a header from ``header(_:cursor:)`` gives.
private func finished(_ sections: [FeedDocument.Section], cursor: String? = nil) -> FeedDocument {
    var sections = sections
    for index in sections.indices { sections[index].version = "v-\(sections[index].id)" }
    return FeedDocument(snapshot: "new", viewer: 1, sections: sections, nextCursor: cursor)
}

private func path(_ section: Int, _ item: Int) -> FeedDelta.ItemPath {
    FeedDelta.ItemPath(section: section, item: item)
}

@Suite("Applying batch deltas")
struct BatchApplyTests {
    @Test("A section reload and a section move in the same batch: the reloaded section lands where the survivors put it")
    func reloadAndMoveInOneBatch() throws {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"]), section("C", ["c1"]), section("D", ["d1"])])
        let newB = section("B", [item("b9")], kind: "video_grid_stacked")
        let batch = FeedDelta.Batch(
            header: header(["D", "A", "B", "C"]),
            sections: FeedDelta.SectionChanges(moves: [FeedDelta.Move(from: 3, to: 0)], reloads: [1]),
            reloadedSections: [FeedDelta.ReloadedSection(oldIndex: 1, index: 2, section: newB)])
        let result = try old.applying(batch: batch)
        #expect(result == finished([section("D", ["d1"]), section("A", ["a1", "a2"]), newB, section("C", ["c1"])]))

        // The payload must say where the reload lands.
        var wrong = batch
        wrong.reloadedSections[0].index = 1
        #expect(throws: DeltaApplyError.payloadMismatch("reloaded_sections: old index 1 ends up at 2, not 1")) {
            try old.applying(batch: wrong)
        }
    }

    @Test("A deleted section takes its items with it, and item operations in it are rejected")
    func sectionDeleteWithItsItems() throws {
        let old = document([section("H", ["h"]), section("G0", ["x1", "x2"]), section("G1", ["y1", "y2"])])
        let batch = FeedDelta.Batch(
            header: header(["H", "G1"]),
            sections: FeedDelta.SectionChanges(deletes: [1]),
            items: FeedDelta.ItemChanges(deletes: [path(2, 0)], inserts: [path(1, 1)]),
            insertedItems: [FeedDelta.InsertedItem(path: path(1, 1), item: item("y3"))])
        #expect(try old.applying(batch: batch) == finished([section("H", ["h"]), section("G1", ["y2", "y3"])]))

        var deletingInDeleted = batch
        deletingInDeleted.items.deletes.append(path(1, 0))
        #expect(throws: DeltaApplyError.itemOperationInWholeSection(operation: "items.deletes", section: 1)) {
            try old.applying(batch: deletingInDeleted)
        }
    }

    @Test("Item deletes and reloads use old paths, inserts and move targets new paths, in a section shifted by a section insert")
    func itemPathsAroundASectionInsert() throws {
        let old = document([section("A", ["a1", "a2", "a3"]), section("B", ["b1", "b2", "b3", "b4"])])
        let batch = FeedDelta.Batch(
            header: header(["N", "A", "B"]),
            sections: FeedDelta.SectionChanges(inserts: [0]),
            items: FeedDelta.ItemChanges(
                deletes: [path(1, 0)], inserts: [path(2, 3)],
                moves: [FeedDelta.Move(from: path(1, 3), to: path(2, 0))],
                reloads: [path(0, 1), path(1, 2)]),
            insertedSections: [FeedDelta.InsertedSection(index: 0, section: section("N", ["n1"]))],
            insertedItems: [FeedDelta.InsertedItem(path: path(2, 3), item: item("b5"))],
            reloadedItems: [
                FeedDelta.ReloadedItem(oldPath: path(0, 1), path: path(1, 1), item: item("a2", "2")),
                FeedDelta.ReloadedItem(oldPath: path(1, 2), path: path(2, 2), item: item("b3", "2")),
            ])
        let expected = finished([
            section("N", ["n1"]),
            section("A", [item("a1"), item("a2", "2"), item("a3")]),
            section("B", [item("b4"), item("b2"), item("b3", "2"), item("b5")]),
        ])
        #expect(try old.applying(batch: batch) == expected)
    }

    @Test("Malformed batches are rejected with the violation named")
    func malformedBatchesAreRejected() throws {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"]), section("C", ["c1"]), section("D", ["d1"])])
        let ids = ["A", "B", "C", "D"]
        func rejects(_ expected: DeltaApplyError, _ change: (inout FeedDelta.Batch) -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
            var batch = FeedDelta.Batch(header: header(ids))
            change(&batch)
            #expect(throws: expected, sourceLocation: sourceLocation) { try old.applying(batch: batch) }
        }
        rejects(.sectionIndexOutOfRange(operation: "sections.deletes", index: 9, count: 4)) {
            $0.sections.deletes = [9]
            $0.header.sectionVersions = ["v-A", "v-B", "v-C"]
        }
        rejects(.conflictingOperations("section old index 1 is named by delete and move")) {
            $0.sections.deletes = [1]
            $0.sections.moves = [FeedDelta.Move(from: 1, to: 0)]
        }
        rejects(.payloadMismatch("sections.inserts names 4 but inserted_sections has no entry for it")) {
            $0.sections.inserts = [4]
        }
        rejects(.itemIndexOutOfRange(operation: "items.inserts", section: 0, index: 5, count: 3)) {
            $0.items.inserts = [path(0, 5)]
            $0.insertedItems = [FeedDelta.InsertedItem(path: path(0, 5), item: item("a9"))]
        }
        rejects(.conflictingOperations("items.inserts names [0, 2] twice")) {
            $0.items.inserts = [path(0, 2), path(0, 2)]
            $0.insertedItems = [FeedDelta.InsertedItem(path: path(0, 2), item: item("a3"))]
        }
        rejects(.payloadMismatch("reloaded_items has an entry for [1, 0] but items.reloads does not name it")) {
            $0.reloadedItems = [FeedDelta.ReloadedItem(oldPath: path(1, 0), path: path(1, 0), item: item("b1", "2"))]
        }
        rejects(.unknownSection(operation: "items.deletes", section: 7, count: 4)) {
            $0.items.deletes = [path(7, 0)]
        }
        rejects(.itemMoveAcrossSections(from: path(0, 0), to: path(1, 0))) {
            $0.items.moves = [FeedDelta.Move(from: path(0, 0), to: path(1, 0))]
        }
        rejects(.itemOperationInWholeSection(operation: "items.reloads", section: 3)) {
            $0.sections.moves = [FeedDelta.Move(from: 3, to: 0)]
            $0.items.reloads = [path(3, 0)]
            $0.reloadedItems = [FeedDelta.ReloadedItem(oldPath: path(3, 0), path: path(0, 0), item: item("d1", "2"))]
        }
        rejects(.countMismatch("section_versions has 2 versions for 4 sections")) {
            $0.header.sectionVersions = ["v-A", "v-B"]
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
                .removeSections(index: 0, count: 1),  // B C
                .insertSections(index: 1, count: 1, sections: [section("N", ["n1"])]),  // B N C
                .moveSection(from: 2, to: 0),  // C B N
                .changeSections(index: 2, count: 1, sections: [newN]),  // C B N'
                .removeItems(section: 1, index: 0, count: 1),  // b2 b3
                .moveItem(section: 1, from: 1, to: 0),  // b3 b2
                .insertItems(section: 1, index: 2, count: 1, items: [item("b4")]),  // b3 b2 b4
                .changeItems(section: 1, index: 0, count: 1, items: [item("b3", "2")]),  // b3' b2 b4
            ])
        let expected = finished([section("C", ["c1"]), section("B", [item("b3", "2"), item("b2"), item("b4")]), newN])
        #expect(try old.applying(sequential: sequential) == expected)
    }

    @Test("A step out of range at its moment, an unknown section or a count that disagrees with its values is rejected")
    func malformedStepsAreRejected() {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"])])
        func rejects(_ expected: DeltaApplyError, _ operations: [FeedDelta.Operation], sourceLocation: SourceLocation = #_sourceLocation) {
            let sequential = FeedDelta.Sequential(header: header(["A", "B"]), operations: operations)
            #expect(throws: expected, sourceLocation: sourceLocation) { try old.applying(sequential: sequential) }
        }
        // Removing section 0 leaves one section: index 1 no longer exists.
        rejects(
            .sectionIndexOutOfRange(operation: "operations[1]", index: 1, count: 1),
            [
                .removeSections(index: 0, count: 1), .removeSections(index: 1, count: 1),
            ])
        rejects(
            .itemIndexOutOfRange(operation: "operations[0]", section: 0, index: 2, count: 2),
            [
                .removeItems(section: 0, index: 1, count: 2)
            ])
        rejects(
            .countMismatch("operations[0]: count 2 but 1 values"),
            [
                .insertItems(section: 1, index: 0, count: 2, items: [item("b0")])
            ])
        rejects(
            .unknownSection(operation: "operations[0]", section: 2, count: 2),
            [
                .changeItems(section: 2, index: 0, count: 1, items: [item("x")])
            ])
        rejects(
            .itemIndexOutOfRange(operation: "operations[0]", section: 0, index: 2, count: 2),
            [
                .moveItem(section: 0, from: 0, to: 2)
            ])
        rejects(
            .countMismatch("section_versions has 2 versions for 3 sections"),
            [
                .insertSections(index: 2, count: 1, sections: [section("C", ["c1"])])
            ])
    }
}

@Suite("Applying JSON Patch deltas")
struct JSONPatchApplyTests {
    @Test("A patch on the document's JSON: add, remove, move, replace, test, copy and '-' all follow RFC 6902")
    func patchAppliesToTheDocumentJSON() throws {
        let old = document([section("A", ["a1", "a2"]), section("B", ["b1"])])
        let patch = FeedDelta.JSONPatch(
            header: header(["B", "A"]),
            operations: [
                PatchOperation(op: .test, path: "/sections/0/items/1/id", value: "a2"),
                PatchOperation(op: .remove, path: "/sections/0/items/0"),
                PatchOperation(op: .add, path: "/sections/0/items/-", value: item("a3").json),
                PatchOperation(op: .copy, path: "/sections/0/items/0", from: "/sections/1/items/0"),
                PatchOperation(op: .move, path: "/sections/0", from: "/sections/1"),
                PatchOperation(op: .replace, path: "/sections/0/version", value: "v-B"),
                PatchOperation(op: .replace, path: "/sections/1/version", value: "v-A"),
                PatchOperation(op: .replace, path: "/snapshot", value: "new"),
                PatchOperation(op: .replace, path: "/next_cursor", value: .null),
            ])
        let expected = finished([section("B", ["b1"]), section("A", ["b1", "a2", "a3"])])
        #expect(try old.applying(jsonPatch: patch) == expected)
    }

    @Test("An operation that does not apply, or a result that disagrees with the header, is rejected")
    func failingPatchesAreRejected() {
        let old = document([section("A", ["a1"])])
        func rejects(_ expected: DeltaApplyError, _ operations: [PatchOperation], sourceLocation: SourceLocation = #_sourceLocation) {
            let patch = FeedDelta.JSONPatch(header: header(["A"], cursor: "o4"), operations: operations)
            #expect(throws: expected, sourceLocation: sourceLocation) { try old.applying(jsonPatch: patch) }
        }
        rejects(
            .patchFailed(operation: 0, reason: "remove /sections/1: index 1 is out of range (1 elements)"),
            [
                PatchOperation(op: .remove, path: "/sections/1")
            ])
        rejects(
            .patchFailed(operation: 0, reason: "replace /sections/01: \"01\" is not an array index"),
            [
                PatchOperation(op: .replace, path: "/sections/01", value: "x")
            ])
        rejects(
            .patchFailed(operation: 0, reason: #"test /snapshot: test failed: the value is "old""#),
            [
                PatchOperation(op: .test, path: "/snapshot", value: "other")
            ])
        rejects(
            .patchFailed(operation: 0, reason: "move /sections/0/items: cannot move /sections/0 into its own child"),
            [
                PatchOperation(op: .move, path: "/sections/0/items", from: "/sections/0")
            ])
        rejects(
            .resultMismatch("/sections/0 (A) has version old-A, section_versions says v-A"),
            [
                PatchOperation(op: .replace, path: "/snapshot", value: "new")
            ])
        rejects(
            .invalidDocument("sections[0].items[0].id: must be a string"),
            [
                PatchOperation(op: .replace, path: "/sections/0/items/0/id", value: 7)
            ])
    }
}

@Suite("Decoding deltas and JSON")
struct DecodingTests {
    static let batchText = """
        {"format":"batch","since":"old","snapshot":"new","next_cursor":null,"section_versions":["v-N","v-A"],"change_count":2,
         "sections":{"deletes":[],"inserts":[0],"moves":[],"reloads":[]},
         "items":{"deletes":[[0,1]],"inserts":[],"moves":[],"reloads":[]},
         "inserted_sections":[{"index":0,"section":{"id":"N","kind":"ad","version":"v-N","columns":1,
           "items":[{"id":"ad:1","kind":"ad","version":"9","data":{"title":"Sale \\u00e9 \\ud83c\\udf89","n":1.5e3},"size":{"width":366,"height":261}}]}}],
         "reloaded_sections":[],"inserted_items":[],"reloaded_items":[]}
        """

    @Test("A batch delta from the wire decodes, applies, and re-encodes to the same value")
    func batchDeltaRoundTrips() throws {
        let delta = try FeedDelta(parsing: Array(DecodingTests.batchText.utf8))
        guard case .batch(let batch) = delta else {
            Issue.record("decoded as \(delta.format)")
            return
        }
        #expect(batch.insertedSections.first?.section.items.first?.data["title"] == "Sale é 🎉")
        #expect(batch.insertedSections.first?.section.items.first?.data["n"] == .double(1500))
        #expect(batch.insertedSections.first?.section.items.first?.size == FeedDocument.Size(width: 366, height: 261))
        #expect(try FeedDelta(json: delta.json) == delta)
        #expect(try FeedDelta(parsing: delta.json.serialized()) == delta)

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
                #"{"format":"batch","since":"a","snapshot":"b","section_versions":[],"change_count":0,"sections":{"deletes":[[1]],"inserts":[],"moves":[],"reloads":[]}}"#,
                "sections.deletes[0]"
            ),
            (
                #"{"format":"batch","since":"a","snapshot":"b","section_versions":[],"change_count":0,"sections":{"deletes":[],"inserts":[],"moves":[[0,1]],"reloads":[]},"items":{"deletes":[[0,"1"]],"inserts":[],"moves":[],"reloads":[]}}"#,
                "items.deletes[0][1]"
            ),
            (#"{"format":"diff","since":"a","snapshot":"b","section_versions":[],"change_count":0}"#, "format"),
            (
                #"{"format":"sequential","since":"a","snapshot":"b","section_versions":[],"change_count":0,"operations":[{"op":"explode","target":"sections","index":0,"count":1}]}"#,
                "operations[0].op"
            ),
            (
                #"{"format":"sequential","since":"a","snapshot":"b","section_versions":[],"change_count":0,"operations":[{"op":"remove","target":"items","index":0,"count":1}]}"#,
                "operations[0].section"
            ),
            (#"{"format":"jsonpatch","since":"a","snapshot":"b","section_versions":[],"change_count":0,"patch":[{"op":"add","path":"/x"}]}"#, "patch[0].value"),
            (#"{"format":"jsonpatch","since":"a","snapshot":"b","section_versions":["x",1],"change_count":0,"patch":[]}"#, "section_versions[1]"),
        ])
    func malformedDeltasAreRejected(text: String, path: String) {
        let error = #expect(throws: FeedDecodingError.self) { try FeedDelta(parsing: Array(text.utf8)) }
        #expect(error?.path == path, "\(String(describing: error))")
    }

    @Test("JSON parsing is exact: numbers, escapes and surrogate pairs; invalid texts are rejected")
    func jsonParsing() throws {
        let value = try JSONValue(
            parsing: #" {"a":[1,-0,2.5,1e2,9223372036854775807,9223372036854775808,true,false,null],"s":"q\"\\\/\b\f\n\r\t\u0041\u00e9\ud83d\ude00"} "#)
        // 2^63 is beyond Int64, and 9.223372036854776e18 (what a Double would say) is not its value: kept as written.
        let twoToThe63 = try JSONValue(parsing: "9223372036854775808")
        guard case .number(let exact) = twoToThe63 else { throw TestFailure("2^63 parsed as \(twoToThe63)") }
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
