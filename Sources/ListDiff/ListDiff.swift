// The matching pass: Heckel's two passes over one hash table.
//
// Pass 1 walks the old list backwards and records, per identifier, its first
// old occurrence in the table, chaining every occurrence to the next one of
// the same identifier. Pass 2 walks the new list and pops, for each
// identifier, the next unmatched old occurrence: the k-th occurrence in the
// new list takes the k-th occurrence in the old list. One hash insert per old
// element, one hash lookup per new element, no allocation per element.
//
// Two kinds of list skip the table: lists that kept every identifier at its
// index (`_sameOrderDiff`, compared pairwise), and lists of at most 16
// elements (`_shortListDiff`, the same k-th-to-k-th matching found by a scan),
// where hashing and allocating cost more than comparing.

/// Returns whether two values are the same class instance; `false` for
/// values of any other type.
@inlinable @inline(__always)
internal func _isIdentical<T>(_ a: T, _ b: T) -> Bool {
    guard T.self is AnyObject.Type else { return false }
    return (a as AnyObject) === (b as AnyObject)
}

/// The outcome of the matching pass, before moves are derived.
@usableFromInline
internal struct _Matching<ID: Hashable> {
    @usableFromInline var table: _IdentifierTable<ID>
    @usableFromInline var oldToNew: [Int]
    @usableFromInline var newToOld: [Int]
    @usableFromInline var isUpdated: [Bool]

    @inlinable
    init(table: _IdentifierTable<ID>, oldToNew: [Int], newToOld: [Int], isUpdated: [Bool]) {
        self.table = table
        self.oldToNew = oldToNew
        self.newToOld = newToOld
        self.isUpdated = isUpdated
    }
}

/// Matches the elements of two lists by identifier, k-th occurrence to k-th
/// occurrence, and flags each matched pair as updated or not.
///
/// - Complexity: O(*n* + *m*) expected (hashing), where *n* and *m* are the
///   lengths of the lists.
@inlinable
internal func _matchElements<Element, ID: Hashable>(
    old: UnsafeBufferPointer<Element>,
    new: UnsafeBufferPointer<Element>,
    mode: DiffOptions.Mode,
    identifier: (Element) -> ID,
    isContentEqual: (Element, Element) -> Bool
) -> _Matching<ID> {
    let oldCount = old.count
    let newCount = new.count
    // Room for every identifier of both lists: the new-only ones are stored too. Sized for the
    // old list's alone, the table grew (every key hashed again) on the first new-only one, which
    // nearly every list that gained an element has: a feed's grid section with one video slid in
    // at its top, 60,000 instructions of a shifted page's 986,000 (callgrind).
    var table = _IdentifierTable<ID>(minimumCount: oldCount &+ newCount)
    let empty = _IdentifierTable<ID>.empty
    // links[2i]: the next old index with the same identifier as i, or -1.
    // links[2i + 1], for a first occurrence i: the next old occurrence of its
    // identifier that is not matched yet, or -1. Interleaved so that the no-
    // duplicate path touches one cache line per element.
    var links = [Int](unsafeUninitializedCapacity: 2 &* oldCount) { links, initialized in
        var i = oldCount
        while i > 0 {
            i &-= 1
            let next = table.exchange(identifier(old[i]), with: i)
            links[2 &* i] = next == empty ? -1 : next
            links[2 &* i &+ 1] = i
        }
        initialized = 2 &* oldCount
    }
    var (oldToNew, newToOld, isUpdated) = _unmatched(oldCount: oldCount, newCount: newCount)
    links.withUnsafeMutableBufferPointer { links in
        oldToNew.withUnsafeMutableBufferPointer { oldToNew in
            newToOld.withUnsafeMutableBufferPointer { newToOld in
                isUpdated.withUnsafeMutableBufferPointer { isUpdated in
                    for j in 0..<newCount {
                        let element = new[j]
                        let id = identifier(element)
                        let first = table.valueOrInsert(id, _IdentifierTable<ID>.encodeNewOnly(j))
                        if first >= 0 {
                            let i = links[2 &* first &+ 1]
                            if i >= 0 {
                                links[2 &* first &+ 1] = links[2 &* i]
                                oldToNew[i] = j
                                newToOld[j] = i
                                switch mode {
                                case .equality:
                                    if !isContentEqual(old[i], element) { isUpdated[i] = true }
                                case .identity:
                                    if !_isIdentical(old[i], element) { isUpdated[i] = true }
                                }
                                continue
                            }
                        }
                    }
                }
            }
        }
    }
    return _Matching(table: table, oldToNew: oldToNew, newToOld: newToOld, isUpdated: isUpdated)
}

