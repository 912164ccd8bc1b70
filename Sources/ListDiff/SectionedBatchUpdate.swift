/// The changes of a sectioned list as one UIKit `performBatchUpdates`.
///
///     let update = diff.batch
///     collectionView.performBatchUpdates {
///       collectionView.deleteSections(IndexSet(update.sectionDeletes))
///       collectionView.insertSections(IndexSet(update.sectionInserts))
///       collectionView.reloadSections(IndexSet(update.sectionReloads))
///       for move in update.sectionMoves { collectionView.moveSection(move.from, toSection: move.to) }
///       collectionView.deleteItems(at: update.itemDeletes.map(indexPath))
///       collectionView.insertItems(at: update.itemInserts.map(indexPath))
///       collectionView.reloadItems(at: update.itemReloads.map(indexPath))
///       for move in update.itemMoves { collectionView.moveItem(at: indexPath(move.from), to: indexPath(move.to)) }
///     }
///
/// Deletes and reloads name old positions, inserts new positions, moves
/// both. Besides the rules of ``BatchUpdate`` at each level, IGListKit's
/// clean-up rules hold:
/// - a section that is both moved and updated is a section delete plus a
///   section insert;
/// - a section that is updated in place is reloaded, and no item operation
///   names it (the reload shows its new items);
/// - a section that is moved and whose items changed in any way (inserts,
///   deletes, moves or reloads) is a section delete plus a section insert;
/// - no item operation names an inserted, deleted, reloaded or moved
///   section;
/// - for every other section, old item count − item deletes + item inserts
///   = new item count (items never move between sections).
public struct SectionedBatchUpdate: Hashable, Sendable {
    /// Old indexes of the sections to delete, ascending.
    public var sectionDeletes: [Int]

    /// New indexes of the sections to insert, ascending.
    public var sectionInserts: [Int]

    /// Sections to move, old index → new index, in increasing order of new
    /// index.
    public var sectionMoves: [Move<Int>]

    /// Old indexes of the sections to reload, ascending.
    public var sectionReloads: [Int]

    /// Old paths of the items to delete, ascending.
    public var itemDeletes: [ItemPath]

    /// New paths of the items to insert, ascending.
    public var itemInserts: [ItemPath]

    /// Items to move, old path → new path, by section then new item index.
    public var itemMoves: [Move<ItemPath>]

    /// Old paths of the items to reload, ascending.
    public var itemReloads: [ItemPath]

    /// Creates a batch update from its lists.
    @inlinable
    public init(
        sectionDeletes: [Int] = [], sectionInserts: [Int] = [],
        sectionMoves: [Move<Int>] = [], sectionReloads: [Int] = [],
        itemDeletes: [ItemPath] = [], itemInserts: [ItemPath] = [],
        itemMoves: [Move<ItemPath>] = [], itemReloads: [ItemPath] = []
    ) {
        self.sectionDeletes = sectionDeletes
        self.sectionInserts = sectionInserts
        self.sectionMoves = sectionMoves
        self.sectionReloads = sectionReloads
        self.itemDeletes = itemDeletes
        self.itemInserts = itemInserts
        self.itemMoves = itemMoves
        self.itemReloads = itemReloads
    }

    /// Whether the update has no operation at all.
    ///
    /// - Complexity: O(1)
    public var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && sectionMoves.isEmpty
            && sectionReloads.isEmpty && itemDeletes.isEmpty && itemInserts.isEmpty
            && itemMoves.isEmpty && itemReloads.isEmpty
    }
}

extension SectionedDiff {
    /// The changes as one UIKit batch update (see ``SectionedBatchUpdate``
    /// for the rules it follows).
    ///
    /// - Complexity: O(*s* + *c*), the number of sections plus the number of
    ///   changes, with a log factor for sorting converted moves.
    @inlinable
    public var batch: SectionedBatchUpdate {
        let sectionBatch = sections._core.batch
        var convertedFrom: [Int] = []
        var convertedTo: [Int] = []
        var sectionMoves: [Move<Int>] = []
        for move in sectionBatch.moves {
            if let itemDiff = itemsDiff(forNewSection: move.to), itemDiff.items.hasChanges {
                convertedFrom.append(move.from)
                convertedTo.append(move.to)
            } else {
                sectionMoves.append(move)
            }
        }
        convertedFrom.sort()
        var update = SectionedBatchUpdate(
            sectionDeletes: _mergeAscending(sectionBatch.deletes, convertedFrom),
            sectionInserts: _mergeAscending(sectionBatch.inserts, convertedTo),
            sectionMoves: sectionMoves,
            sectionReloads: sectionBatch.reloads)
        // Only sections that keep their place (relative to the others) and
        // their own content carry item operations: a moved section either has
        // no item change or became a delete plus an insert above.
        var isMoved = _filled(false, count: sections.oldCount)
        for move in sections.moves { isMoved[move.from] = true }
        // By index, and each path appended in a plain loop: a loop over the diffs copied each,
        // and the lazily mapped appends went through generic code (a shifted feed page's 14 grid
        // sections: 51,000 instructions, callgrind). Inlinable, so a caller gets it specialised
        // for its identifiers: generic, each diff read from the array asked for type metadata.
        for position in itemDiffs.indices {
            let old = itemDiffs[position].oldSection
            guard !isMoved[old], !_isReplaced(oldSection: old), itemDiffs[position].items.hasChanges else { continue }
            let new = itemDiffs[position].newSection
            let batch = itemDiffs[position].items._core.batch
            for item in batch.deletes { update.itemDeletes.append(ItemPath(section: old, item: item)) }
            for item in batch.reloads { update.itemReloads.append(ItemPath(section: old, item: item)) }
            for item in batch.inserts { update.itemInserts.append(ItemPath(section: new, item: item)) }
            for move in batch.moves {
                update.itemMoves.append(Move(from: ItemPath(section: old, item: move.from), to: ItemPath(section: new, item: move.to)))
            }
        }
        // Item diffs come in new section order; kept sections keep their
        // relative order, so old paths are ascending too.
        return update
    }
}
