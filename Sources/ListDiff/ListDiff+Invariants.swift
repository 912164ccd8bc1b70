// Internal consistency checks. Compiled in debug builds and, for release
// builds, with `-D LISTDIFF_CHECK_INVARIANTS`.

extension DiffCore {
    /// Traps unless the matching and every list derived from it agree.
    ///
    /// - Complexity: O(*n* + *m*)
    internal func _checkInvariants() {
        #if DEBUG || LISTDIFF_CHECK_INVARIANTS
        for i in oldToNew.indices {
            let j = oldToNew[i]
            if j >= 0 {
                precondition(j < newToOld.count && newToOld[j] == i, "ListDiff: matching is not a bijection")
            } else {
                precondition(j == -1 && !isUpdated[i], "ListDiff: a deleted element is flagged updated")
            }
        }
        for j in newToOld.indices where newToOld[j] >= 0 {
            precondition(oldToNew[newToOld[j]] == j, "ListDiff: matching is not a bijection")
        }
        func isAscending(_ indexes: [Int]) -> Bool {
            zip(indexes, indexes.dropFirst()).allSatisfy { $0 < $1 }
        }
        precondition(isAscending(deletes) && deletes.allSatisfy { oldToNew[$0] < 0 }, "ListDiff: deletes")
        precondition(isAscending(inserts) && inserts.allSatisfy { newToOld[$0] < 0 }, "ListDiff: inserts")
        precondition(isAscending(updates) && updates.allSatisfy { isUpdated[$0] }, "ListDiff: updates")
        precondition(
            oldCount - deletes.count == newCount - inserts.count, "ListDiff: counts do not add up")
        precondition(
            updates.count == isUpdated.lazy.filter { $0 }.count, "ListDiff: updates miss a flagged pair")
        // Moves are matched pairs in new order; the pairs that stay form an
        // increasing sequence of old indexes, which is what makes every output
        // form valid.
        precondition(isAscending(moves.map(\.to)), "ListDiff: moves are not in new order")
        var nextMove = 0
        var lastStayingOld = -1
        for j in newToOld.indices where newToOld[j] >= 0 {
            if nextMove < moves.count && moves[nextMove].to == j {
                precondition(moves[nextMove].from == newToOld[j], "ListDiff: a move is not a matched pair")
                nextMove += 1
            } else {
                precondition(newToOld[j] > lastStayingOld, "ListDiff: elements that stay are not in order")
                lastStayingOld = newToOld[j]
            }
        }
        precondition(nextMove == moves.count, "ListDiff: a move is not a matched pair")
        #endif
    }
}
