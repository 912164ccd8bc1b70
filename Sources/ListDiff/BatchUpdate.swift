/// The changes of a flat list as one UIKit `performBatchUpdates`: deletes
/// and reloads at old indexes, inserts at new indexes, moves old → new.
///
///     let update = diff.batch
///     collectionView.performBatchUpdates {
///       collectionView.deleteItems(at: update.deletes.map { IndexPath(item: $0, section: 0) })
///       collectionView.insertItems(at: update.inserts.map { IndexPath(item: $0, section: 0) })
///       collectionView.reloadItems(at: update.reloads.map { IndexPath(item: $0, section: 0) })
///       for move in update.moves {
///         collectionView.moveItem(at: IndexPath(item: move.from, section: 0),
///                                 to: IndexPath(item: move.to, section: 0))
///       }
///     }
///
/// The lists follow UIKit's rules, with IGListKit's clean-up applied:
/// - an element that is both moved and updated is a delete plus an insert
///   (UIKit cannot reload and move the same item);
/// - no old index appears twice across `deletes`, `reloads` and
///   `moves.from`, and no new index twice across `inserts` and `moves.to`;
/// - old count − `deletes` + `inserts` = new count.
///
/// Elements that are neither deleted nor moved keep their relative order and
/// fill, in order, the new positions that no insert or move claims.
/// ``apply(to:newElements:)`` executes exactly these semantics.
public struct BatchUpdate: Hashable, Sendable {
    /// Old indexes of the elements to delete, ascending.
    public var deletes: [Int]

    /// New indexes of the elements to insert, ascending.
    public var inserts: [Int]

    /// Elements to move, old index → new index, in increasing order of new
    /// index. None of them is updated.
    public var moves: [Move<Int>]

    /// Old indexes of the elements to reload (updated in place), ascending.
    public var reloads: [Int]

    /// Creates a batch update from its four lists.
    @inlinable
    public init(deletes: [Int] = [], inserts: [Int] = [], moves: [Move<Int>] = [], reloads: [Int] = []) {
        self.deletes = deletes
        self.inserts = inserts
        self.moves = moves
        self.reloads = reloads
    }

    /// Whether the update has no operation at all.
    ///
    /// - Complexity: O(1)
    public var isEmpty: Bool {
        deletes.isEmpty && inserts.isEmpty && moves.isEmpty && reloads.isEmpty
    }
}

/// Merges two ascending lists into one ascending list.
@usableFromInline
internal func _mergeAscending(_ a: [Int], _ b: [Int]) -> [Int] {
    if b.isEmpty { return a }
    if a.isEmpty { return b }
    var merged: [Int] = []
    merged.reserveCapacity(a.count + b.count)
    var x = 0
    var y = 0
    while x < a.count && y < b.count {
        if a[x] <= b[y] {
            merged.append(a[x]); x += 1
        } else {
            merged.append(b[y]); y += 1
        }
    }
    merged.append(contentsOf: a[x...])
    merged.append(contentsOf: b[y...])
    return merged
}

/// Removes from the ascending list `a` the members of the ascending list `b`.
internal func _subtractAscending(_ a: [Int], _ b: [Int]) -> [Int] {
    if b.isEmpty { return a }
    var result: [Int] = []
    result.reserveCapacity(a.count)
    var y = 0
    for value in a {
        while y < b.count && b[y] < value { y += 1 }
        if y < b.count && b[y] == value { continue }
        result.append(value)
    }
    return result
}

extension DiffCore {
    /// The batch form: moved-and-updated pairs become delete + insert, other
    /// updates become reloads.
    ///
    /// - Complexity: O(*d* + *i* + *u* + *v* log *v*), the numbers of deletes,
    ///   inserts, updates and moves.
    @usableFromInline
    internal var batch: BatchUpdate {
        var keptMoves: [Move<Int>] = []
        var replacedFrom: [Int] = []
        var replacedTo: [Int] = []
        for move in moves {
            if isUpdated[move.from] {
                replacedFrom.append(move.from)
                replacedTo.append(move.to)
            } else {
                keptMoves.append(move)
            }
        }
        if replacedFrom.isEmpty {
            return BatchUpdate(deletes: deletes, inserts: inserts, moves: moves, reloads: updates)
        }
        replacedFrom.sort()
        return BatchUpdate(
            deletes: _mergeAscending(deletes, replacedFrom),
            inserts: _mergeAscending(inserts, replacedTo),
            moves: keptMoves,
            reloads: _subtractAscending(updates, replacedFrom))
    }
}

extension IndexDiff {
    /// The changes as one UIKit batch update (see ``BatchUpdate`` for the
    /// rules it follows).
    ///
    /// - Complexity: O(*d* + *i* + *u* + *v* log *v*), the numbers of deletes,
    ///   inserts, updates and moves.
    public var batch: BatchUpdate { _core.batch }
}
