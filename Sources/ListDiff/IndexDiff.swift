/// The difference between two lists: which elements were inserted,
/// deleted, updated and moved.
///
/// Create one with ``init(old:new:options:)`` for ``Diffable`` elements, or
/// with ``init(old:new:options:identifier:isContentEqual:)`` for any element
/// and a pair of closures. Then read the changes directly, or ask for the
/// form your client applies:
///
///     let diff = IndexDiff(old: ["a", "b", "c"], new: ["c", "a", "d"],
///                          identifier: { $0 }, isContentEqual: ==)
///     diff.deletes     // [1]  ("b", old index)
///     diff.inserts     // [2]  ("d", new index)
///     diff.moves       // [Move(from: 2, to: 0)]
///     diff.batch       // one UIKit performBatchUpdates
///     diff.sequential  // Android ListUpdateCallback-style steps
///     diff.jsonPatch() // RFC 6902 operations
///
/// **Duplicate identifiers** never trap. The k-th occurrence of an
/// identifier in the old list is matched with its k-th occurrence in the new
/// list; the old occurrences left over are deletes, the new ones inserts.
/// Whether a matched pair is an update is decided for that pair alone.
///
/// **Moves** are the fewest possible by default: of the common elements,
/// those outside one longest increasing subsequence of old indexes taken in
/// new order. ``DiffOptions/Moves-swift.enum/heckel`` reports IGListKit's move set
/// instead.
public struct IndexDiff<ID: Hashable> {
    @usableFromInline
    internal let _core: DiffCore

    /// How an identifier's index is found.
    @usableFromInline
    internal let _lookup: _IdentifierLookup<ID>

    @inlinable
    internal init(_core: DiffCore, lookup: _IdentifierLookup<ID>) {
        self._core = _core
        self._lookup = lookup
    }
}

extension IndexDiff: Sendable where ID: Sendable {}

/// How ``IndexDiff`` finds an identifier's first index.
@usableFromInline
internal enum _IdentifierLookup<ID: Hashable> {
    /// Identifier → first old index, or the encoded first new index of an
    /// identifier absent from the old list.
    case table(_IdentifierTable<ID>)
    /// The identifiers of the old list (`ids[0..<oldCount]`) and of the new
    /// one (`newCount` of them from `newStart`), in order, for short lists,
    /// whose diff builds no table (see ``_shortListDiff``); found by a scan.
    /// One array for both lists: they follow each other, or are the same
    /// identifiers when every element kept its index (`newStart` 0).
    case scan(ids: [ID], newStart: Int)
}

extension _IdentifierLookup: Sendable where ID: Sendable {}

extension IndexDiff {
    /// The number of elements in the old list.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var oldCount: Int { _core.oldCount }

    /// The number of elements in the new list.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var newCount: Int { _core.newCount }

    /// The indexes, in the new list, of the inserted elements, ascending.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var inserts: [Int] { _core.inserts }

    /// The indexes, in the old list, of the deleted elements, ascending.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var deletes: [Int] { _core.deletes }

    /// The indexes, in the old list, of the updated elements (same identifier,
    /// different content), ascending. An updated element may also be moved.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var updates: [Int] { _core.updates }

    /// The moved elements, old index to new index, in increasing order of new
    /// index. A moved element may also be updated.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var moves: [Move<Int>] { _core.moves }

    /// Whether the two lists differ at all.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var hasChanges: Bool { changeCount > 0 }

    /// The number of inserts, deletes, updates and moves. An element that is
    /// both updated and moved counts twice.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var changeCount: Int {
        _core.inserts.count + _core.deletes.count + _core.updates.count + _core.moves.count
    }

    /// The index in the old list of the first element with the identifier
    /// `id`, or `nil` when the old list has none.
    ///
    /// - Complexity: O(1) expected (a scan of the old list when it is short:
    ///   no hash table is built for short lists).
    public func oldIndex(for id: ID) -> Int? {
        switch _lookup {
        case .table(let table):
            let value = table.value(for: id)
            return value >= 0 ? value : nil
        case .scan(let ids, _):
            return ids[..<_core.oldCount].firstIndex(of: id)
        }
    }

    /// The index in the new list of the first element with the identifier
    /// `id`, or `nil` when the new list has none.
    ///
    /// - Complexity: O(1) expected (a scan of the new list when it is short:
    ///   no hash table is built for short lists).
    public func newIndex(for id: ID) -> Int? {
        let table: _IdentifierTable<ID>
        switch _lookup {
        case .table(let built): table = built
        // The first new element with the identifier, as the table says too (first occurrences
        // are matched with each other, and a new-only identifier keeps its first index).
        case .scan(let ids, let newStart):
            return ids[newStart..<newStart + _core.newCount].firstIndex(of: id).map { $0 - newStart }
        }
        let value = table.value(for: id)
        if value >= 0 {
            // The first occurrences of both lists are matched with each other.
            let j = _core.oldToNew[value]
            return j >= 0 ? j : nil
        }
        return value == _IdentifierTable<ID>.empty ? nil : _IdentifierTable<ID>.decodeNewOnly(value)
    }

    /// The new index of the element at old index `oldIndex`, or `nil` when it
    /// was deleted.
    ///
    /// - Precondition: `oldIndex` is a valid index of the old list.
    /// - Complexity: O(1)
    public func newIndex(forOldIndex oldIndex: Int) -> Int? {
        let j = _core.oldToNew[oldIndex]
        return j >= 0 ? j : nil
    }

    /// The old index of the element at new index `newIndex`, or `nil` when it
    /// was inserted.
    ///
    /// - Precondition: `newIndex` is a valid index of the new list.
    /// - Complexity: O(1)
    public func oldIndex(forNewIndex newIndex: Int) -> Int? {
        let i = _core.newToOld[newIndex]
        return i >= 0 ? i : nil
    }
}
