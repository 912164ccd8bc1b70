import FeedStore
import Foundation

/// Where the SQLite store keeps snapshots and snapshot bases: an append-only log of rows, each
/// written by one batch, plus a directory in memory that says which row holds each snapshot.
///
/// Why a log. Keyed by `(viewer, id)`, every batch touched index pages of every viewer in it:
/// about 4.4 KB of disk writes per snapshot handed out (WAL and checkpoint) when 2,000 viewers
/// poll, and more per snapshot the fewer snapshots each viewer gets per second. A batch now
/// appends one row (`snapshot_log`, keyed by a sequence number: the pages written are the ones at
/// the end) whose structures are gzipped together (a batch's deltas share most of their bytes:
/// about 86 B a snapshot instead of 496 in the polling mix).
///
/// The directory is rebuilt at start-up by replaying every row's directory in order (not their
/// bodies). A row holds:
/// - stored entries: a snapshot or base (`kind`, viewer, id, `createdAt`, a write `order` that
///   breaks ties of `createdAt` as rowids did) and the length of its bytes in the row's body;
/// - tombstones: an entry of this viewer, id and kind that an older row (`target`) holds was
///   removed (pruned, deleted, or replaced by a newer copy). Replaying a tombstone removes the
///   entry only if it still names that row.
///
/// A row stays while it has a live entry or a tombstone whose target row still exists; it is
/// deleted in the transaction that removes its last one. So the store's size follows what
/// retention keeps, and a restart finds exactly the directory it left.
///
/// One process owns a store's snapshots: the directory is this process's. Replicas that share
/// snapshots use PostgreSQL.
package final class SnapshotLog: @unchecked Sendable {
    /// What an entry is.
    package enum Kind: UInt8, Sendable {
        case snapshot = 0
        case base = 1
    }

    /// Every access goes through ``withLock(_:)``: the snapshot writer holds it for its whole
    /// transaction, a reader while it finds and reads a row, so a reader never follows the
    /// directory to a row that is not committed yet or already deleted.
    private let lock = NSLock()
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the directory locked.
    func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// The number of snapshots the directory holds.
    var snapshotCount: Int { withLock { $0.snapshotCount } }
}

extension SnapshotLog {
    /// One entry of the directory: where the bytes of a snapshot or base are.
    package struct Entry: Equatable, Sendable {
        package let id: String
        /// The id's first bytes (``FeedStore/SnapshotTag``): a viewer's list is searched by id
        /// for every snapshot a batch stores or removes, and the tags spare reading each id.
        let tag: UInt64
        package var createdAt: Int64
        /// Breaks ties of `createdAt`: the later written is the newer.
        package var order: UInt64
        /// The row that holds it.
        package var seq: Int64

        package init(id: String, createdAt: Int64, order: UInt64, seq: Int64) {
            self.id = id
            self.tag = SnapshotTag.of(id)
            self.createdAt = createdAt
            self.order = order
            self.seq = seq
        }

        /// A test for the entry of `id`: the tags first, the ids only when those match.
        static func of(_ id: String) -> (Entry) -> Bool {
            let tag = SnapshotTag.of(id)
            return { $0.tag == tag && $0.id == id }
        }
    }

    /// What the directory knows of a row.
    struct RowState {
        /// When its batch was written.
        var createdAt: Int64
        /// The entries and tombstones it was written with.
        var written = 0
        /// Entries that name this row, plus tombstones in it whose target row still exists.
        var live = 0
        /// Rows with tombstones that target this one (they may go once it is deleted).
        var pinnedBy: [Int64] = []
    }

