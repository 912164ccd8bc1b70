// Turning a move set (old index → new index) into moves applied one after
// the other, each naming positions valid at that moment.
//
// The list at that stage holds only the common elements (deletes are done,
// inserts come later). Elements that stay keep their order; each moved
// element, taken in new order, is moved to just after its predecessor in the
// new order (or to the front). That adjacency is never broken by a later
// move, so the list ends in new order.
//
// Positions come from ranks among the common elements, without simulating
// the list. For the q-th moved element, with old rank r, and anchor a (the
// old rank of the nearest element before it in new order that stays, or -1):
//   from = r − (moved elements already taken out of a rank below r)
//          + (moved elements already placed with an anchor below r)
//   to   = a + 1 − (moved elements taken out with rank ≤ a, itself included)
//          + q (every element placed so far sits before it)
// Anchors never decrease in new order, so the second term of `from` is a
// binary search; the other counts come from a Fenwick tree over the ranks of
// the moved elements.

/// A Fenwick (binary indexed) tree of counts.
internal struct _FenwickTree {
    private var tree: [Int]

    /// Creates a tree of `count` zero counts.
    init(count: Int) {
        tree = [Int](repeating: 0, count: count + 1)
    }

    /// Adds one to the count at `index`.
    ///
    /// - Complexity: O(log *count*)
    mutating func increment(_ index: Int) {
        var k = index + 1
        while k < tree.count {
            tree[k] += 1
            k += k & -k
        }
    }

    /// The sum of the counts at indexes below `end`.
    ///
    /// - Complexity: O(log *count*)
    func prefixSum(_ end: Int) -> Int {
        var sum = 0
        var k = end
        while k > 0 {
            sum += tree[k]
            k -= k & -k
        }
        return sum
    }
}

/// The number of elements of the ascending list `values` below `bound`.
internal func _countBelow(_ bound: Int, in values: [Int]) -> Int {
    var low = 0
    var high = values.count
    while low < high {
        let middle = (low + high) >> 1
        if values[middle] < bound { low = middle + 1 } else { high = middle }
    }
    return low
}

extension DiffCore {
    /// The moves as steps applied one after the other on the list of common
    /// elements (old order before the first step, new order after the last),
    /// each step's positions valid at its moment. Steps that would not move
    /// anything are left out.
    ///
    /// - Complexity: O(*v* log(*v* + *d*)) plus the gaps scanned in the new
    ///   list (at most *m*), where *v* is the number of moves and *d* of
    ///   deletes.
    internal var sequentialMoves: [Move<Int>] {
        let moveCount = moves.count
        guard moveCount > 0 else { return [] }
        func rank(_ oldIndex: Int) -> Int { oldIndex - _countBelow(oldIndex, in: deletes) }
        var ranks: [Int] = []
        var anchors: [Int] = []
        ranks.reserveCapacity(moveCount)
        anchors.reserveCapacity(moveCount)
        var previousTo = -1
        var anchor = -1
        for move in moves {
            // Every common element strictly between two consecutive moves stays;
            // the nearest one before this move is its anchor.
            var p = move.to - 1
            while p > previousTo {
                let i = newToOld[p]
                if i >= 0 {
                    anchor = rank(i)
                    break
                }
                p -= 1
            }
            ranks.append(rank(move.from))
            anchors.append(anchor)
            previousTo = move.to
        }
        let sortedRanks = ranks.sorted()
        var takenOut = _FenwickTree(count: moveCount)
        var steps: [Move<Int>] = []
        steps.reserveCapacity(moveCount)
        for q in 0..<moveCount {
            let r = ranks[q]
            let a = anchors[q]
            let slot = _countBelow(r, in: sortedRanks)
            let from = r - takenOut.prefixSum(slot) + min(q, _countBelow(r, in: anchors))
            takenOut.increment(slot)
            let to = a + 1 - takenOut.prefixSum(_countBelow(a + 1, in: sortedRanks)) + q
            if from != to { steps.append(Move(from: from, to: to)) }
        }
        return steps
    }

    /// New indexes of the updated pairs, ascending.
    ///
    /// - Complexity: O(*u* log *u*) or O(*m*), whichever is smaller.
    internal var updatedNewIndexes: [Int] {
        if updates.count < 16 || updates.count &* 16 < newCount {
            return updates.map { oldToNew[$0] }.sorted()
        }
        return [Int](unsafeUninitializedCapacity: updates.count) { result, initialized in
            newToOld.withUnsafeBufferPointer { newToOld in
                isUpdated.withUnsafeBufferPointer { isUpdated in
                    var k = 0
                    for j in 0..<newToOld.count {
                        let i = newToOld[j]
                        if i >= 0 && isUpdated[i] {
                            result[k] = j
                            k &+= 1
                        }
                    }
                    initialized = k
                }
            }
        }
    }
}
