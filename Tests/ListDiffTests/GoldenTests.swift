import ListDiff
import Testing

@Suite("Golden cases")
struct GoldenTests {
    // Heckel, "A technique for isolating differences between files" (CACM,
    // 1978), figure 1, with words as elements.
    //
    // Old (23 words): MUCH WRITING IS LIKE SNOW , A MASS OF LONG WORDS AND
    // PHRASES FALLS UPON THE RELEVANT FACTS COVERING UP THE DETAILS .
    // New (19 words): A MASS OF LATIN WORDS FALLS UPON THE RELEVANT FACTS LIKE
    // SOFT SNOW , COVERING UP THE DETAILS .
    //
    // THE occurs twice in both: old 15 ↔ new 7 and old 20 ↔ new 16 (k-th
    // occurrence rule). Deleted: MUCH WRITING IS (0-2), LONG (9), AND PHRASES
    // (11, 12). Inserted: LATIN (3), SOFT (11). The 17 common words, as old
    // indexes in new order, are 6 7 8 10 13 14 15 16 17 3 4 5 18 19 20 21 22:
    // a longest increasing run has 14 of them, so the fewest moves is 3 —
    // LIKE, SNOW and ",". IGListKit moves every common word whose rank among
    // the common words changed: the 9 words from A to FACTS and LIKE SNOW ,,
    // 12 in all; COVERING UP THE DETAILS . keep their rank.
    static let heckelOld = tokens(
        "MUCH WRITING IS LIKE SNOW , A MASS OF LONG WORDS AND PHRASES FALLS UPON THE RELEVANT FACTS COVERING UP THE DETAILS .")
    static let heckelNew = tokens(
        "A MASS OF LATIN WORDS FALLS UPON THE RELEVANT FACTS LIKE SOFT SNOW , COVERING UP THE DETAILS .")

    @Test("When heckels paper example is diffed that three moves and the expected edits are reported")
    func whenHeckelsPaperExampleIsDiffed_thatThreeMovesAndTheExpectedEditsAreReported() throws {
        let diff = IndexDiff(old: Self.heckelOld, new: Self.heckelNew)
        #expect(diff.deletes == [0, 1, 2, 9, 11, 12])
        #expect(diff.inserts == [3, 11])
        #expect(diff.updates == [])
        #expect(diff.moves == [Move(from: 3, to: 10), Move(from: 4, to: 12), Move(from: 5, to: 13)])
        #expect(diff.changeCount == 6 + 2 + 3)
        #expect(diff.newIndex(forOldIndex: 15) == 7)
        #expect(diff.newIndex(forOldIndex: 20) == 16)
        #expect(diff.oldIndex(for: "THE") == 15)
        #expect(diff.newIndex(for: "THE") == 7)
        #expect(diff.newIndex(for: "LATIN") == 3)
        #expect(diff.newIndex(for: "MUCH") == nil)
        #expect(try diff.batch.apply(to: Self.heckelOld, newElements: Self.heckelNew) == Self.heckelNew)
        #expect(try diff.sequential.apply(to: Self.heckelOld, newElements: Self.heckelNew) == Self.heckelNew)
        #expect(try diff.jsonPatch().apply(to: Self.heckelOld, newElements: Self.heckelNew) == Self.heckelNew)
    }

    @Test("When heckels paper example is diffed like IG list kit that twelve moves are reported")
    func whenHeckelsPaperExampleIsDiffedLikeIGListKit_thatTwelveMovesAreReported() throws {
        let diff = IndexDiff(old: Self.heckelOld, new: Self.heckelNew, options: DiffOptions(moves: .heckel))
        #expect(diff.moves.map(\.to) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 12, 13])
        #expect(diff.deletes == [0, 1, 2, 9, 11, 12])
        #expect(diff.inserts == [3, 11])
        #expect(try diff.batch.apply(to: Self.heckelOld, newElements: Self.heckelNew) == Self.heckelNew)
        #expect(try diff.sequential.apply(to: Self.heckelOld, newElements: Self.heckelNew) == Self.heckelNew)
    }

