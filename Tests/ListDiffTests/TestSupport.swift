import Deterministic
import ListDiff
import Testing

// MARK: - Elements

/// A flat-list element: an identifier and a content. `==` compares both, so
/// a rebuilt list equals the new list exactly when ids and contents agree.
struct Cell: Diffable, Hashable, CustomStringConvertible {
    var id: Int
    var content: Int
    var diffIdentifier: Int { id }
    var description: String { "\(id):\(content)" }
}

/// A word of a text, identified and compared by its spelling.
struct Token: Diffable, Hashable {
    var text: String
    var diffIdentifier: String { text }
}

/// A section: an identifier, its own content (a title) and items.
struct Group: DiffableSection, Hashable, CustomStringConvertible {
    var id: Int
    var title: Int
    var items: [Cell]
    var diffIdentifier: Int { id }
    func isContentEqual(to other: Group) -> Bool { title == other.title }
    var description: String { "\(id)/\(title)\(items)" }
}

/// A reference element, for the identity mode.
final class Box: Diffable, CustomStringConvertible {
    let id: Int
    let content: Int
    init(_ id: Int, _ content: Int) {
        self.id = id
        self.content = content
    }
    var diffIdentifier: Int { id }
    func isContentEqual(to other: Box) -> Bool { content == other.content }
    var description: String { "Box(\(id):\(content))" }
}

func cells(_ pairs: (Int, Int)...) -> [Cell] { pairs.map { Cell(id: $0.0, content: $0.1) } }
func cells(ids: [Int]) -> [Cell] { ids.map { Cell(id: $0, content: 0) } }
func tokens(_ text: String) -> [Token] { text.split(separator: " ").map { Token(text: String($0)) } }

/// What a rebuilt sectioned list is compared by: section identity, section
/// content and items.
struct SectionShape: Hashable, CustomStringConvertible {
    var id: Int
    var title: Int
    var items: [Cell]
    init(_ applied: AppliedSection<Group, Cell>) {
        id = applied.section.id
        title = applied.section.title
        items = applied.items
    }
    init(_ group: Group) {
        id = group.id
        title = group.title
        items = group.items
    }
    var description: String { "\(id)/\(title)\(items)" }
}

// MARK: - Random data

/// The shorthands the property tests draw with.
extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { Int(next(below: UInt64(bound))) }
    mutating func chance(_ percent: Int) -> Bool { chance(percent: percent) }
}

/// A random list of `count` cells with ids below `alphabet` (duplicates when
/// the alphabet is small) and contents below 3.
func randomCells(_ random: inout SplitMix64, count: Int, alphabet: Int) -> [Cell] {
    (0..<count).map { _ in Cell(id: random.below(alphabet), content: random.below(3)) }
}

/// A random edit of `list`: deletes, inserts, moves and content changes, or
/// (sometimes) an unrelated list.
func randomEdit(_ list: [Cell], _ random: inout SplitMix64, alphabet: Int, maxCount: Int = 14) -> [Cell] {
    if random.chance(15) { return randomCells(&random, count: random.below(maxCount + 1), alphabet: alphabet) }
    var result = list
    for _ in 0..<random.below(6) {
        switch random.below(4) {
        case 0 where !result.isEmpty:
            result.remove(at: random.below(result.count))
        case 1:
            result.insert(Cell(id: random.below(alphabet), content: random.below(3)), at: random.below(result.count + 1))
        case 2 where !result.isEmpty:
            let element = result.remove(at: random.below(result.count))
            result.insert(element, at: random.below(result.count + 1))
        case 3 where !result.isEmpty:
            result[random.below(result.count)].content = random.below(3)
        default:
            break
        }
    }
    return result
}

// MARK: - Independent references

/// The matching by the k-th occurrence rule, computed the obvious way: for
/// each identifier, zip its old occurrences with its new occurrences.
func referenceMatching<ID: Hashable>(old: [ID], new: [ID]) -> (oldToNew: [Int?], newToOld: [Int?]) {
    var oldOccurrences: [ID: [Int]] = [:]
    var newOccurrences: [ID: [Int]] = [:]
    for (index, id) in old.enumerated() { oldOccurrences[id, default: []].append(index) }
    for (index, id) in new.enumerated() { newOccurrences[id, default: []].append(index) }
    var oldToNew = [Int?](repeating: nil, count: old.count)
    var newToOld = [Int?](repeating: nil, count: new.count)
    for (id, olds) in oldOccurrences {
        for (i, j) in zip(olds, newOccurrences[id] ?? []) {
            oldToNew[i] = j
            newToOld[j] = i
        }
    }
    return (oldToNew, newToOld)
}

/// The length of a longest strictly increasing subsequence, by the O(n²)
/// dynamic programme.
func longestIncreasingLength(_ values: [Int]) -> Int {
    var best = [Int](repeating: 1, count: values.count)
    for k in values.indices {
        for p in 0..<k where values[p] < values[k] { best[k] = max(best[k], best[p] + 1) }
    }
    return best.max() ?? 0
}

