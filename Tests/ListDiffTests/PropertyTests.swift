import Deterministic
import ListDiff
import Testing

/// Seeded random tests: every failure message names the seed and iteration,
/// so `SplitMix64(seed:)` and the loop below reproduce it.
@Suite("Random lists")
struct PropertyTests {
    @Test("When small random lists are diffed that every form rebuilds the new list") func whenSmallRandomListsAreDiffed_thatEveryFormRebuildsTheNewList() {
        let seed: UInt64 = 0x5EED_F1A7
        var random = SplitMix64(seed: seed)
        for iteration in 0..<10_000 {
            // Small alphabets make duplicates common.
            let alphabet = 1 + random.below(random.chance(40) ? 4 : 16)
            let old = randomCells(&random, count: random.below(11), alphabet: alphabet)
            let new = randomEdit(old, &random, alphabet: alphabet, maxCount: 10)
            checkFlatDiff(old: old, new: new, context: "seed \(seed) iteration \(iteration)")
        }
    }

    @Test("When lists keep their identifiers in order and change only contents that only updates are reported, lookups included")
    func whenListsKeepTheirIdentifiersInOrder_thatOnlyUpdatesAreReported() {
        // The diff takes a path of its own for these (no hash table): check it like any other,
        // and the lists one identifier away from it, which must take the general path.
        let seed: UInt64 = 0x5EED_0DE5
        var random = SplitMix64(seed: seed)
        for iteration in 0..<3_000 {
            let alphabet = 1 + random.below(random.chance(40) ? 4 : 16)
            // Most as short as a feed section (found by a scan); some past 32 (a table).
            let count = random.chance(20) ? 33 + random.below(48) : random.below(12)
            let old = randomCells(&random, count: count, alphabet: alphabet)
            var new = old
            for index in new.indices where random.chance(30) { new[index].content += 1 + random.below(3) }
            checkFlatDiff(old: old, new: new, context: "seed \(seed) iteration \(iteration) same order")
            let diff = IndexDiff(old: old, new: new)
            #expect(diff.inserts.isEmpty && diff.deletes.isEmpty && diff.moves.isEmpty)
            #expect(diff.updates == old.indices.filter { old[$0] != new[$0] })
            guard !new.isEmpty else { continue }
            new[random.below(new.count)].id += alphabet  // an identifier no list holds
            checkFlatDiff(old: old, new: new, context: "seed \(seed) iteration \(iteration) one identifier off")
        }
    }

    @Test("When lists around sixteen elements slide, grow or shrink that both ways of matching agree with the reference")
    func whenListsAroundSixteenElementsSlide_thatBothWaysOfMatchingAgreeWithTheReference() {
        // Up to 16 elements a side, identifiers are matched by a scan, past that by a table: a
        // feed's grid section with videos slid in at its top and out at its end, duplicates now
        // and then, on both sides of the limit.
        let seed: UInt64 = 0x5EED_16
        var random = SplitMix64(seed: seed)
        for iteration in 0..<2_000 {
            let count = 10 + random.below(12)
            let alphabet = random.chance(20) ? count / 2 + 1 : 4 * count
            let old = randomCells(&random, count: count, alphabet: alphabet)
            var new = old
            let slid = random.below(4)
            new.removeLast(min(slid, new.count))
            new.insert(contentsOf: randomCells(&random, count: slid + random.below(2), alphabet: alphabet), at: 0)
            if random.chance(30) { new = randomEdit(new, &random, alphabet: alphabet, maxCount: 20) }
            checkFlatDiff(old: old, new: new, context: "seed \(seed) iteration \(iteration)")
        }
    }

