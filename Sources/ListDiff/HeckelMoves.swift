/// The moves IGListKit reports for a matching: Heckel's algorithm with
/// running offsets.
///
/// Walking the new list, a common element is reported as moved when its old
/// index, minus the number of deletes before it in the old list, plus the
/// number of inserts before it in the new list, differs from its new index.
/// In other words: when its rank among the common elements differs between
/// the two lists. Elements that keep their rank form an increasing
/// subsequence, so the move set is valid for every output form; it is not
/// minimal (moving the last of n elements to the front moves all n).
///
/// - Parameters:
///   - oldToNew: For each old index, its new index, or -1 for a delete.
///   - newToOld: For each new index, its old index, or -1 for an insert.
/// - Returns: The moves, in increasing order of new index.
/// - Complexity: O(*n* + *m*), the lengths of the two lists.
@usableFromInline
internal func heckelMoves(oldToNew: [Int], newToOld: [Int]) -> [Move<Int>] {
    // deletesBefore[i]: number of deleted old indexes below i.
    var deletesBefore = [Int](repeating: 0, count: oldToNew.count)
    var deleted = 0
    for i in oldToNew.indices {
        deletesBefore[i] = deleted
        if oldToNew[i] < 0 { deleted &+= 1 }
    }
    var moves: [Move<Int>] = []
    var inserted = 0
    for j in newToOld.indices {
        let i = newToOld[j]
        if i < 0 {
            inserted &+= 1
        } else if i &- deletesBefore[i] &+ inserted != j {
            moves.append(Move(from: i, to: j))
        }
    }
    return moves
}
