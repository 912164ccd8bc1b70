/// One step of a sequential update, in the vocabulary of Android's
/// `ListUpdateCallback` (`onRemoved`, `onInserted`, `onMoved`, `onChanged`).
///
/// Positions are valid at the moment the step is applied, after every step
/// before it.
public enum SequentialOperation: Hashable, Sendable {
    /// Remove `count` elements starting at `at`.
    case remove(at: Int, count: Int)

    /// Insert `count` elements starting at `at`. The values are the new
    /// list's elements at `at ..< at + count`.
    case insert(at: Int, count: Int)

    /// Take out the element at `from`, then insert it at `to` (an index of the
    /// list without it): afterwards it is at `to`.
    case move(from: Int, to: Int)

    /// Replace `count` elements starting at `at` with their new content: the
    /// new list's elements at `at ..< at + count`.
    case change(at: Int, count: Int)
}

extension SequentialOperation: CustomStringConvertible {
    /// The step as written in Swift, such as `move(from: 3, to: 0)`.
    public var description: String {
        switch self {
        case let .remove(at, count): "remove(at: \(at), count: \(count))"
        case let .insert(at, count): "insert(at: \(at), count: \(count))"
        case let .move(from, to): "move(from: \(from), to: \(to))"
        case let .change(at, count): "change(at: \(at), count: \(count))"
        }
    }
}

/// The changes of a list as steps applied one after the other, for clients
/// that mutate a list in place (Android `RecyclerView`, Firestore-style
/// listeners).
///
///     for operation in diff.sequential.operations {
///       switch operation {
///       case let .remove(at, count): adapter.notifyItemRangeRemoved(at, count)
///       case let .insert(at, count): adapter.notifyItemRangeInserted(at, count)
///       case let .move(from, to): adapter.notifyItemMoved(from, to)
///       case let .change(at, count): adapter.notifyItemRangeChanged(at, count)
///       }
///     }
///
/// The steps come in four phases: removes, from the highest position down;
/// moves, in new order; inserts, from the lowest position up; changes, from
/// the lowest position up. Runs of adjacent removes, inserts and changes are
/// coalesced into one step. Because the list already holds its final prefix
/// when an insert or change is applied, **every insert and change position
/// is also the index in the new list of the value to show**.
public struct SequentialUpdate: Hashable, Sendable {
    /// The steps, in the order they must be applied.
    public var operations: [SequentialOperation]

    /// Creates a sequential update from its steps.
    @inlinable
    public init(operations: [SequentialOperation]) {
        self.operations = operations
    }
}

/// Appends `.remove` steps for the ascending `indexes`, highest run first.
internal func _appendRemoves(_ indexes: [Int], to operations: inout [SequentialOperation]) {
    var k = indexes.count
    while k > 0 {
        k -= 1
        var start = indexes[k]
        var count = 1
        while k > 0 && indexes[k - 1] == start - 1 {
            k -= 1
            start -= 1
            count += 1
        }
        operations.append(.remove(at: start, count: count))
    }
}

/// Appends steps made by `make` for runs of the ascending `indexes`, lowest
/// run first.
internal func _appendRuns(
    _ indexes: [Int], to operations: inout [SequentialOperation],
    _ make: (Int, Int) -> SequentialOperation
) {
    var k = 0
    while k < indexes.count {
        let start = indexes[k]
        var count = 1
        while k + count < indexes.count && indexes[k + count] == start + count { count += 1 }
        operations.append(make(start, count))
        k += count
    }
}

extension DiffCore {
    /// The sequential form.
    ///
    /// - Complexity: O(*d* + *i* + *u* log *u* + *v* log(*v* + *d*)) plus a
    ///   scan of the new list in the worst case.
    internal var sequential: SequentialUpdate {
        var operations: [SequentialOperation] = []
        _appendRemoves(deletes, to: &operations)
        for step in sequentialMoves {
            operations.append(.move(from: step.from, to: step.to))
        }
        _appendRuns(inserts, to: &operations) { .insert(at: $0, count: $1) }
        _appendRuns(updatedNewIndexes, to: &operations) { .change(at: $0, count: $1) }
        return SequentialUpdate(operations: operations)
    }
}

extension IndexDiff {
    /// The changes as steps applied one after the other (see
    /// ``SequentialUpdate`` for their order and meaning).
    ///
    /// - Complexity: O(*d* + *i* + *u* log *u* + *v* log(*v* + *d*)) for *d*
    ///   deletes, *i* inserts, *u* updates and *v* moves, plus at most a scan
    ///   of the new list.
    public var sequential: SequentialUpdate { _core.sequential }
}
