import ListDiff
import Testing

/// The apply functions reject every batch UIKit would reject.
@Suite("Apply rules")
struct ApplyTests {
    let old = cells(ids: [0, 1, 2])

    func kind(_ body: () throws -> Void) -> ApplyError.Kind? {
        do {
            try body()
            return nil
        } catch {
            return (error as? ApplyError)?.kind
        }
    }

    @Test("When an index is deleted twice that the batch is rejected") func whenAnIndexIsDeletedTwice_thatTheBatchIsRejected() {
        #expect(kind { _ = try BatchUpdate(deletes: [1, 1]).apply(to: old, newElements: cells(ids: [0])) } == .duplicateSource)
    }

    @Test("When a moved index is also reloaded that the batch is rejected") func whenAMovedIndexIsAlsoReloaded_thatTheBatchIsRejected() {
        let update = BatchUpdate(moves: [Move(from: 2, to: 0)], reloads: [2])
        #expect(kind { _ = try update.apply(to: old, newElements: old) } == .duplicateSource)
    }

    @Test("When two inserts share a position that the batch is rejected") func whenTwoInsertsShareAPosition_thatTheBatchIsRejected() {
        let update = BatchUpdate(deletes: [0, 1], inserts: [0, 0])
        #expect(kind { _ = try update.apply(to: old, newElements: old) } == .duplicateDestination)
    }

    @Test("When an index is out of range that the batch is rejected") func whenAnIndexIsOutOfRange_thatTheBatchIsRejected() {
        #expect(kind { _ = try BatchUpdate(deletes: [3]).apply(to: old, newElements: cells(ids: [0, 1])) } == .indexOutOfRange)
        #expect(kind { _ = try BatchUpdate(inserts: [-1]).apply(to: old, newElements: cells(ids: [0, 1, 2, 3])) } == .indexOutOfRange)
    }

    @Test("When counts do not add up that the batch is rejected") func whenCountsDoNotAddUp_thatTheBatchIsRejected() {
        #expect(kind { _ = try BatchUpdate(inserts: [0]).apply(to: old, newElements: old) } == .countMismatch)
    }

    static let sections = [
        Group(id: 1, title: 0, items: cells((10, 0), (11, 0))),
        Group(id: 2, title: 0, items: cells((20, 0))),
    ]

    @Test("When an item operation names a changed section that the batch is rejected") func whenAnItemOperationNamesAChangedSection_thatTheBatchIsRejected() {
        let sections = Self.sections
        let insertedSection = SectionedBatchUpdate(
            sectionDeletes: [0], sectionInserts: [0], itemInserts: [ItemPath(section: 0, item: 0)])
        #expect(kind { _ = try insertedSection.apply(to: sections, newSections: sections) } == .operationInChangedSection)
        let deletedSection = SectionedBatchUpdate(
            sectionDeletes: [1], sectionInserts: [1], itemDeletes: [ItemPath(section: 1, item: 0)])
        #expect(kind { _ = try deletedSection.apply(to: sections, newSections: sections) } == .operationInChangedSection)
        let reloadedSection = SectionedBatchUpdate(sectionReloads: [0], itemReloads: [ItemPath(section: 0, item: 0)])
        #expect(kind { _ = try reloadedSection.apply(to: sections, newSections: sections) } == .operationInChangedSection)
        let movedSection = SectionedBatchUpdate(
            sectionMoves: [Move(from: 1, to: 0)], itemDeletes: [ItemPath(section: 1, item: 0)])
        let swapped = [sections[1], sections[0]]
        #expect(kind { _ = try movedSection.apply(to: sections, newSections: swapped) } == .operationInChangedSection)
    }

    @Test("When item counts do not add up in a section that the batch is rejected") func whenItemCountsDoNotAddUpInASection_thatTheBatchIsRejected() {
        let update = SectionedBatchUpdate(itemDeletes: [ItemPath(section: 0, item: 0)])
        let error: ApplyError?
        do {
            _ = try update.apply(to: Self.sections, newSections: Self.sections)
            error = nil
        } catch let thrown {
            error = thrown
        }
        #expect(error?.kind == .countMismatch)
        #expect(error?.section == 0)
    }

