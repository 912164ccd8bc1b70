import ListDiff
import Testing

@Suite("Sectioned golden cases")
struct SectionedTests {
    // Old: S1 [a b], S2 [c], S3 [d e]       (all titles 0)
    // New: S3 [e d], S1 [a b'], S2' [c]     (S2's title changed, b's content changed)
    //
    // S3 moves to the front and its items changed (e moved): in the batch it
    // becomes a section delete + insert. S2 changed its own content: reloaded,
    // so no item operation names it. S1 stays and reloads its item b.
    static let old = [
        Group(id: 1, title: 0, items: cells((10, 0), (11, 0))),
        Group(id: 2, title: 0, items: cells((20, 0))),
        Group(id: 3, title: 0, items: cells((30, 0), (31, 0))),
    ]
    static let new = [
        Group(id: 3, title: 0, items: cells((31, 0), (30, 0))),
        Group(id: 1, title: 0, items: cells((10, 0), (11, 1))),
        Group(id: 2, title: 1, items: cells((20, 0))),
    ]

    @Test("When moved section has item changes that the batch deletes and inserts it") func whenMovedSectionHasItemChanges_thatTheBatchDeletesAndInsertsIt()
        throws
    {
        let diff = SectionedDiff(oldSections: Self.old, newSections: Self.new)
        #expect(diff.sections.moves == [Move(from: 2, to: 0)])
        #expect(diff.sections.updates == [1])
        #expect(
            diff.batch
                == SectionedBatchUpdate(
                    sectionDeletes: [2], sectionInserts: [0], sectionReloads: [1],
                    itemReloads: [ItemPath(section: 0, item: 1)]))
        let rebuilt = try diff.batch.apply(to: Self.old, newSections: Self.new)
        #expect(rebuilt.map(SectionShape.init) == Self.new.map(SectionShape.init))
    }

    @Test("When sections change that sequential steps name sections as they stand") func whenSectionsChange_thatSequentialStepsNameSectionsAsTheyStand() throws
    {
        let diff = SectionedDiff(oldSections: Self.old, newSections: Self.new)
        #expect(
            diff.sequential.operations == [
                .section(.move(from: 2, to: 0)),
                .section(.change(at: 2, count: 1)),
                .item(section: 0, .move(from: 1, to: 0)),
                .item(section: 1, .change(at: 1, count: 1)),
            ])
        let rebuilt = try diff.sequential.apply(to: Self.old, newSections: Self.new)
        #expect(rebuilt.map(SectionShape.init) == Self.new.map(SectionShape.init))
    }

    @Test("When sections change that the JSON patch uses section and item paths") func whenSectionsChange_thatTheJSONPatchUsesSectionAndItemPaths() throws {
        let diff = SectionedDiff(oldSections: Self.old, newSections: Self.new)
        #expect(
            diff.jsonPatch().operations == [
                JSONPatchOperation(kind: .move, path: "/sections/0", from: "/sections/2"),
                JSONPatchOperation(kind: .replace, path: "/sections/2", value: .section(2)),
                JSONPatchOperation(kind: .move, path: "/sections/0/items/0", from: "/sections/0/items/1"),
                JSONPatchOperation(kind: .replace, path: "/sections/1/items/1", value: .item(ItemPath(section: 1, item: 1))),
            ])
        let paths = JSONPatchPaths(sections: "/feed", items: "/cards")
        #expect(diff.jsonPatch(paths: paths).operations.last?.path.description == "/feed/1/cards/1")
    }

    @Test("When item leaves one section for another that it is a delete and an insert") func whenItemLeavesOneSectionForAnother_thatItIsADeleteAndAnInsert()
        throws
    {
        let old = [Group(id: 1, title: 0, items: cells((10, 0), (11, 0))), Group(id: 2, title: 0, items: cells((20, 0)))]
        let new = [Group(id: 1, title: 0, items: cells((10, 0))), Group(id: 2, title: 0, items: cells((11, 0), (20, 0)))]
        let diff = SectionedDiff(oldSections: old, newSections: new)
        #expect(
            diff.batch
                == SectionedBatchUpdate(
                    itemDeletes: [ItemPath(section: 0, item: 1)], itemInserts: [ItemPath(section: 1, item: 0)]))
        #expect(diff.itemsDiff(forOldSection: 0)?.items.deletes == [1])
        #expect(diff.itemsDiff(forNewSection: 1)?.items.inserts == [0])
        #expect(diff.changeCount == 2)
    }

    @Test("When moved section keeps its items that the batch moves it") func whenMovedSectionKeepsItsItems_thatTheBatchMovesIt() throws {
        let old = [Group(id: 1, title: 0, items: cells((10, 0))), Group(id: 2, title: 0, items: cells((20, 0)))]
        let new = [Group(id: 2, title: 0, items: cells((20, 0))), Group(id: 1, title: 0, items: cells((10, 1)))]
        let diff = SectionedDiff(oldSections: old, newSections: new)
        // Section 1 stays (the longest run), section 2 moves without item
        // changes; section 1's item reload names its old and new places.
        #expect(
            diff.batch
                == SectionedBatchUpdate(
                    sectionMoves: [Move(from: 1, to: 0)], itemReloads: [ItemPath(section: 0, item: 0)]))
        let rebuilt = try diff.batch.apply(to: old, newSections: new)
        #expect(rebuilt.map(SectionShape.init) == new.map(SectionShape.init))
    }

    @Test("When section is inserted or deleted that no item operation names it") func whenSectionIsInsertedOrDeleted_thatNoItemOperationNamesIt() throws {
        let old = [Group(id: 1, title: 0, items: cells((10, 0)))]
        let new = [Group(id: 2, title: 0, items: cells((20, 0), (21, 0)))]
        let diff = SectionedDiff(oldSections: old, newSections: new)
        #expect(diff.batch == SectionedBatchUpdate(sectionDeletes: [0], sectionInserts: [0]))
        #expect(diff.sequential.operations == [.section(.remove(at: 0, count: 1)), .section(.insert(at: 0, count: 1))])
        #expect(diff.jsonPatch().operations.last?.value == .section(0))
    }

    @Test("When sections are given by closures that the diff matches the protocol one") func whenSectionsAreGivenByClosures_thatTheDiffMatchesTheProtocolOne() {
        let viaClosures = SectionedDiff(
            oldSections: Self.old, newSections: Self.new,
            sectionIdentifier: { $0.id }, isSectionContentEqual: { $0.title == $1.title },
            items: { $0.items }, itemIdentifier: { $0.id }, isItemContentEqual: { $0 == $1 })
        let viaProtocol = SectionedDiff(oldSections: Self.old, newSections: Self.new)
        #expect(viaClosures.batch == viaProtocol.batch)
        #expect(viaClosures.sequential == viaProtocol.sequential)
        #expect(viaClosures.hasChanges && viaClosures.changeCount == viaProtocol.changeCount)
    }
    @Test("When a new section shares its items with the old one that they are not compared")
    func whenANewSectionSharesItsItemsWithTheOldOne_thatTheyAreNotCompared() {
        // A snapshot patched in place takes over the item arrays of the sections it did not
        // touch: those need no comparison, as Array's == takes one storage to be equal.
        var changed = Self.old
        changed[1].items[0].content = 5
        var compared: [Int] = []
        let diff = SectionedDiff(
            oldSections: Self.old, newSections: changed,
            sectionIdentifier: { $0.id }, isSectionContentEqual: { $0.title == $1.title },
            items: { $0.items }, itemIdentifier: { $0.id },
            isItemContentEqual: { old, new in
                compared.append(old.id)
                return old == new
            })
        #expect(compared == [20])
        #expect(diff.batch == SectionedBatchUpdate(itemReloads: [ItemPath(section: 1, item: 0)]))
        #expect(diff.itemDiffs.map(\.items.oldCount) == [2, 1, 2])
        #expect(diff.itemDiffs[0].items.newIndex(for: 11) == 1)
    }
}
