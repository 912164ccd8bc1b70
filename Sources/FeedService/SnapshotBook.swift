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
///
/// A new snapshot that its own client moved on from before the persister took it (the answer
/// to a request *since* it handed out another one: the next poll of a phone, the next event of
/// a live stream) is taken off that queue and kept in memory only, marked unstored
/// (``served(_:id:now:movingOnFrom:)``). Its client holds the newer one; it is stored after
/// all if it is handed out again, when shedding drops it from memory, and at a clean stop
/// (``queueUnstored()``). So at 50 writes/s, where a polling viewer got about three new snapshots
/// a second and every one was encoded and logged, a viewer's pass stores about one.
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
        package let viewer: Int64
        package let id: String
        /// The id's first bytes (``SnapshotTag``), kept in the key: the persister's queue holds
        /// thousands of keys, and a table that moved or rehashed them (a removal shifts its
        /// neighbours back) read each one's id storage, one cache miss per key.
        package let tag: UInt64

        package init(viewer: Int64, id: String) {
            self.init(viewer: viewer, id: id, tag: SnapshotTag.of(id))
        }

        /// A key whose tag is known (an entry's).
        init(viewer: Int64, id: String, tag: UInt64) {
            self.viewer = viewer
            self.id = id
            self.tag = tag
        }

        /// The viewer and the tag, not the whole id. Equal keys still compare the whole id.
        package func hash(into hasher: inout Hasher) {
            hasher.combine(viewer)
            hasher.combine(tag)
        }

        package static func == (left: Key, right: Key) -> Bool {
            left.viewer == right.viewer && left.tag == right.tag && left.id == right.id
        }

        /// By viewer, then id: in the order of the ids' text for ids of at least 8 bytes (every
        /// snapshot id), whose tag is their first 8 bytes, big-endian; the ids themselves are
        /// compared only when the tags are equal. (Shorter ids, in tests, come in some fixed
        /// order.)
        package static func inIDOrder(_ left: Key, _ right: Key) -> Bool {
            if left.viewer != right.viewer { return left.viewer < right.viewer }
            if left.tag != right.tag { return left.tag < right.tag }
            return left.id < right.id
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
        /// The persister's pass count (``passesTaken``) when this snapshot was queued as new:
        /// while it is still the count, the snapshot is in ``pending`` and in no store yet.
        var queuedInPass: UInt64
        /// Neither stored nor queued: its client moved on before a pass took it. Queued again
        /// before it leaves memory other than by retention.
        package internal(set) var isUnstored = false

        /// A snapshot taken into memory, served last at `servedAt` (the time the store has too),
        /// queued for (or read back from) the store before the pass after `queuedInPass`. It
        /// counts nothing until the book charges it for its place (``recharge(_:at:)``).
        init(id: String, structure: SnapshotStructure, servedAt: Int64, queuedInPass: UInt64) {
            self.id = id
            self.tag = SnapshotTag.of(id)
            self.structure = structure
            self.servedAt = servedAt
            self.storedServedAt = servedAt
            self.bytes = 0
            self.queuedInPass = queuedInPass
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
    /// How many times the persister took the queue (``takePending(restoring:)``,
    /// ``takePendingUpserts()``).
    private var passesTaken: UInt64 = 0
    /// New snapshots taken off the queue because their client moved on first, since the start.
    package private(set) var superseded: UInt64 = 0
    /// Entries retention removed, kept for ``takeRetired()`` to hand to the maintenance thread:
    /// freeing a snapshot releases every item array it alone holds, on memory long out of the
    /// processor's caches, and retention removes one on nearly every new snapshot once a viewer
    /// has its count (the live thread's and the event loops' time, under this book's lock).
    private var retired: [Entry] = []
    /// The most retired entries kept for the maintenance thread; past it they are freed where
    /// they are retired (a book with no maintenance thread: tests, benchmarks).
    private static let retiredKept = 16_384

    package init(retention: Retention) {
        self.retention = retention
    }

    /// `structure` (whose id is `id`) was just handed to its viewer at `now`, in answer to a
    /// request since snapshot `previous` (nil for a feed, or when every snapshot must be stored:
    /// replicas). A new `previous` the persister has not taken yet is then not stored (see the
    /// type's comment).
    package mutating func served(_ structure: SnapshotStructure, id: String, now: Int64, movingOnFrom previous: String? = nil) {
        let viewer = structure.viewer
        // The viewer's entries are moved out of the dictionary and back by their slot: one hash
        // lookup, where taking them out and putting them back took two and moved neighbours.
        // (`retire` and `remove` do not touch `viewers`, so the slot stays valid.)
        let slot = viewers.index(forKey: viewer)
        var entries: [Entry] = []
        if let slot { swap(&entries, &viewers.values[slot]) }
        let key = Key(viewer: viewer, id: id)
        // From the newest: a snapshot served again is most often the viewer's latest.
        if let index = entries.lastIndex(ofID: id, tag: key.tag) {
            var entry = remove(at: index, from: &entries)
            entry.servedAt = now
            if entry.isUnstored {
                // Someone holds it again: stored after all, as new.
                entry.isUnstored = false
                entry.queuedInPass = passesTaken
                entry.storedServedAt = now
                pending.upserts[key] = (entry.structure, now)
            } else if now - entry.storedServedAt >= max(1, retention.maxAge / 16) {
                entry.storedServedAt = now
                pending.upserts[key] = (entry.structure, now)
            }
            entries.append(entry)
            recharge(&entries, at: entries.count - 1)
        } else {
            entries.append(Entry(id: id, structure: structure, servedAt: now, queuedInPass: passesTaken))
            recharge(&entries, at: entries.count - 1)
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
        if let previous, previous != id, let index = entries.lastIndex(ofID: previous), entries[index].queuedInPass == passesTaken,
            !entries[index].isUnstored, pending.upserts.removeValue(forKey: Key(viewer: viewer, id: previous, tag: entries[index].tag)) != nil
        {
            entries[index].isUnstored = true
            superseded &+= 1
        }
        while entries.count > retention.perViewer {
            retire(remove(at: 0, from: &entries), viewer: viewer)
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
        guard let slot = viewers.index(forKey: viewer), let index = viewers.values[slot].lastIndex(ofID: id, tag: key.tag) else {
            if pending.deletions.contains(key) { return .expired }
            // Shed from memory before the persister wrote it: the queue still holds it.
            if let queued = pending.upserts[key] ?? again[key] {
                return now - queued.servedAt <= retention.maxAge ? .found(queued.structure) : .expired
            }
            return .notInMemory
        }
        guard now - viewers.values[slot][index].servedAt <= retention.maxAge else {
            var entries: [Entry] = []
            swap(&entries, &viewers.values[slot])
            retire(remove(at: index, from: &entries), viewer: viewer)
            if entries.isEmpty {
                viewers.remove(at: slot)
            } else {
                swap(&entries, &viewers.values[slot])
            }
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
        // Read back from the store: queued in no pass the persister can still take.
        entries.insert(Entry(id: id, structure: structure, servedAt: servedAt, queuedInPass: passesTaken &- 1), at: 0)
        recharge(&entries, at: 0)
        recharge(&entries, at: 1)
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
        passesTaken &+= 1
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
            guard again[key] == nil, let slot = viewers.index(forKey: snapshot.viewer), let index = viewers.values[slot].lastIndex(ofID: snapshot.id)
            else { continue }
            // Stored by this queue, unstored ones too.
            viewers.values[slot][index].isUnstored = false
            let entry = viewers.values[slot][index]
            again[key] = (entry.structure, entry.servedAt)
            againOrder.append(key)
        }
    }

    /// How many snapshots are still queued to be stored again.
    package var storingAgain: Int { again.count }

    /// Hands only the queued snapshots (not the deletions and pruning) to the persister.
    package mutating func takePendingUpserts() -> Pending {
        passesTaken &+= 1
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
            // The entries kept may have new neighbours.
            for index in kept.indices { recharge(&kept, at: index) }
            viewers[viewer] = kept.isEmpty ? nil : kept
        }
        return dropped
    }

    /// The viewers with snapshots in memory, for ``dropExpired(now:viewers:)`` a run at a time.
    package var viewerIDs: [Int64] { Array(viewers.keys) }

    /// Queues the deletion of an entry retention removed (``remove(at:from:)`` took it out),
    /// and keeps the entry to be freed by the maintenance thread (``takeRetired()``).
    private mutating func retire(_ entry: consuming Entry, viewer: Int64) {
        let key = Key(viewer: viewer, id: entry.id, tag: entry.tag)
        pending.upserts[key] = nil
        if !again.isEmpty { again[key] = nil }
        // An unstored snapshot has no row to delete.
        if !entry.isUnstored { pending.deletions.insert(key) }
        if retired.count < Self.retiredKept { retired.append(entry) }
    }

    /// The entries retention removed since the last call, for the caller to free after it
    /// releases the lock.
    package mutating func takeRetired() -> [Entry] {
        var taken: [Entry] = []
        swap(&taken, &retired)
        retired.reserveCapacity(min(taken.count, Self.retiredKept))
        return taken
    }

    /// Queues an entry leaving memory for a reason other than retention (shedding): an unstored
    /// one is stored after all, so it is read back when asked for.
    private mutating func keepInStore(_ entry: Entry, viewer: Int64) {
        guard entry.isUnstored else { return }
        pending.upserts[Key(viewer: viewer, id: entry.id, tag: entry.tag)] = (entry.structure, entry.servedAt)
    }

    /// Queues every unstored snapshot in memory for the store (a clean stop: every snapshot
    /// handed out then works after the restart). Returns how many.
    @discardableResult
    package mutating func queueUnstored() -> Int {
        var queued = 0
        for slot in viewers.indices {
            let viewer = viewers.keys[slot]
            for index in viewers.values[slot].indices where viewers.values[slot][index].isUnstored {
                let entry = viewers.values[slot][index]
                pending.upserts[Key(viewer: viewer, id: entry.id, tag: entry.tag)] = (entry.structure, entry.servedAt)
                viewers.values[slot][index].isUnstored = false
                viewers.values[slot][index].queuedInPass = passesTaken &- 1
                queued += 1
            }
        }
        return queued
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
            var entries: [Entry] = []
            swap(&entries, &viewers.values[slot])
            let entry = remove(at: index, from: &entries)
            swap(&entries, &viewers.values[slot])
            keepInStore(entry, viewer: candidate.viewer)
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
                keepInStore(entry, viewer: viewer)
                dropped.append(entry)
            }
        }
        return dropped
    }

    /// ``bytes`` counted again from scratch, every entry beside its neighbour (tests: the two
    /// must agree after any change).
    package var recountedBytes: Int {
        viewers.values.reduce(0) { total, entries in
            entries.indices.reduce(total) { $0 + Self.size(of: entries[$1].structure, sharingWith: $1 > 0 ? entries[$1 - 1].structure : nil) }
        }
    }

    /// Removes entry `index` of `entries` (a viewer's, taken out of ``viewers``): the book no
    /// longer counts it (the entry returned counts 0 bytes), and the next newer entry is
    /// charged for its new place.
    private mutating func remove(at index: Int, from entries: inout [Entry]) -> Entry {
        var entry = entries.remove(at: index)
        bytes -= entry.bytes
        entry.bytes = 0
        recharge(&entries, at: index)
        return entry
    }

    /// Charges entry `index` of `entries` again: its structure's size beside the entry before it
    /// (``size(of:sharingWith:)``), which changed or is new. Nothing when there is no such entry.
    private mutating func recharge(_ entries: inout [Entry], at index: Int) {
        guard entries.indices.contains(index) else { return }
        // Read in place: passing the structures themselves copied each (every field counted up
        // and down), twice on most events of a live stream.
        let cost = entries.withUnsafeBufferPointer { entries in
            Self.size(of: entries[index].structure.sections, sharingWith: index > 0 ? entries[index - 1].structure.sections : [])
        }
        bytes += cost - entries[index].bytes
        entries[index].bytes = cost
    }

    /// An estimate of the memory a structure holds beyond what it shares with `earlier` (the
    /// viewer's next older snapshot in the book): the entry, its array of sections, and each
    /// section's array of items (24 bytes an item: an id held inline and a version) unless it
    /// is `earlier`'s same section's very array. A page patched in place shares the item arrays
    /// of every section the patch left alone with the page it was patched from, so its snapshot
    /// costs about its sections' slots: counting every item of every snapshot put the book at
    /// about five times its real size, and shedding (and storing the snapshots it dropped) ran
    /// all the time in the polling mix with RSS far from the budget.
    ///
    /// Charged this way, the book's total is at least the memory of the arrays its entries hold:
    /// an array shared by neighbours is counted by the older one, and one shared by entries
    /// further apart is counted more than once. An entry is charged again when its neighbour
    /// changes (``remove(at:from:)``, ``recharge(_:at:)``).
    package static func size(of structure: SnapshotStructure, sharingWith earlier: SnapshotStructure? = nil) -> Int {
        size(of: structure.sections, sharingWith: earlier?.sections ?? [])
    }

    /// ``size(of:sharingWith:)`` from the structures' sections (`earlier` empty: none).
    private static func size(of sections: [SnapshotStructure.Section], sharingWith earlier: [SnapshotStructure.Section]) -> Int {
        var size = 256 + sections.count * 48
        sections.withUnsafeBufferPointer { sections in
            earlier.withUnsafeBufferPointer { earlier in
                for index in sections.indices {
                    // Neither the views' box nor an array shared with `earlier` is read: they are
                    // often out of the cache (one load of each shared array's count was 65 % of
                    // this function's samples, about 2 % of the event loop's at 50 writes/s).
                    if sections[index].hasViews { size += 96 }
                    if index < earlier.count, earlier[index].items.sharesStorage(with: sections[index].items) { continue }
                    let count = sections[index].items.count
                    guard count > 0 else { continue }
                    size += 48 + count * 24
                }
            }
        }
        return size
    }
}

extension Array where Element == SnapshotBook.Entry {
    /// Where the entry of snapshot `id` is, searched from the newest (clients ask with the
    /// snapshot they were given last); a viewer holds each id once.
    func lastIndex(ofID id: String) -> Int? {
        lastIndex(ofID: id, tag: SnapshotTag.of(id))
    }

    /// ``lastIndex(ofID:)`` for an id whose tag is known.
    func lastIndex(ofID id: String, tag: UInt64) -> Int? {
        lastIndex { $0.tag == tag && $0.id == id }
    }
}