    // IGListKit's README: a user with primary key 2 renamed from "Shayne" to
    // "Ann" is the same user with new content.
    struct User: Diffable, Equatable {
        var primaryKey: Int
        var name: String
        var diffIdentifier: Int { primaryKey }
        func isContentEqual(to other: User) -> Bool { name == other.name }
    }

    @Test("When user is renamed that it is an update not a delete and insert") func whenUserIsRenamed_thatItIsAnUpdateNotADeleteAndInsert() throws {
        let old = [User(primaryKey: 1, name: "Ryan"), User(primaryKey: 2, name: "Shayne")]
        let new = [User(primaryKey: 1, name: "Ryan"), User(primaryKey: 2, name: "Ann")]
        let diff = IndexDiff(old: old, new: new)
        #expect(diff.updates == [1])
        #expect(diff.inserts.isEmpty && diff.deletes.isEmpty && diff.moves.isEmpty)
        #expect(diff.batch == BatchUpdate(reloads: [1]))
        #expect(diff.sequential.operations == [.change(at: 1, count: 1)])
        #expect(try diff.batch.apply(to: old, newElements: new) == new)
    }

    @Test("When both lists are empty that nothing changes") func whenBothListsAreEmpty_thatNothingChanges() {
        let diff = IndexDiff(old: [Cell](), new: [])
        #expect(!diff.hasChanges)
        #expect(diff.changeCount == 0)
        #expect(diff.batch.isEmpty)
        #expect(diff.sequential.operations.isEmpty)
        #expect(diff.jsonPatch().operations.isEmpty)
    }

    @Test("When old is empty that every element is inserted in one run") func whenOldIsEmpty_thatEveryElementIsInsertedInOneRun() throws {
        let new = cells(ids: [1, 2, 3])
        let diff = IndexDiff(old: [], new: new)
        #expect(diff.inserts == [0, 1, 2])
        #expect(diff.sequential.operations == [.insert(at: 0, count: 3)])
        #expect(diff.jsonPatch(at: "/items").operations.map(\.path.description) == ["/items/0", "/items/1", "/items/2"])
        #expect(try diff.batch.apply(to: [], newElements: new) == new)
    }

    @Test("When new is empty that every element is deleted in one run") func whenNewIsEmpty_thatEveryElementIsDeletedInOneRun() throws {
        let old = cells(ids: [1, 2, 3])
        let diff = IndexDiff(old: old, new: [])
        #expect(diff.deletes == [0, 1, 2])
        #expect(diff.sequential.operations == [.remove(at: 0, count: 3)])
        // JSON Patch removes from the highest index down.
        #expect(diff.jsonPatch().operations.map(\.path.description) == ["/2", "/1", "/0"])
        #expect(try diff.jsonPatch().apply(to: old, newElements: []) == [])
    }

    @Test("When list is reversed that n minus one moves are reported", arguments: [2, 3, 10, 101])
    func whenListIsReversed_thatNMinusOneMovesAreReported(count: Int) throws {
        let old = cells(ids: Array(0..<count))
        let new = Array(old.reversed())
        let diff = IndexDiff(old: old, new: new)
        #expect(diff.moves.count == count - 1)
        #expect(try diff.sequential.apply(to: old, newElements: new) == new)
        // IGListKit moves every element whose index changed: all but the middle
        // one of an odd count.
        let heckel = IndexDiff(old: old, new: new, options: DiffOptions(moves: .heckel))
        #expect(heckel.moves.count == count - count % 2)
        #expect(try heckel.batch.apply(to: old, newElements: new) == new)
    }

    @Test("When last moves to front that one move is reported") func whenLastMovesToFront_thatOneMoveIsReported() throws {
        let old = cells(ids: Array(0..<10))
        var new = old
        new.insert(new.removeLast(), at: 0)
        let diff = IndexDiff(old: old, new: new)
        #expect(diff.moves == [Move(from: 9, to: 0)])
        #expect(diff.batch == BatchUpdate(moves: [Move(from: 9, to: 0)]))
        #expect(diff.sequential.operations == [.move(from: 9, to: 0)])
        #expect(diff.jsonPatch().operations == [JSONPatchOperation(kind: .move, path: "/0", from: "/9")])
    }