    /// The directory and the rows' state. Mutated only inside a ``Batch`` (which can undo it)
    /// or while loading.
    package struct State {
        private(set) var snapshots: [Int64: [Entry]] = [:]
        private(set) var bases: [Int64: [Entry]] = [:]
        private(set) var rows: [Int64: RowState] = [:]
        private(set) var nextSeq: Int64 = 1
        private(set) var nextOrder: UInt64 = 1
        package private(set) var snapshotCount = 0
        /// Rows found without a live entry when loading: deleted by the next batch.
        private var orphans: Set<Int64> = []

        /// The current entry of `viewer`'s `id`, or nil.
        package func entry(_ kind: Kind, viewer: Int64, id: String) -> Entry? {
            list(kind)[viewer]?.last(where: Entry.of(id))
        }

        /// `viewer`'s entries of `kind`, oldest first.
        package func entries(_ kind: Kind, viewer: Int64) -> [Entry] { list(kind)[viewer] ?? [] }

        /// The rows that exist, by sequence number.
        package var rowNumbers: Set<Int64> { Set(rows.keys) }

        private func list(_ kind: Kind) -> [Int64: [Entry]] { kind == .snapshot ? snapshots : bases }

        private mutating func withList<T>(_ kind: Kind, _ viewer: Int64, _ body: (inout [Entry]) -> T) -> T {
            switch kind {
            case .snapshot:
                var list = snapshots.removeValue(forKey: viewer) ?? []
                defer { if !list.isEmpty { snapshots[viewer] = list } }
                let before = list.count
                let result = body(&list)
                snapshotCount += list.count - before
                return result
            case .base:
                var list = bases.removeValue(forKey: viewer) ?? []
                defer { if !list.isEmpty { bases[viewer] = list } }
                return body(&list)
            }
        }

        // MARK: Loading

        /// Replays one stored row (rows in sequence order).
        mutating func replay(seq: Int64, createdAt: Int64, directory: RowDirectory) {
            rows[seq] = RowState(createdAt: createdAt, written: directory.tombstones.count + directory.stored.count)
            nextSeq = max(nextSeq, seq + 1)
            for tombstone in directory.tombstones {
                let removed = withList(tombstone.kind, tombstone.viewer) { list -> Bool in
                    guard let index = list.lastIndex(where: Entry.of(tombstone.id)), list[index].seq == tombstone.target else { return false }
                    list.remove(at: index)
                    return true
                }
                if removed { rows[tombstone.target]?.live -= 1 }
                if rows[tombstone.target] != nil {
                    rows[tombstone.target]?.pinnedBy.append(seq)
                    rows[seq]?.live += 1
                }
            }
            for stored in directory.stored {
                nextOrder = max(nextOrder, stored.order + 1)
                let entry = Entry(id: stored.id, createdAt: stored.createdAt, order: stored.order, seq: seq)
                if let replaced = place(entry, stored.kind, viewer: stored.viewer) { rows[replaced.seq]?.live -= 1 }
                rows[seq]?.live += 1
            }
        }

        /// After the last row: rows left without a live entry are deleted by the next batch.
        mutating func finishLoading() {
            orphans = Set(rows.filter { $0.value.live <= 0 }.keys)
        }

        /// Puts `entry` in `viewer`'s list in order, taking out the entry of its id; returns that.
        private mutating func place(_ entry: Entry, _ kind: Kind, viewer: Int64) -> Entry? {
            withList(kind, viewer) { list in
                let old = list.lastIndex(where: Entry.of(entry.id)).map { list.remove(at: $0) }
                Self.insertSorted(entry, into: &list)
                return old
            }
        }

        static func insertSorted(_ entry: Entry, into list: inout [Entry]) {
            var index = list.endIndex
            while index > list.startIndex, (list[index - 1].createdAt, list[index - 1].order) > (entry.createdAt, entry.order) { index -= 1 }
            list.insert(entry, at: index)
        }

        // MARK: Batches

        /// Starts a batch whose rows are created at `now`.
        mutating func begin(now: Int64) -> Batch {
            var batch = Batch(seq: nextSeq, createdAt: now, savedNextSeq: nextSeq, savedNextOrder: nextOrder, savedCount: snapshotCount, savedOrphans: orphans)
            nextSeq += 1
            batch.saveRow(seq: batch.seq, rows)
            rows[batch.seq] = RowState(createdAt: now)
            return batch
        }

        /// Moves the batch on to a new row when its current one is full.
        private mutating func makeRoom(in batch: inout Batch) {
            if batch.storedInRow == Self.entriesPerRow {
                batch.seq = nextSeq
                batch.storedInRow = 0
                nextSeq += 1
                batch.saveRow(seq: batch.seq, rows)
                rows[batch.seq] = RowState(createdAt: batch.createdAt)
            }
            batch.storedInRow += 1
        }

        /// A reader inflates a whole row for one snapshot: a batch stores at most this many in
        /// each of its rows.
        static let entriesPerRow = 64

        /// Stores `bytes` as `viewer`'s `id`, replacing the entry of that id if there is one.
        mutating func put(_ kind: Kind, viewer: Int64, id: String, createdAt: Int64, bytes: [UInt8], in batch: inout Batch) {
            batch.saveList(kind, viewer, list(kind)[viewer])
            makeRoom(in: &batch)
            let entry = Entry(id: id, createdAt: createdAt, order: nextOrder, seq: batch.seq)
            nextOrder += 1
            if let replaced = place(entry, kind, viewer: viewer) { release(kind, viewer: viewer, replaced, in: &batch) }
            rows[batch.seq]?.live += 1
            batch.stored.append(StoredEntry(kind: kind, viewer: viewer, id: id, createdAt: createdAt, order: entry.order, length: bytes.count))
            batch.bodies.append(bytes)
            batch.storedSeqs.append(batch.seq)
        }

        /// Removes `viewer`'s entries of `kind` for which `shouldRemove` holds; returns how many.
        @discardableResult
        mutating func remove(_ kind: Kind, viewer: Int64, in batch: inout Batch, where shouldRemove: (Entry) -> Bool) -> Int {
            guard let current = list(kind)[viewer], current.contains(where: shouldRemove) else { return 0 }
            batch.saveList(kind, viewer, current)
            let removed = withList(kind, viewer) { list -> [Entry] in
                let removed = list.filter(shouldRemove)
                list.removeAll(where: shouldRemove)
                return removed
            }
            for entry in removed { release(kind, viewer: viewer, entry, in: &batch) }
            return removed.count
        }

        /// Removes all but the newest `keep` of `viewer`'s entries of `kind` (other than
        /// `sparing`, which stays and is not counted); returns how many went.
        @discardableResult
        mutating func keepNewest(_ keep: Int, _ kind: Kind, viewer: Int64, sparing: String? = nil, in batch: inout Batch) -> Int {
            var candidates = entries(kind, viewer: viewer)
            if let sparing { candidates.removeAll(where: Entry.of(sparing)) }
            guard candidates.count > keep else { return 0 }
            let doomed = Set(candidates.prefix(candidates.count - max(0, keep)).map(\.order))
            return remove(kind, viewer: viewer, in: &batch) { doomed.contains($0.order) }
        }

        /// Every viewer's entries of `kind` created before `cutoff`; returns how many went.
        mutating func removeAll(_ kind: Kind, createdBefore cutoff: Int64, in batch: inout Batch) -> Int {
            let viewers = list(kind).compactMap { viewer, list in list.contains { $0.createdAt < cutoff } ? viewer : nil }
            var removed = 0
            for viewer in viewers { removed += remove(kind, viewer: viewer, in: &batch) { $0.createdAt < cutoff } }
            return removed
        }

        /// An entry left the directory: its row loses one, and unless the row is this batch's
        /// own, a tombstone keeps a replay from bringing it back (dropped if the row goes).
        private mutating func release(_ kind: Kind, viewer: Int64, _ entry: Entry, in batch: inout Batch) {
            batch.saveRow(seq: entry.seq, rows)
            rows[entry.seq]?.live -= 1
            if !batch.owns(entry.seq) {
                batch.tombstones.append(Tombstone(kind: kind, viewer: viewer, id: entry.id, target: entry.seq))
            }
        }

        /// Ends the batch: decides which rows go and encodes this batch's rows (none of them is
        /// written when nothing in it is needed). If they cannot be written, ``rollback(_:)``.
        mutating func finish(_ batch: inout Batch) -> (rows: [EncodedRow], deleted: [Int64]) {
            var dead: [Int64] = []
            var queue = Array(batch.touchedRows.filter { !batch.owns($0) && (rows[$0]?.live ?? 1) <= 0 }) + orphans.filter { rows[$0] != nil }
            orphans = []
            var seen = Set<Int64>()
            while let seq = queue.popLast() {
                guard seen.insert(seq).inserted, let row = rows[seq] else { continue }
                dead.append(seq)
                batch.saveRow(seq: seq, rows)
                rows[seq] = nil
                for pinner in row.pinnedBy where rows[pinner] != nil && !batch.owns(pinner) {
                    batch.saveRow(seq: pinner, rows)
                    rows[pinner]?.live -= 1
                    if (rows[pinner]?.live ?? 1) <= 0 { queue.append(pinner) }
                }
            }
            // Tombstones of rows that are gone are not needed; the others go in the last row.
            let tombstones = batch.tombstones.filter { rows[$0.target] != nil }
            for tombstone in tombstones {
                batch.saveRow(seq: tombstone.target, rows)
                rows[tombstone.target]?.pinnedBy.append(batch.seq)
            }
            rows[batch.seq]?.live += tombstones.count
            // A row keeps only the stored entries the directory still names.
            var stored: [Int64: [StoredEntry]] = [:]
            var bodies: [Int64: [UInt8]] = [:]
            for index in batch.stored.indices {
                let entry = batch.stored[index]
                guard self.entry(entry.kind, viewer: entry.viewer, id: entry.id)?.order == entry.order else { continue }
                stored[batch.storedSeqs[index], default: []].append(entry)
                bodies[batch.storedSeqs[index], default: []].append(contentsOf: batch.bodies[index])
            }
            var encoded: [EncodedRow] = []
            for seq in batch.firstSeq...batch.seq {
                guard (rows[seq]?.live ?? 0) > 0 else {
                    rows[seq] = nil
                    continue
                }
                let directory = RowDirectory(tombstones: seq == batch.seq ? tombstones : [], stored: stored[seq] ?? [])
                rows[seq]?.written = directory.tombstones.count + directory.stored.count
                encoded.append(
                    EncodedRow(seq: seq, createdAt: batch.createdAt, directory: directory.encoded(), body: RowDirectory.compress(bodies[seq] ?? [])))
            }
            return (encoded, dead)
        }

        // MARK: Compaction

        /// Rows written before `cutoff` of which at most a quarter is still needed, oldest
        /// first, as many as hold at most `limit` needed things in all.
        func sparseRows(createdBefore cutoff: Int64, limit: Int) -> [Int64] {
            var picked: [Int64] = []
            var total = 0
            for (seq, row) in rows.sorted(by: { $0.key < $1.key }) where row.createdAt < cutoff && row.written >= 4 && row.live * 4 <= row.written {
                guard total + row.live <= limit else { break }
                picked.append(seq)
                total += row.live
            }
            return picked
        }

        /// Copies what row `seq` still holds (its current entries and its needed tombstones)
        /// into the batch, so the row goes: a few snapshots kept long (a viewer who stopped
        /// polling) no longer keep a row of others' dead ones. Returns how many were copied.
        mutating func carry(_ seq: Int64, directory: RowDirectory, body: [UInt8], in batch: inout Batch) throws(RowDirectory.Malformed) -> Int {
            guard rows[seq] != nil, !batch.owns(seq) else { return 0 }
            let content = try directory.content(body: body)
            batch.saveRow(seq: seq, rows)
            var offset = 0
            var carried = 0
            for stored in directory.stored {
                defer { offset += stored.length }
                guard let current = entry(stored.kind, viewer: stored.viewer, id: stored.id), current.seq == seq, current.order == stored.order else {
                    continue
                }
                batch.saveList(stored.kind, stored.viewer, list(stored.kind)[stored.viewer])
                makeRoom(in: &batch)
                let target = batch.seq
                withList(stored.kind, stored.viewer) { list in
                    if let index = list.lastIndex(where: Entry.of(stored.id)) { list[index].seq = target }
                }
                rows[seq]?.live -= 1
                rows[target]?.live += 1
                batch.stored.append(stored)
                batch.bodies.append(Array(content[offset..<offset + stored.length]))
                batch.storedSeqs.append(target)
                carried += 1
            }
            for tombstone in directory.tombstones where rows[tombstone.target] != nil {
                batch.tombstones.append(tombstone)
                rows[seq]?.live -= 1
                carried += 1
            }
            return carried
        }

        /// The batch's transaction failed: the directory goes back to what it was before it.
        mutating func rollback(_ batch: Batch) {
            for (key, list) in batch.savedLists {
                switch key.kind {
                case .snapshot: snapshots[key.viewer] = list
                case .base: bases[key.viewer] = list
                }
            }
            for (seq, row) in batch.savedRows { rows[seq] = row }
            nextSeq = batch.savedNextSeq
            nextOrder = batch.savedNextOrder
            snapshotCount = batch.savedCount
            orphans = batch.savedOrphans
        }
    }

