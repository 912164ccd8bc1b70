import Deterministic
import ListDiff
import Testing

/// The forms built from the paths of items updated in place, against the diff of the two lists.
@Suite("Items updated in place")
struct InPlaceUpdateTests {
    @Test("When only items' contents change in place that the forms built from their paths equal the diff's, in every form")
    func whenOnlyItemsChangeInPlace_thatTheFormsFromTheirPathsEqualTheDiffs() {
        let seed: UInt64 = 0x1A_91ACE
        var random = SplitMix64(seed: seed)
        for iteration in 0..<2_000 {
            // Repeated identifiers too: the k-th occurrence keeps its match.
            let alphabet = 1 + random.below(random.chance(30) ? 3 : 40)
            let old = (0..<random.below(8)).map { _ in
                Group(id: random.below(alphabet), title: 0, items: randomCells(&random, count: random.below(12), alphabet: alphabet))
            }
            var new = old
            var updated: [ItemPath] = []
            for section in new.indices {
                for item in new[section].items.indices where random.chance(random.chance(50) ? 10 : 60) {
                    new[section].items[item].content += 1
                    updated.append(ItemPath(section: section, item: item))
                }
            }
            let diff = SectionedDiff(oldSections: old, newSections: new)
            let context = "seed \(seed) iteration \(iteration): \(updated)"
            #expect(SectionedBatchUpdate(reloadingItemsAt: updated) == diff.batch, "\(context)")
            let sequential = SectionedSequentialUpdate(changingItemsAt: updated)
            #expect(sequential == diff.sequential, "\(context)")
            #expect(sequential.jsonPatch() == diff.jsonPatch(), "\(context)")
            #expect(updated.count == diff.changeCount, "\(context)")
        }
    }

    @Test("Runs of consecutive updated items are one change each")
    func runsAreOneChangeEach() {
        let paths = [(0, 1), (0, 2), (0, 3), (0, 5), (2, 0), (2, 1)].map { ItemPath(section: $0.0, item: $0.1) }
        #expect(
            SectionedSequentialUpdate(changingItemsAt: paths).operations == [
                .item(section: 0, .change(at: 1, count: 3)), .item(section: 0, .change(at: 5, count: 1)),
                .item(section: 2, .change(at: 0, count: 2)),
            ])
    }
}
