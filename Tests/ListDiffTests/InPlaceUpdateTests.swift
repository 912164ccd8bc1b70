import Deterministic
import ListDiff
import Testing

/// The forms built from the paths of items updated in place, or deleted, inserted and updated in
/// their order, against the diff of the two lists.
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

    @Test("When items are deleted, inserted and updated in their order that the forms built from the edits equal the diff's, in every form")
    func whenItemsKeepTheirOrder_thatTheFormsFromTheEditsEqualTheDiffs() {
        let seed: UInt64 = 0x0_4DE_4ED
        var random = SplitMix64(seed: seed)
        var freshID = 1_000
        for iteration in 0..<2_000 {
            // Sections long and short (ListDiff scans short lists and hashes long ones), each
            // identifier once per section; some sections untouched.
            let old = (0..<random.below(8)).map { section in
                Group(id: section, title: 0, items: (0..<random.below(random.chance(30) ? 40 : 12)).map { Cell(id: $0 * 3, content: 0) })
            }
            var new = old
            var deletes: [ItemPath] = []
            var inserts: [ItemPath] = []
            var updates: [(old: ItemPath, new: ItemPath)] = []
            for section in old.indices where random.chance(70) {
                var items: [Cell] = []
                func insertSome() {
                    for _ in 0..<(random.chance(25) ? 1 + random.below(3) : 0) {
                        freshID += 1
                        inserts.append(ItemPath(section: section, item: items.count))
                        items.append(Cell(id: freshID, content: 0))
                    }
                }
                for (index, cell) in old[section].items.enumerated() {
                    insertSome()
                    if random.chance(20) {
                        deletes.append(ItemPath(section: section, item: index))
                        continue
                    }
                    var kept = cell
                    if random.chance(15) {
                        kept.content += 1
                        updates.append((ItemPath(section: section, item: index), ItemPath(section: section, item: items.count)))
                    }
                    items.append(kept)
                }
                insertSome()
                new[section].items = items
            }
            let edits = OrderedItemEdits(deletes: deletes, inserts: inserts, updates: updates)
            let diff = SectionedDiff(oldSections: old, newSections: new)
            let context = "seed \(seed) iteration \(iteration): deletes \(deletes) inserts \(inserts) updates \(updates)"
            #expect(edits.batch == diff.batch, "\(context)")
            #expect(edits.sequential == diff.sequential, "\(context)")
            #expect(edits.sequential.jsonPatch() == diff.jsonPatch(), "\(context)")
            #expect(edits.changeCount == diff.changeCount, "\(context)")
            for update in updates {
                let items = diff.itemsDiff(forOldSection: update.old.section)?.items
                #expect(edits.newPath(ofUpdatedItemAt: update.old) == update.new, "\(context)")
                #expect(items?.newIndex(forOldIndex: update.old.item) == update.new.item, "\(context)")
            }
            for delete in deletes { #expect(edits.newPath(ofUpdatedItemAt: delete) == nil, "\(context)") }
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