    /// A stored entry as a row's directory writes it.
    package struct StoredEntry: Equatable, Sendable {
        var kind: Kind
        var viewer: Int64
        var id: String
        var createdAt: Int64
        var order: UInt64
        var length: Int
    }

    /// A removal as a row's directory writes it.
    package struct Tombstone: Equatable, Sendable {
        var kind: Kind
        var viewer: Int64
        var id: String
        /// The row whose entry was removed.
        var target: Int64
    }

    /// One batch's changes, and what to put back if its transaction fails.
    struct Batch {
        /// The batch's first row.
        let firstSeq: Int64
        /// The row being filled (the last one), which also takes the batch's tombstones.
        var seq: Int64
        var storedInRow = 0
        let createdAt: Int64
        var stored: [StoredEntry] = []
        var bodies: [[UInt8]] = []
        /// The row of each of `stored`.
        var storedSeqs: [Int64] = []
        var tombstones: [Tombstone] = []

        struct ListKey: Hashable {
            var kind: Kind
            var viewer: Int64
        }
        let savedNextSeq: Int64
        let savedNextOrder: UInt64
        let savedCount: Int
        let savedOrphans: Set<Int64>
        var savedLists: [ListKey: [Entry]?] = [:]
        var savedRows: [Int64: RowState?] = [:]
        var touchedRows: Set<Int64> { Set(savedRows.keys) }

        init(seq: Int64, createdAt: Int64, savedNextSeq: Int64, savedNextOrder: UInt64, savedCount: Int, savedOrphans: Set<Int64>) {
            self.firstSeq = seq
            self.seq = seq
            self.createdAt = createdAt
            self.savedNextSeq = savedNextSeq
            self.savedNextOrder = savedNextOrder
            self.savedCount = savedCount
            self.savedOrphans = savedOrphans
        }

        /// Whether `seq` is one of this batch's rows.
        func owns(_ seq: Int64) -> Bool { seq >= firstSeq }

        mutating func saveList(_ kind: Kind, _ viewer: Int64, _ list: [Entry]?) {
            let key = ListKey(kind: kind, viewer: viewer)
            if savedLists.index(forKey: key) == nil { savedLists[key] = .some(list) }
        }

        mutating func saveRow(seq: Int64, _ rows: [Int64: RowState]) {
            if savedRows.index(forKey: seq) == nil { savedRows[seq] = .some(rows[seq]) }
        }
    }

    /// A row ready to insert.
    struct EncodedRow {
        var seq: Int64
        var createdAt: Int64
        var directory: [UInt8]
        var body: [UInt8]
    }
}