    @Test("When an item moves across sections that the batch moves it like UI kit") func whenAnItemMovesAcrossSections_thatTheBatchMovesItLikeUIKit() throws {
        let new = [
            Group(id: 1, title: 0, items: cells((10, 0))),
            Group(id: 2, title: 0, items: cells((20, 0), (11, 0))),
        ]
        let update = SectionedBatchUpdate(
            itemMoves: [Move(from: ItemPath(section: 0, item: 1), to: ItemPath(section: 1, item: 1))])
        let rebuilt = try update.apply(to: Self.sections, newSections: new)
        #expect(rebuilt.map(SectionShape.init) == new.map(SectionShape.init))
    }

    @Test("When a sequential step is out of range at its moment that it is rejected") func whenASequentialStepIsOutOfRangeAtItsMoment_thatItIsRejected() {
        let steps = SequentialUpdate(operations: [.remove(at: 2, count: 1), .remove(at: 2, count: 1)])
        #expect(kind { _ = try steps.apply(to: old, newElements: cells(ids: [0])) } == .indexOutOfRange)
        let empty = SequentialUpdate(operations: [.insert(at: 0, count: 0)])
        #expect(kind { _ = try empty.apply(to: old, newElements: old) } == .malformedOperation)
        let short = SequentialUpdate(operations: [.remove(at: 0, count: 1)])
        #expect(kind { _ = try short.apply(to: old, newElements: old) } == .countMismatch)
    }

    @Test("When a patch path is not an index of the array that it is rejected") func whenAPatchPathIsNotAnIndexOfTheArray_thatItIsRejected() {
        let outside = JSONPatch(operations: [JSONPatchOperation(kind: .remove, path: "/other/0")])
        #expect(kind { _ = try outside.apply(to: old, newElements: cells(ids: [1, 2]), at: "/items") } == .invalidPath)
        let leadingZero = JSONPatch(operations: [JSONPatchOperation(kind: .remove, path: "/01")])
        #expect(kind { _ = try leadingZero.apply(to: old, newElements: cells(ids: [1, 2])) } == .invalidPath)
        let noValue = JSONPatch(operations: [JSONPatchOperation(kind: .add, path: "/0")])
        #expect(kind { _ = try noValue.apply(to: old, newElements: cells(ids: [9, 0, 1, 2])) } == .malformedOperation)
        let sectionValueForItem = JSONPatch(operations: [
            JSONPatchOperation(kind: .replace, path: "/sections/0/items/0", value: .section(0))
        ])
        #expect(kind { _ = try sectionValueForItem.apply(to: Self.sections, newSections: Self.sections) } == .malformedOperation)
    }
}

@Suite("JSON Pointer")
struct JSONPointerTests {
    @Test("When tokens hold slashes and tildes that they are escaped") func whenTokensHoldSlashesAndTildes_thatTheyAreEscaped() {
        let pointer = JSONPointer(tokens: ["a/b", "m~n", "", "0"])
        #expect(pointer.description == "/a~1b/m~0n//0")
        #expect(JSONPointer(parsing: pointer.description) == pointer)
        #expect(JSONPointer(parsing: "") == JSONPointer())
        #expect(JSONPointer(parsing: "/")?.tokens == [""])
        #expect(JSONPointer(parsing: "/~01")?.tokens == ["~1"])
    }

    @Test("When a string is not a pointer that parsing fails") func whenAStringIsNotAPointer_thatParsingFails() {
        #expect(JSONPointer(parsing: "a") == nil)
        #expect(JSONPointer(parsing: "/~2") == nil)
        #expect(JSONPointer(parsing: "/a~") == nil)
    }

    @Test("When a token is an array index that it parses") func whenATokenIsAnArrayIndex_thatItParses() {
        #expect(JSONPointer.arrayIndex("0") == 0)
        #expect(JSONPointer.arrayIndex("42") == 42)
        #expect(JSONPointer.arrayIndex("01") == nil)
        #expect(JSONPointer.arrayIndex("-") == nil)
        #expect(JSONPointer.arrayIndex("") == nil)
        #expect(JSONPointer.arrayIndex("4a") == nil)
    }

    @Test("When paths are configured that item arrays nest under sections") func whenPathsAreConfigured_thatItemArraysNestUnderSections() {
        let paths = JSONPatchPaths(sections: "/data/sections", items: "/entries/list")
        #expect(paths.itemsArray(ofSection: 3).description == "/data/sections/3/entries/list")
        #expect(JSONPatchPaths().itemsArray(ofSection: 0).description == "/sections/0/items")
    }
}
