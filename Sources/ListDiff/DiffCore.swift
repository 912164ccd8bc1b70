/// The index-level outcome of a diff, independent of element and identifier
/// types: which old index matched which new index, which pairs changed, and
/// the derived inserts, deletes, updates and moves.
///
/// Every output form (batch, sequential, JSON Patch) is computed from this
/// value, so none of them needs to be specialized for the caller's types.
///
/// A class: a diff is copied wherever it is read from a collection (a
/// sectioned diff's item diffs, each loop over them), and as a struct each
/// copy retained and released its seven arrays: 41,000 instructions of a
/// shifted feed page's 211,000-instruction delta (callgrind), against one
/// allocation per diff.
@usableFromInline
internal final class DiffCore: Sendable {
    /// For each old index, the matched new index, or -1 when deleted.
    @usableFromInline
    internal let oldToNew: [Int]

    /// For each new index, the matched old index, or -1 when inserted.
    @usableFromInline
    internal let newToOld: [Int]

    /// For each old index, whether its matched pair is an update.
    @usableFromInline
    internal let isUpdated: [Bool]

    /// Deleted old indexes, ascending.
    @usableFromInline
    internal let deletes: [Int]

    /// Inserted new indexes, ascending.
    @usableFromInline
    internal let inserts: [Int]

    /// Old indexes of updated pairs, ascending.
    @usableFromInline
    internal let updates: [Int]

    /// Moved pairs, in increasing order of new index.
    @usableFromInline
    internal let moves: [Move<Int>]

    /// The outcome for two lists whose elements all kept their index: no
    /// deletes, inserts or moves; `isUpdated` says which changed content.
    ///
    /// - Complexity: O(*n*)
    @usableFromInline
    internal init(sameOrder isUpdated: [Bool]) {
        // One buffer for both directions: the matching is the identity.
        let identity = _identityMatching(count: isUpdated.count)
        self.oldToNew = identity
        self.newToOld = identity
        self.isUpdated = isUpdated
        self.deletes = []
        self.inserts = []
        self.moves = []
        var updates: [Int] = []
        for i in isUpdated.indices where isUpdated[i] { updates.append(i) }
        self.updates = updates
        #if DEBUG || LISTDIFF_CHECK_INVARIANTS
        _checkInvariants()
        #endif
    }

    /// Derives inserts, deletes, updates and moves from a matching.
    ///
    /// - Complexity: O(*n* + *m*) plus O(*c* log *c*) for minimal moves, where
    ///   *c* is the number of matched pairs (O(*c*) when their order is kept).
    @usableFromInline
    internal init(
        oldToNew: [Int], newToOld: [Int], isUpdated: [Bool], moves strategy: DiffOptions.Moves
    ) {
        self.oldToNew = oldToNew
        self.newToOld = newToOld
        self.isUpdated = isUpdated
        let oldCount = oldToNew.count
        let newCount = newToOld.count
        var deleteCount = 0
        var updateCount = 0
        oldToNew.withUnsafeBufferPointer { oldToNew in
            isUpdated.withUnsafeBufferPointer { isUpdated in
                for i in 0..<oldCount {
                    if oldToNew[i] < 0 { deleteCount &+= 1 }
                    if isUpdated[i] { updateCount &+= 1 }
                }
            }
        }
        let matchedCount = oldCount &- deleteCount
        let insertCount = newCount &- matchedCount
        var deletes: [Int] = []
        var updates: [Int] = []
        // A list of one index is a shared one where it can be (``_single(_:)``).
        if deleteCount > 0 || updateCount > 0 {
            if deleteCount > 1 { deletes.reserveCapacity(deleteCount) }
            if updateCount > 1 { updates.reserveCapacity(updateCount) }
            oldToNew.withUnsafeBufferPointer { oldToNew in
                isUpdated.withUnsafeBufferPointer { isUpdated in
                    for i in 0..<oldCount {
                        if oldToNew[i] < 0 {
                            if deleteCount == 1 { deletes = _single(i) } else { deletes.append(i) }
                        } else if isUpdated[i] {
                            if updateCount == 1 { updates = _single(i) } else { updates.append(i) }
                        }
                    }
                }
            }
        }
        var inserts: [Int] = []
        if insertCount > 1 { inserts.reserveCapacity(insertCount) }
        var increasing = true
        newToOld.withUnsafeBufferPointer { newToOld in
            var last = -1
            for j in 0..<newCount {
                let i = newToOld[j]
                if i < 0 {
                    if insertCount == 1 { inserts = _single(j) } else { inserts.append(j) }
                } else {
                    if i < last { increasing = false }
                    last = i
                }
            }
        }
        self.deletes = deletes
        self.inserts = inserts
        self.updates = updates
        if increasing {
            // No moves: the matched old indexes in new order are not needed (most diffs of a
            // feed's sections; one allocation less each).
            self.moves = []
        } else {
            switch strategy {
            case .heckel:
                self.moves = heckelMoves(oldToNew: oldToNew, newToOld: newToOld)
            case .minimal:
                let matchedInNewOrder = newToOld.filter { $0 >= 0 }
                assert(matchedInNewOrder.count == matchedCount)
                let stays = longestIncreasingSubsequence(of: matchedInNewOrder)
                var moves: [Move<Int>] = []
                newToOld.withUnsafeBufferPointer { newToOld in
                    stays.withUnsafeBufferPointer { stays in
                        var k = 0
                        for j in 0..<newCount {
                            let i = newToOld[j]
                            if i < 0 { continue }
                            if !stays[k] { moves.append(Move(from: i, to: j)) }
                            k &+= 1
                        }
                    }
                }
                self.moves = moves
            }
        }
        #if DEBUG || LISTDIFF_CHECK_INVARIANTS
        _checkInvariants()
        #endif
    }

    /// The number of elements in the old list.
    @inlinable
    internal var oldCount: Int { oldToNew.count }

    /// The number of elements in the new list.
    @inlinable
    internal var newCount: Int { newToOld.count }

    /// The number of pairs present in both lists.
    @inlinable
    internal var matchedCount: Int { oldToNew.count &- deletes.count }
}

/// The list `[index]`, one storage shared by every diff for the first 64 indexes: most diffs of
/// a feed's sections delete one item and insert one (a new video slides one of every grid section
/// into the next), and each list was an allocation and a release.
@usableFromInline
internal func _single(_ index: Int) -> [Int] {
    index >= 0 && index < _singles.count ? _singles[index] : [index]
}

private let _singles: [[Int]] = (0..<64).map { [$0] }