/// The diff of two lists holding the same identifiers in the same order (a
/// list whose elements changed only in content, or not at all: most sections
/// of a feed between two snapshots), or nil when they do not. Such a diff
/// needs no hash table, no matching and no moves: every element keeps its
/// index. One pass compares the identifiers and stops at the first that
/// differs; only then is the general diff run. A short list (a feed
/// section) builds no hash table at all; a longer one builds only the
/// lookup table, without the matching.
///
/// - Complexity: O(*n*); no hashing for up to 32 elements.
@inlinable
internal func _sameOrderDiff<Element, ID: Hashable>(
    old: [Element], new: [Element], mode: DiffOptions.Mode,
    identifier: (Element) -> ID, isContentEqual: (Element, Element) -> Bool
) -> IndexDiff<ID>? {
    let count = old.count
    guard new.count == count else { return nil }
    // One storage for both lists (a section a new snapshot took over from the old one as it
    // was): the same elements, so no updates and nothing to compare, as `Array`'s `==` assumes.
    let isUpdated: [Bool]? =
        _sharesStorage(old, new)
        ? _noUpdates(count: count)
        : old.withUnsafeBufferPointer { old in
            new.withUnsafeBufferPointer { new in
                func updated(_ i: Int) -> Bool {
                    switch mode {
                    case .equality: return !isContentEqual(old[i], new[i])
                    case .identity: return !_isIdentical(old[i], new[i])
                    }
                }
                // Each pair is compared once: up to the first update, then into the flags.
                var firstUpdate = count
                for i in 0..<count {
                    guard identifier(old[i]) == identifier(new[i]) else { return nil }
                    if updated(i) {
                        firstUpdate = i
                        break
                    }
                }
                // Most sections of a feed did not change at all: they share one array of flags.
                guard firstUpdate < count else { return _noUpdates(count: count) }
                var flags = _filled(false, count: count)
                flags[firstUpdate] = true
                for i in (firstUpdate + 1)..<count {
                    guard identifier(old[i]) == identifier(new[i]) else { return nil }
                    flags[i] = updated(i)
                }
                return flags
            }
        }
    guard let isUpdated else { return nil }
    guard count > _sameOrderScanLimit else {
        let ids = old.map(identifier)
        return IndexDiff(_core: _sameOrderCore(isUpdated), lookup: .scan(ids: ids, newStart: 0))
    }
    // A longer list gets its table (each identifier's first index) so that lookups stay O(1):
    // backwards, so that the first occurrence is the one left.
    var table = _IdentifierTable<ID>(minimumCount: count)
    old.withUnsafeBufferPointer { old in
        var i = count
        while i > 0 {
            i &-= 1
            _ = table.exchange(identifier(old[i]), with: i)
        }
    }
    return IndexDiff(_core: _sameOrderCore(isUpdated), lookup: .table(table))
}

/// The diff of two short lists (at most ``_shortListLimit`` elements each), matched by
/// comparing identifiers rather than hashing them, or nil when either is longer.
///
/// Each new element, in order, takes the first old element with its identifier that no
/// earlier one took: the k-th occurrence takes the k-th, as in ``_matchElements``. A scan
/// starts at the first old element not taken yet, so lists that kept their order with a few
/// elements inserted or deleted (a feed's grid section when a new video slides every video one
/// place on) cost about one comparison per element and one pass per insert. Hashing was most of
/// such a diff: a shifted feed page diffed 14 grid sections of 6 videos each in 271,000
/// instructions (callgrind), 60 % of them the tables' hashing, allocation and probing.
///
/// - Complexity: O(*n* × *m*) at worst, O(*n* + *m*) for lists in the same order with few
///   inserts; no hashing.
@inlinable
internal func _shortListDiff<Element, ID: Hashable>(
    old: [Element], new: [Element], options: DiffOptions,
    identifier: (Element) -> ID, isContentEqual: (Element, Element) -> Bool
) -> IndexDiff<ID>? {
    let oldCount = old.count
    let newCount = new.count
    guard oldCount <= _shortListLimit, newCount <= _shortListLimit else { return nil }
    // Both lists' identifiers in one array: the old list's, then the new list's.
    let ids = _identifiers(of: old, new, identifier)
    var (oldToNew, newToOld, isUpdated) = _unmatched(oldCount: oldCount, newCount: newCount)
    old.withUnsafeBufferPointer { old in
        new.withUnsafeBufferPointer { new in
            ids.withUnsafeBufferPointer { ids in
                oldToNew.withUnsafeMutableBufferPointer { oldToNew in
                    newToOld.withUnsafeMutableBufferPointer { newToOld in
                        // Every old element before it is taken.
                        var firstFree = 0
                        for j in 0..<newCount {
                            let id = ids[oldCount &+ j]
                            var i = firstFree
                            while i < oldCount {
                                if oldToNew[i] < 0, ids[i] == id { break }
                                i &+= 1
                            }
                            guard i < oldCount else { continue }
                            oldToNew[i] = j
                            newToOld[j] = i
                            switch options.mode {
                            case .equality: if !isContentEqual(old[i], new[j]) { isUpdated[i] = true }
                            case .identity: if !_isIdentical(old[i], new[j]) { isUpdated[i] = true }
                            }
                            while firstFree < oldCount, oldToNew[firstFree] >= 0 { firstFree &+= 1 }
                        }
                    }
                }
            }
        }
    }
    return IndexDiff(
        _core: DiffCore(oldToNew: oldToNew, newToOld: newToOld, isUpdated: isUpdated, moves: options.moves),
        lookup: .scan(ids: ids, newStart: oldCount))
}