    @Test("When last moves to front like IG list kit that every element is moved") func whenLastMovesToFrontLikeIGListKit_thatEveryElementIsMoved() throws {
        let old = cells(ids: Array(0..<10))
        var new = old
        new.insert(new.removeLast(), at: 0)
        let diff = IndexDiff(old: old, new: new, options: DiffOptions(moves: .heckel))
        #expect(diff.moves.count == 10)
        #expect(diff.moves == referenceHeckelMoves(old: old.map(\.id), new: new.map(\.id)))
        #expect(try diff.batch.apply(to: old, newElements: new) == new)
    }

    @Test("When adjacent pair is swapped that one move is reported") func whenAdjacentPairIsSwapped_thatOneMoveIsReported() {
        let diff = IndexDiff(old: cells(ids: [0, 1, 2, 3]), new: cells(ids: [0, 2, 1, 3]))
        #expect(diff.moves.count == 1)  // 4 common − LIS 3 (0 1 3 or 0 2 3)
    }

    @Test("When distant pair is swapped that two moves are reported") func whenDistantPairIsSwapped_thatTwoMovesAreReported() {
        let diff = IndexDiff(old: cells(ids: [0, 1, 2, 3, 4]), new: cells(ids: [0, 3, 2, 1, 4]))
        #expect(diff.moves.count == 2)  // 5 common − LIS 3 (0 2 4, or 0 1 4, ...)
    }

    @Test("When duplicates are at the top that kth occurrences are matched") func whenDuplicatesAreAtTheTop_thatKthOccurrencesAreMatched() throws {
        // Ids 7 7 7 at the top of the old list, 7 7 in the new one: old 0 ↔ new 0,
        // old 1 ↔ new 1; old 2 is deleted. Content decides per pair.
        let old = cells((7, 0), (7, 1), (7, 2), (1, 0))
        let new = cells((7, 0), (7, 5), (1, 0), (2, 0))
        let diff = IndexDiff(old: old, new: new)
        #expect(diff.newIndex(forOldIndex: 0) == 0)
        #expect(diff.newIndex(forOldIndex: 1) == 1)
        #expect(diff.deletes == [2])
        #expect(diff.updates == [1])
        #expect(diff.inserts == [3])
        #expect(diff.moves.isEmpty)
        #expect(diff.oldIndex(for: 7) == 0)
        #expect(diff.newIndex(for: 2) == 3)
        #expect(try diff.batch.apply(to: old, newElements: new) == new)
    }

    @Test("When every identifier is the same that occurrences pair in order") func whenEveryIdentifierIsTheSame_thatOccurrencesPairInOrder() throws {
        let old = (0..<500).map { Cell(id: 0, content: $0 % 3) }
        let new = (0..<300).map { Cell(id: 0, content: $0 % 2) }
        let diff = IndexDiff(old: old, new: new)
        #expect(diff.deletes == Array(300..<500))
        #expect(diff.moves.isEmpty)
        #expect(diff.updates == (0..<300).filter { $0 % 3 != $0 % 2 })
        #expect(try diff.sequential.apply(to: old, newElements: new) == new)
    }

    @Test("When moved element is also updated that the batch deletes and inserts it") func whenMovedElementIsAlsoUpdated_thatTheBatchDeletesAndInsertsIt()
        throws
    {
        let old = cells((1, 0), (2, 0), (3, 0))
        let new = cells((3, 1), (1, 0), (2, 0))
        let diff = IndexDiff(old: old, new: new)
        #expect(diff.moves == [Move(from: 2, to: 0)])
        #expect(diff.updates == [2])
        #expect(diff.batch == BatchUpdate(deletes: [2], inserts: [0]))
        // The other forms keep the move and change the content afterwards.
        #expect(diff.sequential.operations == [.move(from: 2, to: 0), .change(at: 0, count: 1)])
        #expect(try diff.batch.apply(to: old, newElements: new) == new)
    }