    @Test("When larger shuffled lists are diffed that moves stay minimal and forms apply")
    func whenLargerShuffledListsAreDiffed_thatMovesStayMinimalAndFormsApply() {
        let seed: UInt64 = 0x5EED_B16
        var random = SplitMix64(seed: seed)
        for iteration in 0..<300 {
            let count = 20 + random.below(200)
            let alphabet = random.chance(30) ? count / 4 + 1 : count * 2
            let old = randomCells(&random, count: count, alphabet: alphabet)
            var new = old
            for _ in 0..<random.below(count / 2 + 1) { new = randomEdit(new, &random, alphabet: alphabet) }
            if random.chance(30) { new.shuffle(using: &random) }
            checkFlatDiff(old: old, new: new, context: "seed \(seed) iteration \(iteration)")
        }
    }

    @Test("When objects are diffed in identity mode that forms rebuild the same instances")
    func whenObjectsAreDiffedInIdentityMode_thatFormsRebuildTheSameInstances() throws {
        let seed: UInt64 = 0x5EED_0B1
        var random = SplitMix64(seed: seed)
        for iteration in 0..<1_000 {
            let old = (0..<random.below(9)).map { _ in Box(random.below(6), 0) }
            var new = old.filter { _ in !random.chance(20) }
            for _ in 0..<random.below(4) { new.insert(Box(random.below(6), 0), at: random.below(new.count + 1)) }
            new.shuffle(using: &random)
            let diff = IndexDiff(old: old, new: new, options: DiffOptions(mode: .identity))
            let context = "seed \(seed) iteration \(iteration) old \(old) new \(new)"
            // A matched pair is an update exactly when the instances differ.
            for i in old.indices {
                if let j = diff.newIndex(forOldIndex: i) {
                    #expect(diff.updates.contains(i) == (old[i] !== new[j]), "\(context)")
                }
            }
            let rebuilt = [
                try diff.batch.apply(to: old, newElements: new),
                try diff.sequential.apply(to: old, newElements: new),
                try diff.jsonPatch().apply(to: old, newElements: new),
            ]
            for list in rebuilt {
                #expect(list.count == new.count && zip(list, new).allSatisfy { $0 === $1 }, "\(context)")
            }
        }
    }

    @Test("When random sectioned lists are diffed that every form rebuilds the new list")
    func whenRandomSectionedListsAreDiffed_thatEveryFormRebuildsTheNewList() {
        let seed: UInt64 = 0x5EED_5EC7
        var random = SplitMix64(seed: seed)
        for iteration in 0..<2_500 {
            let sectionAlphabet = 1 + random.below(random.chance(30) ? 3 : 8)
            let itemAlphabet = 1 + random.below(random.chance(40) ? 4 : 12)
            let old = (0..<random.below(6)).map { _ in
                Group(
                    id: random.below(sectionAlphabet), title: random.below(2),
                    items: randomCells(&random, count: random.below(6), alphabet: itemAlphabet))
            }
            var new = old.map { group -> Group in
                var group = group
                if random.chance(60) { group.items = randomEdit(group.items, &random, alphabet: itemAlphabet, maxCount: 6) }
                if random.chance(15) { group.title = random.below(2) }
                return group
            }
            for _ in 0..<random.below(4) {
                switch random.below(4) {
                case 0 where !new.isEmpty:
                    new.remove(at: random.below(new.count))
                case 1:
                    let group = Group(
                        id: random.below(sectionAlphabet), title: random.below(2),
                        items: randomCells(&random, count: random.below(5), alphabet: itemAlphabet))
                    new.insert(group, at: random.below(new.count + 1))
                case 2 where !new.isEmpty:
                    let group = new.remove(at: random.below(new.count))
                    new.insert(group, at: random.below(new.count + 1))
                case 3 where new.count >= 2:
                    // An item leaves one section for another.
                    let from = random.below(new.count)
                    let to = random.below(new.count)
                    if !new[from].items.isEmpty {
                        let item = new[from].items.remove(at: random.below(new[from].items.count))
                        new[to].items.insert(item, at: random.below(new[to].items.count + 1))
                    }
                default:
                    break
                }
            }
            checkSectionedDiff(old: old, new: new, context: "seed \(seed) iteration \(iteration)")
        }
    }
}