/// The identifiers of `first`'s elements, then of `second`'s, in order.
@inlinable
internal func _identifiers<Element, ID>(of first: [Element], _ second: [Element], _ identifier: (Element) -> ID) -> [ID] {
    var ids: [ID] = []
    ids.reserveCapacity(first.count + second.count)
    first.withUnsafeBufferPointer { elements in
        for element in elements { ids.append(identifier(element)) }
    }
    second.withUnsafeBufferPointer { elements in
        for element in elements { ids.append(identifier(element)) }
    }
    return ids
}

/// The arrays of a matching of `oldCount` old and `newCount` new elements before any is matched:
/// no partner (-1) and no update.
@inlinable
internal func _unmatched(oldCount: Int, newCount: Int) -> (oldToNew: [Int], newToOld: [Int], isUpdated: [Bool]) {
    (_filled(-1, count: oldCount), _filled(-1, count: newCount), _filled(false, count: oldCount))
}

/// `count` copies of `value`. Reserved and appended: `Array(repeating:count:)` and
/// `Array(unsafeUninitializedCapacity:initializingWith:)` allocate through the standard
/// library's generic entry point, which looks the storage's type up at run time (about 400
/// instructions an array, callgrind), where reserving capacity allocates from specialised code.
@inlinable
internal func _filled<Element>(_ value: Element, count: Int) -> [Element] {
    var array: [Element] = []
    array.reserveCapacity(count)
    for _ in 0..<count { array.append(value) }
    return array
}

/// The longest lists ``_shortListDiff`` matches without a table: a feed section. Its worst
/// case (lists in reverse order) compares 136 pairs of identifiers, about what hashing both
/// lists costs.
@usableFromInline
internal let _shortListLimit = 16

/// Whether two arrays of the same count are one storage (a copy of the other, unchanged).
@inlinable
internal func _sharesStorage<Element>(_ a: [Element], _ b: [Element]) -> Bool {
    a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
}

/// The longest list whose same-order diff finds identifiers by a scan rather than a table.
@usableFromInline
internal let _sameOrderScanLimit = 32

/// Flags of no updates and the identity matching for the short lists (up to
/// ``_sameOrderScanLimit`` elements) of same-order diffs, built once and shared: a feed's
/// sections are diffed many times a second and most of them did not change.
private let _sharedNoUpdates: [[Bool]] = (0..._sameOrderScanLimit).map { [Bool](repeating: false, count: $0) }
private let _sharedIdentities: [[Int]] = (0..._sameOrderScanLimit).map { Array(0..<$0) }

/// One outcome per short length for lists that kept every element, unchanged: most sections of
/// a feed between two snapshots, which each made one (an allocation, and its release).
private let _unchangedCores: [DiffCore] = (0..._sameOrderScanLimit).map { DiffCore(sameOrder: _sharedNoUpdates[$0]) }