    @Test("When a few edits are made that each form lists the expected steps") func whenAFewEditsAreMade_thatEachFormListsTheExpectedSteps() throws {
        // A B C D E → E A C' X D: B deleted, X inserted, C updated, E moved.
        let old = cells((1, 0), (2, 0), (3, 0), (4, 0), (5, 0))
        let new = cells((5, 0), (1, 0), (3, 1), (9, 0), (4, 0))
        let diff = IndexDiff(old: old, new: new)
        #expect(diff.batch == BatchUpdate(deletes: [1], inserts: [3], moves: [Move(from: 4, to: 0)], reloads: [2]))
        #expect(
            diff.sequential.operations == [
                .remove(at: 1, count: 1), .move(from: 3, to: 0), .insert(at: 3, count: 1), .change(at: 2, count: 1),
            ])
        #expect(
            diff.jsonPatch().operations == [
                JSONPatchOperation(kind: .remove, path: "/1"),
                JSONPatchOperation(kind: .move, path: "/0", from: "/3"),
                JSONPatchOperation(kind: .add, path: "/3", value: .element(3)),
                JSONPatchOperation(kind: .replace, path: "/2", value: .element(2)),
            ])
        #expect(try diff.jsonPatch().apply(to: old, newElements: new) == new)
    }

    @Test("When runs are adjacent that sequential steps are coalesced") func whenRunsAreAdjacent_thatSequentialStepsAreCoalesced() {
        let old = cells(ids: [1, 2, 3, 4, 5, 6])
        let new = cells((1, 1), (2, 1), (9, 0), (8, 0), (6, 0))
        let diff = IndexDiff(old: old, new: new)
        #expect(
            diff.sequential.operations == [
                .remove(at: 2, count: 3), .insert(at: 2, count: 2), .change(at: 0, count: 2),
            ])
    }

    @Test("When identity mode compares values that every matched pair is an update") func whenIdentityModeComparesValues_thatEveryMatchedPairIsAnUpdate() {
        let old = cells((1, 0), (2, 0))
        let new = cells((2, 0), (1, 0))
        let diff = IndexDiff(old: old, new: new, options: DiffOptions(mode: .identity))
        #expect(diff.updates == [0, 1])
        #expect(diff.moves.count == 1)
        // Both moved-and-updated or reloaded: the batch never reloads a moved element.
        #expect(diff.batch.moves.isEmpty)
    }

    @Test("When identity mode compares objects that only other instances are updates") func whenIdentityModeComparesObjects_thatOnlyOtherInstancesAreUpdates()
        throws
    {
        let a = Box(1, 0)
        let b = Box(2, 0)
        let old = [a, b]
        let new = [a, Box(2, 0)]  // same content, another instance
        let identity = IndexDiff(old: old, new: new, options: DiffOptions(mode: .identity))
        #expect(identity.updates == [1])
        let equality = IndexDiff(old: old, new: new)
        #expect(equality.updates == [])
        let rebuilt = try identity.batch.apply(to: old, newElements: new)
        #expect(rebuilt[0] === a && rebuilt[1] === new[1])
    }

    @Test("When elements are not diffable that closures identify and compare them") func whenElementsAreNotDiffable_thatClosuresIdentifyAndCompareThem() throws
    {
        let old: [(key: String, value: Int)] = [("a", 1), ("b", 2), ("c", 3)]
        let new: [(key: String, value: Int)] = [("c", 3), ("a", 1), ("b", 5), ("d", 0)]
        let diff = IndexDiff(old: old, new: new, identifier: { $0.key }, isContentEqual: { $0.value == $1.value })
        #expect(diff.inserts == [3])
        #expect(diff.updates == [1])
        #expect(diff.moves == [Move(from: 2, to: 0)])
        #expect(diff.newIndex(for: "d") == 3)
        #expect(diff.oldIndex(for: "d") == nil)
        let rebuilt = try diff.batch.apply(to: old, newElements: new)
        #expect(rebuilt.map(\.key) == new.map(\.key) && rebuilt.map(\.value) == new.map(\.value))
    }
}
