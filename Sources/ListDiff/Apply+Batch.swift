// Executing a batch update the way UIKit does, checking its rules.

/// Where each position of the new list gets its value from, for one level
/// of a batch update.
internal struct _BatchPlacement {
    /// What a position of the new list receives.
    enum Source: Equatable {
        /// The new list's value (an insert).
        case inserted
        /// The old element at this index, moved explicitly.
        case moved(Int)
        /// The old element at this index, which kept its relative place.
        case kept(Int)
        /// The old element at this index, reloaded: the new list's value.
        case reloaded(Int)
    }

    /// The source of every position of the new list.
    var sources: [Source]

    /// Checks one level of a batch against UIKit's rules and places it.
    ///
    /// `removedElsewhere` and `placedFromElsewhere` count old positions taken
    /// out and new positions filled by operations another level validated
    /// (items moved across sections); `fixed` marks those new positions.
    ///
    /// - Complexity: O(*n* + *m* + *k*), the two counts and the number of
    ///   operations.
    init(
        oldCount: Int, newCount: Int, section: Int?,
        deletes: [Int], inserts: [Int], moves: [Move<Int>], reloads: [Int]
    ) throws(ApplyError) {
        var usedOld = [Bool](repeating: false, count: oldCount)
        var usedNew = [Bool](repeating: false, count: newCount)
        var isReloaded = [Bool](repeating: false, count: oldCount)
        var sources = [Source?](repeating: nil, count: newCount)
        /// Marks `index` of one side used, refusing one out of range or already used.
        func take(_ index: Int, _ used: inout [Bool], _ what: String, old: Bool) throws(ApplyError) {
            guard index >= 0 && index < used.count else {
                throw ApplyError(
                    .indexOutOfRange, section: section, index: index,
                    "\(what) \(index) is not \(old ? "an old" : "a new") position (count \(used.count))")
            }
            guard !used[index] else {
                throw ApplyError(
                    old ? .duplicateSource : .duplicateDestination, section: section, index: index,
                    old
                        ? "old position \(index) is deleted, reloaded or moved twice (\(what))"
                        : "new position \(index) is inserted or moved to twice (\(what))")
            }
            used[index] = true
        }
        func takeOld(_ index: Int, _ what: String) throws(ApplyError) { try take(index, &usedOld, what, old: true) }
        func takeNew(_ index: Int, _ what: String) throws(ApplyError) { try take(index, &usedNew, what, old: false) }
        for index in deletes { try takeOld(index, "delete") }
        for index in reloads {
            try takeOld(index, "reload")
            isReloaded[index] = true
        }
        for move in moves {
            try takeOld(move.from, "move from")
            try takeNew(move.to, "move to")
            sources[move.to] = .moved(move.from)
        }
        for index in inserts {
            try takeNew(index, "insert")
            sources[index] = .inserted
        }
        let expected = oldCount - deletes.count + inserts.count
        guard expected == newCount else {
            throw ApplyError(
                .countMismatch, section: section,
                "old count \(oldCount) - \(deletes.count) deletes + \(inserts.count) inserts = \(expected), new count is \(newCount)")
        }
        // The old elements that are neither deleted nor moved fill the free new
        // positions in order; the counts above guarantee they fit exactly.
        var next = 0
        for index in 0..<oldCount where !usedOld[index] || isReloaded[index] {
            while sources[next] != nil { next += 1 }
            sources[next] = isReloaded[index] ? .reloaded(index) : .kept(index)
            next += 1
        }
        self.sources = sources.map { $0! }
    }
}

extension BatchUpdate {
    /// Rebuilds the new list from the old one, executing this batch the way
    /// UIKit's `performBatchUpdates` does and checking its rules.
    ///
    /// Deleted positions are dropped; inserted positions and reloaded elements
    /// take their value from `newElements` at their new position; moved
    /// elements go to their destination; the others fill the remaining
    /// positions in order. This is the reference for client writers, and the
    /// proof that a ``BatchUpdate`` is right: the result equals `newElements`.
    ///
    ///     let rebuilt = try diff.batch.apply(to: old, newElements: new)
    ///
    /// - Parameters:
    ///   - old: The list before the change.
    ///   - newElements: The list after the change; only the values at inserted
    ///     and reloaded positions are read, and its count.
    /// - Returns: The rebuilt list.
    /// - Throws: ``ApplyError`` when a position is out of range, used twice,
    ///   or the counts do not add up.
    /// - Complexity: O(*n* + *m*), the lengths of the two lists.
    public func apply<Element>(to old: [Element], newElements: [Element]) throws(ApplyError) -> [Element] {
        let placement = try _BatchPlacement(
            oldCount: old.count, newCount: newElements.count, section: nil,
            deletes: deletes, inserts: inserts, moves: moves, reloads: reloads)
        var result: [Element] = []
        result.reserveCapacity(newElements.count)
        for (position, source) in placement.sources.enumerated() {
            switch source {
            case .inserted, .reloaded: result.append(newElements[position])
            case let .moved(index), let .kept(index): result.append(old[index])
            }
        }
        return result
    }
}