/// The outcome for two lists whose elements all kept their index (``DiffCore/init(sameOrder:)``),
/// shared when they are short and nothing changed.
@usableFromInline
internal func _sameOrderCore(_ isUpdated: [Bool]) -> DiffCore {
    let count = isUpdated.count
    if count <= _sameOrderScanLimit, _sharesStorage(isUpdated, _sharedNoUpdates[count]) { return _unchangedCores[count] }
    return DiffCore(sameOrder: isUpdated)
}

/// `count` flags, all false (shared when short).
@usableFromInline
internal func _noUpdates(count: Int) -> [Bool] {
    count <= _sameOrderScanLimit ? _sharedNoUpdates[count] : [Bool](repeating: false, count: count)
}

/// The identity matching `0..<count` (shared when short).
@usableFromInline
internal func _identityMatching(count: Int) -> [Int] {
    count <= _sameOrderScanLimit ? _sharedIdentities[count] : Array(0..<count)
}

extension IndexDiff {
    /// Diffs two lists of elements that are not ``Diffable``, given how to
    /// identify an element and how to compare two contents.
    ///
    /// This is the entry point for values you do not own, such as JSON
    /// objects keyed by one of their fields:
    ///
    ///     let diff = IndexDiff(old: oldRows, new: newRows,
    ///                          identifier: { $0.key },
    ///                          isContentEqual: { $0 == $1 })
    ///
    /// Elements with the same identifier are matched k-th occurrence in `old`
    /// to k-th occurrence in `new`; surplus occurrences are deletes or
    /// inserts. Each matched pair is an update when `isContentEqual` returns
    /// `false` for it (in the ``DiffOptions/Mode-swift.enum/identity`` mode,
    /// unless both sides are the same object; the closure is then not called).
    ///
    /// - Parameters:
    ///   - old: The list before the change.
    ///   - new: The list after the change.
    ///   - options: The update mode and the move set. Defaults to equality
    ///     and minimal moves.
    ///   - identifier: The identity of an element across both lists.
    ///   - isContentEqual: Whether two elements with the same identifier show
    ///     the same content. Like `Array`'s `==`, the diff takes two lists
    ///     that share their storage (one a copy of the other) to hold equal
    ///     elements without asking.
    /// - Complexity: O(*n* + *m*) expected time and memory, plus
    ///   O(*c* log *c*) for minimal moves when the *c* common elements changed
    ///   order; *n* and *m* are the lengths of `old` and `new`.
    @inlinable
    public init<Element>(
        old: [Element],
        new: [Element],
        options: DiffOptions = DiffOptions(),
        identifier: (Element) -> ID,
        isContentEqual: (Element, Element) -> Bool
    ) {
        if let sameOrder = _sameOrderDiff(old: old, new: new, mode: options.mode, identifier: identifier, isContentEqual: isContentEqual) {
            self = sameOrder
            return
        }
        if let short = _shortListDiff(old: old, new: new, options: options, identifier: identifier, isContentEqual: isContentEqual) {
            self = short
            return
        }
        let matching = old.withUnsafeBufferPointer { old in
            new.withUnsafeBufferPointer { new in
                _matchElements(
                    old: old, new: new, mode: options.mode,
                    identifier: identifier, isContentEqual: isContentEqual)
            }
        }
        self.init(
            _core: DiffCore(
                oldToNew: matching.oldToNew, newToOld: matching.newToOld,
                isUpdated: matching.isUpdated, moves: options.moves),
            lookup: .table(matching.table))
    }

    /// Diffs two lists of ``Diffable`` elements.
    ///
    ///     let diff = IndexDiff(old: [a, b, c], new: [c, a, b2])
    ///     diff.moves    // [Move(from: 2, to: 0)]
    ///     diff.updates  // [1], if b2 has b's identifier and other content
    ///
    /// Elements with the same identifier are matched k-th occurrence in `old`
    /// to k-th occurrence in `new`; see ``init(old:new:options:identifier:isContentEqual:)``.
    ///
    /// - Parameters:
    ///   - old: The list before the change.
    ///   - new: The list after the change.
    ///   - options: The update mode and the move set. Defaults to equality
    ///     and minimal moves.
    /// - Complexity: O(*n* + *m*) expected time and memory, plus
    ///   O(*c* log *c*) for minimal moves when the *c* common elements changed
    ///   order.
    @inlinable
    public init<Element: Diffable>(
        old: [Element], new: [Element], options: DiffOptions = DiffOptions()
    ) where Element.DiffID == ID {
        self.init(
            old: old, new: new, options: options,
            identifier: { $0.diffIdentifier },
            isContentEqual: { $0.isContentEqual(to: $1) })
    }
}
