import FeedStore

/// The snapshots handed out, in memory: what a delta is computed against. A pure state machine
/// (time is passed in), guarded by the service's lock and tested without a store.
///
/// Retention, enforced here on every lookup:
/// - per viewer, the newest ``Retention/perViewer`` snapshots *by when they were last served*
///   (serving a snapshot again, e.g. a cached page, makes it the newest);
/// - none older than ``Retention/maxAge`` since it was last served (410 after that).
///
/// Memory is bounded by ``Retention/byteBudget``: ``shedIfOverBudget()`` (the maintenance thread
/// calls it, so its sort never runs on an event loop) drops older snapshots, then whole viewers,
/// least recently served first. That is not retention: their snapshots stay in the store (the
/// persister writes every snapshot there in batches) and are read back on demand.
///
/// Everything the store must learn is queued in ``pending`` for the persister: new snapshots,
/// refreshed serve times (only when the stored one is stale by a sixteenth of the maximum
/// age, so polling does not turn into writes) and the ids retention removed.
package struct SnapshotBook {
    package struct Retention: Sendable {
        /// Snapshots kept per viewer.
        var perViewer: Int
        /// Milliseconds a snapshot stays usable after it was last served.
        var maxAge: Int64
        /// Bytes of structures kept in memory.
        var byteBudget: Int

        package init(perViewer: Int, maxAge: Int64, byteBudget: Int) {
            self.perViewer = perViewer
            self.maxAge = maxAge
            self.byteBudget = byteBudget
        }
    }

    package struct Key: Hashable, Sendable {
        package var viewer: Int64
        package var id: String

        package init(viewer: Int64, id: String) {
            self.viewer = viewer
            self.id = id
        }

        /// The viewer and the id's first 8 bytes (``SnapshotTag``: random hex digits),
        /// not the whole id: every snapshot handed out is queued under its key. Equal keys still
        /// compare the whole id.
        package func hash(into hasher: inout Hasher) {
            hasher.combine(viewer)
            hasher.combine(SnapshotTag.of(id))
        }
    }

    package struct Entry {
        package internal(set) var id: String
        /// The id's first bytes (``SnapshotTag``), kept beside the entry: a viewer's entries are
        /// searched by id on every poll, and comparing the ids themselves read each one's
        /// storage, one cache miss per entry.
        package let tag: UInt64
        var structure: SnapshotStructure
        package internal(set) var servedAt: Int64
        /// The serve time the store has (or will have once `pending` is written).
        var storedServedAt: Int64
        package internal(set) var bytes: Int

        /// A snapshot taken into memory, served last at `servedAt` (the time the store has too).
        init(id: String, structure: SnapshotStructure, servedAt: Int64, bytes: Int) {
            self.id = id
            self.tag = SnapshotTag.of(id)
            self.structure = structure
            self.servedAt = servedAt
            self.storedServedAt = servedAt
            self.bytes = bytes
        }
    }

    /// What the persister must write.
    package struct Pending {
        /// New snapshots, and known ones whose stored serve time is stale: the whole row.
        package var upserts: [Key: (structure: SnapshotStructure, servedAt: Int64)] = [:]
        /// Snapshots retention removed.
        package var deletions: Set<Key> = []
        /// Viewers whose stored snapshots may now exceed what the store keeps: pruned after the
        /// upserts (once per ``Retention/perViewer`` new snapshots, not on every write).
        package var prune: Set<Int64> = []

        package var isEmpty: Bool { upserts.isEmpty && deletions.isEmpty && prune.isEmpty }
    }

    package enum Lookup: Equatable {
        case found(SnapshotStructure)
        /// Retention removed it (count or age): the answer is 410.
        case expired
        /// Not in memory: it may be in the store (evicted for memory, or from before a restart).
        case notInMemory
    }

    package let retention: Retention
    private(set) var viewers: [Int64: [Entry]] = [:]
    package private(set) var bytes = 0
    private(set) var pending = Pending()
    /// Snapshots to store again (``storeAgain(_:)``), and their keys in the order they were
    /// queued (most recently served first), from `againNext` on.
    private var again: [Key: (structure: SnapshotStructure, servedAt: Int64)] = [:]
    private var againOrder: [Key] = []
    private var againNext = 0
    /// New snapshots queued per viewer since its stored rows were last pruned.
    private var unpruned: [Int64: Int] = [:]

    package init(retention: Retention) {
        self.retention = retention
    }

    /// `structure` (whose id is `id`) was just handed to its viewer at `now`.
    package mutating func served(_ structure: SnapshotStructure, id: String, now: Int64) {
        let viewer = structure.viewer
        // The viewer's entries are moved out of the dictionary and back by their slot: one hash
        // lookup, where taking them out and putting them back took two and moved neighbours.
        // (`retire` does not touch `viewers`, so the slot stays valid.)
        let slot = viewers.index(forKey: viewer)
        var entries: [Entry] = []
        if let slot { swap(&entries, &viewers.values[slot]) }
        let key = Key(viewer: viewer, id: id)
        // From the newest: a snapshot served again is most often the viewer's latest.
        if let index = entries.lastIndex(ofID: id) {
            var entry = entries.remove(at: index)
            entry.servedAt = now
            if now - entry.storedServedAt >= max(1, retention.maxAge / 16) {
                entry.storedServedAt = now
                pending.upserts[key] = (entry.structure, now)
            }
            entries.append(entry)
        } else {
            let size = SnapshotBook.size(of: structure)
            entries.append(Entry(id: id, structure: structure, servedAt: now, bytes: size))
            bytes += size
            pending.upserts[key] = (structure, now)
            pending.deletions.remove(key)
            let queued = unpruned[viewer, default: 0] + 1
            if queued >= retention.perViewer {
                pending.prune.insert(viewer)
                unpruned[viewer] = nil
            } else {
                unpruned[viewer] = queued
            }
        }
        while entries.count > retention.perViewer {
            retire(entries.removeFirst(), viewer: viewer)
        }
        if let slot {
            swap(&entries, &viewers.values[slot])
        } else {
            viewers[viewer] = entries
        }
    }

    /// The snapshot `id` of `viewer` at `now`, enforcing retention.
    package mutating func lookup(viewer: Int64, id: String, now: Int64) -> Lookup {
        let key = Key(viewer: viewer, id: id)
        // From the newest: clients ask with the snapshot they were given last. Read in place
        // by the viewer's slot: a copy of the entry counted its id and structure up and down
        // on every poll and live event, on memory the caches no longer held.
        guard let slot = viewers.index(forKey: viewer), let index = viewers.values[slot].lastIndex(ofID: id) else {
            if pending.deletions.contains(key) { return .expired }
            // Shed from memory before the persister wrote it: the queue still holds it.
            if let queued = pending.upserts[key] ?? again[key] {
                return now - queued.servedAt <= retention.maxAge ? .found(queued.structure) : .expired
            }
            return .notInMemory
        }
        guard now - viewers.values[slot][index].servedAt <= retention.maxAge else {
            let entry = viewers.values[slot].remove(at: index)
            retire(entry, viewer: viewer)
            if viewers.values[slot].isEmpty { viewers.remove(at: slot) }
            return .expired
        }
        return .found(viewers.values[slot][index].structure)
    }

    /// A snapshot read back from the store (served last at `servedAt`), taken into memory as
    /// the viewer's oldest so it does not push out ones served since.
    package mutating func adopt(_ structure: SnapshotStructure, id: String, servedAt: Int64) {
        let viewer = structure.viewer
        var entries = viewers[viewer] ?? []
        guard entries.lastIndex(ofID: id) == nil else { return }
        guard entries.count < retention.perViewer else { return }
        let size = SnapshotBook.size(of: structure)
        entries.insert(Entry(id: id, structure: structure, servedAt: servedAt, bytes: size), at: 0)
        bytes += size
        viewers[viewer] = entries
    }

    /// Whether a stored snapshot served last at `servedAt` is still usable at `now`.
    package func isFresh(servedAt: Int64, now: Int64) -> Bool {
        now - servedAt <= retention.maxAge
    }

    /// Hands the queued writes to the persister and starts a new queue.
    ///
    /// With them, up to `restoring` of the snapshots to store again (``storeAgain(_:)``), the
    /// most recently served first: a pass stays about as large as the snapshots of a busy
    /// second, and the maintenance thread stores the rest at its next passes.
    package mutating func takePending(restoring limit: Int = 5_000) -> Pending {
        var taken = pending
        pending = Pending()
        // The next pass queues about as many: grown from empty, the queue was rehashed a dozen
        // times over while a like reached thousands of viewers.
        pending.upserts.reserveCapacity(taken.upserts.count)
        pending.deletions.reserveCapacity(taken.deletions.count)
        var moved = 0
        while moved < limit, againNext < againOrder.count {
            let key = againOrder[againNext]
            againNext += 1
            guard let value = again.removeValue(forKey: key) else { continue }  // retired since
            if taken.upserts[key] == nil { taken.upserts[key] = value }
            moved += 1
        }
        if againNext == againOrder.count {
            (again, againOrder, againNext) = ([:], [], 0)
        }
        return taken
    }

    /// Every snapshot in memory, in no order, for a store that lost what it held (PostgreSQL's
    /// unlogged snapshots after a crash of PostgreSQL). The caller sorts them outside the lock,
    /// most recently served first, and hands them to ``storeAgain(_:)`` a run at a time.
    package func snapshotsToStoreAgain() -> [ListedSnapshot] {
        var listed: [ListedSnapshot] = []
        listed.reserveCapacity(viewers.values.reduce(0) { $0 + $1.count })
        for (viewer, entries) in viewers {
            for entry in entries { listed.append(ListedSnapshot(servedAt: entry.servedAt, viewer: viewer, id: entry.id)) }
        }
        return listed
    }

    /// Queues `listed` to be stored again, in that order, skipping those retired since they
    /// were listed. Only ``takePending(restoring:)`` hands them out (the maintenance thread's
    /// passes), never ``takePendingUpserts()`` (an answer's hand-off): no answer's pass grows by
    /// them.
    package mutating func storeAgain(_ listed: some Sequence<ListedSnapshot>) {
        for snapshot in listed {
            let key = Key(viewer: snapshot.viewer, id: snapshot.id)
            guard again[key] == nil, let entries = viewers[snapshot.viewer], let index = entries.lastIndex(ofID: snapshot.id) else { continue }
            let entry = entries[index]
            again[key] = (entry.structure, entry.servedAt)
            againOrder.append(key)
        }
    }

    /// How many snapshots are still queued to be stored again.
    package var storingAgain: Int { again.count }

    /// Hands only the queued snapshots (not the deletions and pruning) to the persister.
    package mutating func takePendingUpserts() -> Pending {
        let taken = Pending(upserts: pending.upserts)
        pending.upserts = [:]
        pending.upserts.reserveCapacity(taken.upserts.count)
        return taken
    }

    /// Puts back a batch the persister could not write, under anything queued since.
    package mutating func requeue(_ failed: Pending) {
        for (key, value) in failed.upserts where pending.upserts[key] == nil && !pending.deletions.contains(key) {
            pending.upserts[key] = value
        }
        for key in failed.deletions where pending.upserts[key] == nil {
            pending.deletions.insert(key)
        }
        pending.prune.formUnion(failed.prune)
    }

    /// Drops the snapshots of `viewers` older than the maximum age (for viewers who stopped
    /// polling); the store prunes its own copies by age, nothing is queued. Returns what it
    /// dropped: the caller frees it after the lock is released, and takes the lock once per run
    /// of viewers, so a lookup on an event loop never waits for all of them (nor for their
    /// memory to be freed).
    package mutating func dropExpired(now: Int64, viewers keys: ArraySlice<Int64>) -> [Entry] {
        var dropped: [Entry] = []
        for viewer in keys {
            guard let entries = viewers[viewer], entries.contains(where: { now - $0.servedAt > retention.maxAge }) else { continue }
            var kept: [Entry] = []
            for entry in entries {
                if now - entry.servedAt <= retention.maxAge {
                    kept.append(entry)
                } else {
                    bytes -= entry.bytes
                    dropped.append(entry)
                }
            }
            viewers[viewer] = kept.isEmpty ? nil : kept
        }
        return dropped
    }

    /// The viewers with snapshots in memory, for ``dropExpired(now:viewers:)`` a run at a time.
    package var viewerIDs: [Int64] { Array(viewers.keys) }

    private mutating func retire(_ entry: Entry, viewer: Int64) {
        bytes -= entry.bytes
        let key = Key(viewer: viewer, id: entry.id)
        pending.upserts[key] = nil
        again[key] = nil
        pending.deletions.insert(key)
    }

    /// A snapshot listed under the lock, to be sorted by `servedAt` outside it: one to store
    /// again.
    package struct ListedSnapshot {
        package var servedAt: Int64
        package var viewer: Int64
        package var id: String
    }

    /// A snapshot shedding may drop (not its viewer's newest), listed under the lock and sorted
    /// by `servedAt` outside it. Plain values, the id's tag instead of the id: the book holds
    /// a hundred thousand snapshots in the live fan-out, and listing their ids counted each
    /// one's storage up, then down when the list was freed, on memory the caches no longer held.
    package struct SheddingCandidate {
        package var servedAt: Int64
        package var viewer: Int64
        /// The id's first bytes (``Entry/tag``).
        package var tag: UInt64
    }

    /// Frees memory down to three quarters of the budget: first the older snapshots of every
    /// viewer (clients poll from their newest), least recently served first, then whole
    /// viewers. Their snapshots stay in the store (or in the persister's queue). In one go;
    /// the service does it a run at a time under its lock (``FeedService/trimSnapshotMemory()``).
    package mutating func shedIfOverBudget() {
        guard let candidates = sheddingCandidates() else { return }
        _ = shed(candidates.sorted { $0.servedAt < $1.servedAt }[...])
        guard isOverTarget else { return }
        _ = shedViewers(viewersByRecency().sorted { $0.servedAt < $1.servedAt }.map(\.viewer)[...])
    }

    /// Whether shedding has more to free: over three quarters of the budget.
    package var isOverTarget: Bool { bytes > retention.byteBudget / 4 * 3 }

    /// When over budget, the snapshots ``shed(_:)`` may drop, in no order; nil when under
    /// budget. The caller sorts them by `servedAt` outside the lock: under it, the sort held up
    /// every lookup (an event loop's too) for milliseconds.
    package func sheddingCandidates() -> [SheddingCandidate]? {
        guard bytes > retention.byteBudget else { return nil }
        var older: [SheddingCandidate] = []
        for (viewer, entries) in viewers where entries.count > 1 {
            for index in entries.indices.dropLast() {
                older.append(SheddingCandidate(servedAt: entries[index].servedAt, viewer: viewer, tag: entries[index].tag))
            }
        }
        return older
    }

    /// Drops `candidates` (least recently served first) while over three quarters of the
    /// budget. Candidates served or dropped since they were listed are skipped; a viewer's
    /// newest snapshot is never dropped this way. Returns what it dropped: the caller frees it
    /// after releasing the lock (freeing thousands of structures under it held up every
    /// lookup, an event loop's too, for 5 to 18 ms).
    package mutating func shed(_ candidates: ArraySlice<SheddingCandidate>) -> [Entry] {
        var dropped: [Entry] = []
        for candidate in candidates {
            guard isOverTarget else { break }
            // Found and removed in place by the viewer's slot: a copy taken out of the dictionary
            // while it still holds the array would copy every entry for each one removed. The tag
            // and the serve time name one of a viewer's few snapshots (and a snapshot dropped
            // here stays in the store, or the persister's queue, in any case).
            guard let slot = viewers.index(forKey: candidate.viewer),
                let index = viewers.values[slot].lastIndex(where: { $0.tag == candidate.tag && $0.servedAt == candidate.servedAt }),
                index < viewers.values[slot].count - 1
            else { continue }
            let entry = viewers.values[slot].remove(at: index)
            bytes -= entry.bytes
            dropped.append(entry)
        }
        return dropped
    }

    /// Every viewer with the time its newest snapshot was served, for ``shedViewers(_:)``
    /// (sorted by the caller, outside the lock).
    package func viewersByRecency() -> [(viewer: Int64, servedAt: Int64)] {
        viewers.map { ($0.key, $0.value.last?.servedAt ?? 0) }
    }

    /// Drops whole viewers, in the order given (least recently served first), while over three
    /// quarters of the budget; returns what it dropped, as ``shed(_:)`` does.
    package mutating func shedViewers(_ order: ArraySlice<Int64>) -> [Entry] {
        var dropped: [Entry] = []
        for viewer in order {
            guard isOverTarget else { break }
            for entry in viewers.removeValue(forKey: viewer) ?? [] {
                bytes -= entry.bytes
                dropped.append(entry)
            }
        }
        return dropped
    }

    /// An estimate of a structure's memory: ids and versions of every section and item.
    package static func size(of structure: SnapshotStructure) -> Int {
        var size = 128
        for section in structure.sections {
            size += 64 + section.id.utf8.count + section.kind.utf8.count
            size += section.items.count * 64
        }
        return size
    }
}

extension Array where Element == SnapshotBook.Entry {
    /// Where the entry of snapshot `id` is, searched from the newest (clients ask with the
    /// snapshot they were given last); a viewer holds each id once.
    func lastIndex(ofID id: String) -> Int? {
        let tag = SnapshotTag.of(id)
        return lastIndex { $0.tag == tag && $0.id == id }
    }
}