/// The fewest single-element moves that sort a permutation of 0..<n, by
/// breadth-first search over all orders (tiny n only).
func fewestMovesBySearch(_ permutation: [Int]) -> Int {
    let target = permutation.sorted()
    var seen: Set<[Int]> = [permutation]
    var frontier = [permutation]
    var distance = 0
    while !frontier.contains(target) {
        var next: [[Int]] = []
        for order in frontier {
            for from in order.indices {
                var without = order
                let element = without.remove(at: from)
                for to in 0...without.count {
                    var moved = without
                    moved.insert(element, at: to)
                    if seen.insert(moved).inserted { next.append(moved) }
                }
            }
        }
        frontier = next
        distance += 1
    }
    return distance
}

/// An identifier's record in ``referenceHeckelMoves(old:new:)``.
final class HeckelEntry {
    var oldCounter = 0
    var newCounter = 0
    var oldIndexes: [Int?] = []
}

/// IGListKit's move set, reimplemented the way its Objective-C++ source
/// works: a table of entries with counters and a stack of old indexes (new
/// occurrences push "not found" first, old indexes are pushed last to first),
/// then running delete and insert offsets.
func referenceHeckelMoves<ID: Hashable>(old: [ID], new: [ID]) -> [Move<Int>] {
    typealias Entry = HeckelEntry
    var table: [ID: Entry] = [:]
    func entry(_ id: ID) -> Entry {
        if let entry = table[id] { return entry }
        let entry = Entry()
        table[id] = entry
        return entry
    }
    var newRecords: [(entry: Entry, index: Int?)] = []
    for id in new {
        let e = entry(id)
        e.newCounter += 1
        e.oldIndexes.append(nil)
        newRecords.append((e, nil))
    }
    var oldRecords: [(entry: Entry, index: Int?)] = old.map { (entry($0), nil) }
    for i in old.indices.reversed() {
        let e = oldRecords[i].entry
        e.oldCounter += 1
        e.oldIndexes.append(i)
    }
    for j in newRecords.indices {
        let e = newRecords[j].entry
        let original = e.oldIndexes.removeLast()
        if let original, e.newCounter > 0, e.oldCounter > 0 {
            newRecords[j].index = original
            oldRecords[original].index = j
        }
    }
    var deleteOffsets = [Int](repeating: 0, count: old.count)
    var running = 0
    for i in old.indices {
        deleteOffsets[i] = running
        if oldRecords[i].index == nil { running += 1 }
    }
    var moves: [Move<Int>] = []
    running = 0
    for j in new.indices {
        let insertOffset = running
        guard let i = newRecords[j].index else {
            running += 1
            continue
        }
        if i - deleteOffsets[i] + insertOffset != j { moves.append(Move(from: i, to: j)) }
    }
    return moves
}

// MARK: - Checks

/// Checks that consecutive removes, inserts and changes were coalesced.
func isCoalesced(_ operations: [SequentialOperation]) -> Bool {
    for (a, b) in zip(operations, operations.dropFirst()) {
        switch (a, b) {
        case let (.remove(first, _), .remove(second, count)) where second + count == first: return false
        case let (.insert(first, count), .insert(second, _)) where first + count == second: return false
        case let (.change(first, count), .change(second, _)) where first + count == second: return false
        default: continue
        }
    }
    return true
}

