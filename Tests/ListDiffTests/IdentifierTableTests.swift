import ListDiff
import Testing

/// Identifiers whose hashes all collide: every lookup walks the probe chain.
struct CollidingID: Hashable {
    var value: Int
    func hash(into hasher: inout Hasher) { hasher.combine(0) }
}

@Suite("Identifier lookups")
struct IdentifierTableTests {
    @Test("When identifiers are strings that lookups find first occurrences across growth")
    func whenIdentifiersAreStrings_thatLookupsFindFirstOccurrencesAcrossGrowth() {
        // 50 old identifiers, 5,000 new ones: inserted identifiers grow the table
        // far past the capacity reserved for the old list.
        let old = (0..<50).map { "id-\($0 * 2)" }
        let new = (0..<5_000).map { "id-\($0)" } + ["id-7"]
        let diff = IndexDiff(old: old, new: new, identifier: { $0 }, isContentEqual: ==)
        for (index, id) in old.enumerated() { #expect(diff.oldIndex(for: id) == index) }
        for (index, id) in new.prefix(5_000).enumerated() { #expect(diff.newIndex(for: id) == index) }
        #expect(diff.oldIndex(for: "id-7") == nil)
        #expect(diff.newIndex(for: "absent") == nil)
        #expect(diff.inserts.count == 5_001 - 50)
    }

    @Test("When every hash collides that matching is still exact") func whenEveryHashCollides_thatMatchingIsStillExact() throws {
        let old = (0..<300).map { CollidingID(value: $0) }
        let new = old.reversed().filter { $0.value % 3 != 0 } + [CollidingID(value: 1_000)]
        let diff = IndexDiff(old: old, new: new, identifier: { $0 }, isContentEqual: ==)
        #expect(diff.deletes == old.indices.filter { $0 % 3 == 0 })
        #expect(diff.moves.count == new.count - 2)
        #expect(diff.newIndex(for: CollidingID(value: 1_000)) == new.count - 1)
        #expect(try diff.batch.apply(to: old, newElements: new) == new)
    }

    @Test("When old identifier is deleted that it has no new index") func whenOldIdentifierIsDeleted_thatItHasNoNewIndex() {
        let diff = IndexDiff(old: cells(ids: [1, 2, 2]), new: cells(ids: [2]))
        #expect(diff.oldIndex(for: 1) == 0)
        #expect(diff.newIndex(for: 1) == nil)
        #expect(diff.oldIndex(for: 2) == 1)
        #expect(diff.newIndex(for: 2) == 0)
        #expect(diff.deletes == [0, 2])
    }
}