/// Every check of a flat diff: matching by the k-th occurrence rule, counts,
/// lookups, minimal (or IGListKit) moves, batch rules, and every form
/// rebuilding `new` from `old`.
func checkFlatDiff(old: [Cell], new: [Cell], context: String) {
    let reference = referenceMatching(old: old.map(\.id), new: new.map(\.id))
    for strategy in [DiffOptions.Moves.minimal, .heckel] {
        let diff = IndexDiff(old: old, new: new, options: DiffOptions(moves: strategy))
        let label = "\(context) moves: \(strategy)\nold \(old)\nnew \(new)"
        // Matching, inserts, deletes, updates.
        for i in old.indices {
            #expect(diff.newIndex(forOldIndex: i) == reference.oldToNew[i], "\(label)")
        }
        #expect(diff.deletes == old.indices.filter { reference.oldToNew[$0] == nil }, "\(label)")
        #expect(diff.inserts == new.indices.filter { reference.newToOld[$0] == nil }, "\(label)")
        let expectedUpdates = old.indices.filter { i in reference.oldToNew[i].map { new[$0] != old[i] } ?? false }
        #expect(diff.updates == expectedUpdates, "\(label)")
        #expect(
            diff.changeCount == diff.inserts.count + diff.deletes.count + diff.updates.count + diff.moves.count,
            "\(label)")
        #expect(diff.hasChanges == (old != new), "\(label)")
        // Lookups name first occurrences.
        for id in Set(old.map(\.id) + new.map(\.id)) {
            #expect(diff.oldIndex(for: id) == old.firstIndex { $0.id == id }, "\(label) id \(id)")
            #expect(diff.newIndex(for: id) == new.firstIndex { $0.id == id }, "\(label) id \(id)")
        }
        // Moves.
        let matchedOldInNewOrder = new.indices.compactMap { reference.newToOld[$0] }
        switch strategy {
        case .minimal:
            let minimum = matchedOldInNewOrder.count - longestIncreasingLength(matchedOldInNewOrder)
            #expect(diff.moves.count == minimum, "\(label)")
            if matchedOldInNewOrder.count <= 5 {
                let ranks = matchedOldInNewOrder.map { value in matchedOldInNewOrder.filter { $0 < value }.count }
                #expect(diff.moves.count == fewestMovesBySearch(ranks), "\(label)")
            }
        case .heckel:
            #expect(diff.moves == referenceHeckelMoves(old: old.map(\.id), new: new.map(\.id)), "\(label)")
        }
        for move in diff.moves {
            #expect(reference.oldToNew[move.from] == move.to, "\(label) move \(move)")
        }
        // Batch: IGListKit's clean-up, and UIKit's rules through apply.
        let batch = diff.batch
        for move in batch.moves {
            #expect(old[move.from] == new[move.to], "\(label) moved and updated: \(move)")
        }
        #expect(Set(batch.reloads).isSubset(of: diff.updates), "\(label)")
        #expect(Set(batch.reloads).isDisjoint(with: batch.moves.map(\.from)), "\(label)")
        #expect(old.count - batch.deletes.count + batch.inserts.count == new.count, "\(label)")
        do {
            #expect(try batch.apply(to: old, newElements: new) == new, "\(label) batch \(batch)")
            let sequential = diff.sequential
            #expect(isCoalesced(sequential.operations), "\(label) \(sequential)")
            #expect(try sequential.apply(to: old, newElements: new) == new, "\(label) sequential \(sequential)")
            #expect(try diff.jsonPatch().apply(to: old, newElements: new) == new, "\(label) patch")
            let prefix: JSONPointer = "/feed/items"
            let patch = diff.jsonPatch(at: prefix)
            #expect(try patch.apply(to: old, newElements: new, at: prefix) == new, "\(label) patch at \(prefix)")
            #expect(
                patch.operations.count == diff.deletes.count + diff.inserts.count + diff.updates.count
                    + sequential.operations.filter { if case .move = $0 { true } else { false } }.count, "\(label)")
        } catch {
            Issue.record("\(label): \(error)")
        }
    }
}

/// Every check of a sectioned diff: section and item matching, batch rules
/// (through apply), and every form rebuilding `new` from `old`.
func checkSectionedDiff(old: [Group], new: [Group], context: String) {
    for strategy in [DiffOptions.Moves.minimal, .heckel] {
        let diff = SectionedDiff(oldSections: old, newSections: new, options: DiffOptions(moves: strategy))
        let label = "\(context) moves: \(strategy)\nold \(old)\nnew \(new)"
        let expected = new.map(SectionShape.init)
        let reference = referenceMatching(old: old.map(\.id), new: new.map(\.id))
        #expect(diff.itemDiffs.map(\.oldSection) == new.indices.compactMap { reference.newToOld[$0] }, "\(label)")
        for itemDiff in diff.itemDiffs {
            let items = referenceMatching(
                old: old[itemDiff.oldSection].items.map(\.id), new: new[itemDiff.newSection].items.map(\.id))
            #expect(itemDiff.items.inserts == items.newToOld.indices.filter { items.newToOld[$0] == nil }, "\(label)")
        }
        #expect(diff.hasChanges == (old.map(SectionShape.init) != expected), "\(label)")
        do {
            let batch = diff.batch
            // Moved sections carry no item change and are not updated.
            for move in batch.sectionMoves {
                #expect(SectionShape(old[move.from]) == expected[move.to], "\(label) moved section changed: \(move)")
            }
            for move in batch.itemMoves {
                #expect(diff.sections.newIndex(forOldIndex: move.from.section) == move.to.section, "\(label) \(move)")
                #expect(old[move.from.section].items[move.from.item] == new[move.to.section].items[move.to.item], "\(label)")
            }
            let rebuilt = try batch.apply(to: old, newSections: new)
            #expect(rebuilt.map(SectionShape.init) == expected, "\(label) batch \(batch)")
            let sequential = diff.sequential
            #expect(
                try sequential.apply(to: old, newSections: new).map(SectionShape.init) == expected,
                "\(label) sequential \(sequential)")
            #expect(
                try diff.jsonPatch().apply(to: old, newSections: new).map(SectionShape.init) == expected,
                "\(label) patch")
            let paths = JSONPatchPaths(sections: "/data/groups", items: "/rows")
            #expect(
                try diff.jsonPatch(paths: paths).apply(to: old, newSections: new, paths: paths).map(SectionShape.init)
                    == expected, "\(label) patch with \(paths)")
        } catch {
            Issue.record("\(label): \(error)")
        }
    }
}
