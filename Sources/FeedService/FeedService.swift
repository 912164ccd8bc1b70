public import FeedIndex
public import FeedStore
public import FeedWire
import Foundation
import JSONBytes
import Synchronization

/// Composes viewers' feeds from the in-memory ``FeedIndex``, remembers the snapshots it hands
/// out, and answers deltas.
///
/// Thread-safe: called from every HTTP worker at once. The read path runs no SQL and never
/// waits on storage:
/// - A composed page is cached per viewer and parameters with what it depends on
///   (``FeedDependencies``). The next request checks the index changes applied since against
///   those dependencies: a write that touches nothing the viewer sees costs a lookup, not a
///   recomposition.
/// - Items are rendered once per version of what they show and shared by every page and delta.
/// - Snapshots are kept in memory (``SnapshotBook``) and written to the store in batches by
///   ``persistSnapshots()``, off the request path. Only a snapshot no longer in memory (evicted
///   for memory, or handed out before a restart) needs the store:
///   ``delta(viewer:since:format:)`` answers ``DeltaLookup/needsStorage`` and the caller, off
///   its event loop, calls ``deltaReadingStorage(viewer:since:format:)``.
///
/// Writes go through the store as before; ``catchUp()`` (or ``write(_:)``, which does both)
/// brings the index up to date so the writer reads its own write.
public final class FeedService: Sendable {
    /// The store everything comes from and writes go to.
    public let store: any FeedStorage
    /// What feeds are composed from.
    public let index: FeedIndex
    /// The budgets the service was made with.
    public let options: Options

    let items: ItemCache
    let pages: PageCache
    let deltas: Mutex<ByteBoundedCache<DeltaKey, DeltaDocument>>
    /// Delta documents built from a patch's items, from a shift's edits, and by a diff.
    let deltasPatched = Atomic<UInt64>(0)
    let deltasEdited = Atomic<UInt64>(0)
    let deltasDiffed = Atomic<UInt64>(0)
    let book: Mutex<SnapshotBook>
    /// Serialises ``persistSnapshots()``, and holds the bases it stores snapshots against.
    private let persisting: Mutex<SnapshotBases>
    /// Told after each catch-up that applied entries (``onAdvance(_:)``).
    private let advanceObservers = Mutex<[@Sendable () -> Void]>([])
    /// ``storeEverySnapshot()``.
    private let storesEverySnapshot = Atomic(false)

    /// Creates a service over `store` and `index` (loaded from the store when nil).
    ///
    /// - Throws: ``FeedStore/FeedStoreError`` when the index cannot be loaded.
    public init(store: any FeedStorage, index: FeedIndex? = nil, options: Options = Options()) throws(FeedStoreError) {
        self.store = store
        if let index {
            self.index = index
        } else {
            self.index = try FeedIndex(loadingFrom: store)
        }
        self.options = options
        items = ItemCache(budget: options.itemCacheBytes)
        pages = PageCache(index: self.index, items: items, budget: options.pageCacheBytes, notesPerPage: options.notesPerPage)
        deltas = Mutex(ByteBoundedCache(budget: options.deltaCacheBytes))
        persisting = Mutex(SnapshotBases(budget: options.snapshotBytes / 4))
        let retention = store.options.snapshotRetention
        book = Mutex(
            SnapshotBook(
                retention: SnapshotBook.Retention(
                    perViewer: retention.maxPerViewer, maxAge: retention.maxAgeMilliseconds, byteBudget: options.snapshotBytes)))
    }

    private var now: Int64 { store.options.clock() }

    // MARK: - Writes

    /// Runs a store write, then applies it to the index before returning, so whoever wrote
    /// reads their own write. Blocks on storage: call it off the event loop.
    ///
    /// - Throws: what `body` throws. A failure to read the change back is not thrown (the write
    ///   is committed); the background catch-up applies it later.
    public func write<T>(_ body: (any FeedStorage) throws(FeedStoreError) -> T) throws(FeedStoreError) -> T {
        let value = try body(store)
        _ = try? catchUp()
        return value
    }

    /// Applies the change-log entries committed since the index was last brought up to date
    /// (by this process or another). Blocks on storage.
    ///
    /// - Parameter target: when given, nothing is read if the index already holds every entry
    ///   up to it (see ``FeedIndex/FeedIndex/catchUp(from:reaching:)``).
    /// - Returns: how many entries were applied.
    @discardableResult
    public func catchUp(reaching target: Int64? = nil) throws(FeedStoreError) -> Int {
        let applied = try index.catchUp(from: store, reaching: target)
        if applied > 0 {
            for observer in advanceObservers.withLock({ $0 }) { observer() }
        }
        return applied
    }

    /// Registers `observer`, called on the thread that caught up each time ``catchUp()`` applied
    /// entries: feeds may have changed (long polls re-check their viewers). It must not block.
    public func onAdvance(_ observer: @escaping @Sendable () -> Void) {
        advanceObservers.withLock { $0.append(observer) }
    }

    // MARK: - Feed

    /// The feed page for `viewer` asked for with `parameters`; its snapshot is remembered for
    /// later deltas. Runs no SQL.
    ///
    /// - Throws: ``FeedError/viewerNotFound(_:)``.
    public func feed(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> RenderedFeed {
        try handOut(viewer: viewer, parameters: parameters)
    }

    /// The page now, remembered as handed out in answer to a request since `previous` (nil for
    /// a feed).
    private func handOut(viewer: Int64, parameters: FeedParameters, movingOnFrom previous: String? = nil) throws(FeedError) -> RenderedFeed {
        let page = try pages.page(viewer: viewer, parameters: parameters)
        remember(page, movingOnFrom: previous)
        return page
    }

    /// What a live stream needs after a change: the delta from `since` to the page now. Nil
    /// when `since` is not in memory (``deltaReadingStorage(viewer:since:format:)`` brings it
    /// back).
    ///
    /// - Throws: ``FeedError/snapshotUnknown(_:)``, ``FeedError/viewerNotFound(_:)``.
    public func liveDelta(viewer: Int64, since: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome? {
        guard SnapshotStructure.isWellFormedID(since) else { throw .snapshotUnknown(since) }
        let now = self.now
        let old: SnapshotStructure
        switch book.withLock({ $0.lookup(viewer: viewer, id: since, now: now) }) {
        case .found(let structure): old = structure
        case .expired: throw .snapshotUnknown(since)
        case .notInMemory: return nil
        }
        let entry = try pages.entry(viewer: old.viewer, parameters: old.parameters)
        remember(entry.page, movingOnFrom: since)
        // Not kept in the delta cache: each stream asks for its own delta once.
        return delta(from: old, oldID: since, format: format, current: entry.page, caching: false)
    }

    /// The page for a live stream that starts over (a reset), remembered as handed out.
    ///
    /// - Throws: ``FeedError/viewerNotFound(_:)``.
    public func livePage(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> RenderedFeed {
        let entry = try pages.entry(viewer: viewer, parameters: parameters)
        remember(entry.page)
        return entry.page
    }

    /// The pages `holder` holds (``holdPage(viewer:parameters:for:)``) that a change applied
    /// since its last call may have touched: a superset (the changes noted on them,
    /// ``PageMarks``), in no order. A change that touches no held page adds nothing, whatever
    /// the number of pages held. The live streams and the long polls check only these pages'
    /// streams and requests.
    public func heldPagesTouched(by holder: PageHolder) -> [(viewer: Int64, parameters: FeedParameters)] {
        pages.heldPagesTouched(by: holder).map { ($0.viewer, $0.parameters) }
    }

    /// What the page of `viewer` with `parameters` shows, as registered for notes (tests).
    package func interests(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> PageInterests {
        PageInterests(try pages.entry(viewer: viewer, parameters: parameters).dependencies)
    }

    /// Keeps the page of `viewer` with `parameters` composed and current until as many
    /// ``releasePage(viewer:parameters:for:)`` calls, whatever the page cache's budget, and
    /// reports it to `holder` when a change may touch it: a live stream holds its page, which it
    /// is sent the changes of, and a waiting long poll the page of its snapshot. Its memory is
    /// outside the budget, bounded by how many pages are held (the live streams' and long polls'
    /// limits).
    ///
    /// Returns whether the page was composed: one that was not is noted on only once it is
    /// asked for again (which composes it), so its holder must ask for it once.
    @discardableResult
    public func holdPage(viewer: Int64, parameters: FeedParameters, for holder: PageHolder) -> Bool {
        pages.hold(viewer: viewer, parameters: parameters, by: holder)
    }

    /// Undoes one ``holdPage(viewer:parameters:for:)``: the page is again evicted like any other.
    public func releasePage(viewer: Int64, parameters: FeedParameters, for holder: PageHolder) {
        pages.release(viewer: viewer, parameters: parameters, by: holder)
    }

    /// The parameters snapshot `id` was asked for with, when it is in memory and is `viewer`'s.
    public func parameters(ofSnapshot id: String, viewer: Int64) -> FeedParameters? {
        let now = self.now
        guard case .found(let structure) = book.withLock({ $0.lookup(viewer: viewer, id: id, now: now) }) else { return nil }
        return structure.parameters
    }

    /// Stores every snapshot handed out from now on, even one its client moves on from before
    /// the maintenance thread's next pass. By default one server owns its store, and such a
    /// snapshot is stored only if it is handed out again, dropped from memory for its budget,
    /// or still in memory at a clean stop (``SnapshotBook``). Replicas need every one: another
    /// replica may be asked for any of them. The server calls this when answers wait for their
    /// snapshots to be stored.
    public func storeEverySnapshot() {
        storesEverySnapshot.store(true, ordering: .relaxed)
    }

    /// Notes `page` as handed out; `previous` is the snapshot the request was since, which its
    /// client then moved on from.
    private func remember(_ page: RenderedFeed, movingOnFrom previous: String? = nil) {
        let now = self.now
        let previous = storesEverySnapshot.load(ordering: .relaxed) ? nil : previous
        book.withLock { $0.served(page.structure, id: page.snapshotID, now: now, movingOnFrom: previous) }
    }

    // MARK: - Deltas

    /// The delta from snapshot `since` (issued earlier to this viewer) to the feed now, or
    /// ``DeltaLookup/needsStorage`` when `since` is not in memory and must be looked up in the
    /// store: then call ``deltaReadingStorage(viewer:since:format:)`` off the event loop. Runs
    /// no SQL.
    ///
    /// - Throws: ``FeedError/snapshotUnknown(_:)`` when retention removed `since`, or it is no
    ///   snapshot id at all (the server refuses those with 400 before asking);
    ///   ``FeedError/viewerNotFound(_:)``.
    /// With `composing` false, a delta whose page must be composed again is not computed:
    /// ``DeltaLookup/needsComposition`` says to ask again, composing, off the event loop.
    public func delta(viewer: Int64, since: String, format: DeltaFormat, composing: Bool = true) throws(FeedError) -> DeltaLookup {
        guard SnapshotStructure.isWellFormedID(since) else { throw .snapshotUnknown(since) }
        let now = self.now
        switch book.withLock({ $0.lookup(viewer: viewer, id: since, now: now) }) {
        case .found(let old) where !composing:
            guard let page = pages.cachedEntry(viewer: old.viewer, parameters: old.parameters)?.page else { return .needsComposition }
            remember(page, movingOnFrom: since)
            return .answered(delta(from: old, oldID: since, format: format, current: page))
        case .found(let old):
            return .answered(try delta(from: old, oldID: since, format: format))
        case .expired:
            throw .snapshotUnknown(since)
        case .notInMemory:
            return .needsStorage
        }
    }

    /// ``delta(viewer:since:format:)`` for a snapshot not in memory: reads it from the store
    /// (blocking; call it off the event loop) and takes it back into memory.
    ///
    /// - Throws: ``FeedError/snapshotUnknown(_:)`` when the store does not have it either or it
    ///   expired; ``FeedError/storage(_:)`` when the store cannot answer.
    public func deltaReadingStorage(viewer: Int64, since: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        if case .answered(let outcome) = try delta(viewer: viewer, since: since, format: format) { return outcome }
        let stored: StoredSnapshot?
        do {
            stored = try store.snapshot(id: since, viewer: viewer)
        } catch {
            throw .storage(error)
        }
        let now = self.now
        guard let stored, let structure = try readStored(stored.structure, viewer: viewer), structure.viewer == viewer,
            book.withLock({ $0.isFresh(servedAt: stored.createdAt, now: now) })
        else { throw .snapshotUnknown(since) }
        // An earlier release's snapshot is not taken back into memory: each time it is asked
        // for, the delta carries every section's version.
        guard structure.hashesToItsID(since) else { return try deltaFromEarlierRelease(structure, oldID: since, format: format) }
        book.withLock { $0.adopt(structure, id: since, servedAt: stored.createdAt) }
        return try delta(from: structure, oldID: since, format: format)
    }

    /// The delta from a snapshot an earlier release made (``SnapshotStructure/hashesToItsID(_:)``
    /// is false): diffed, with every kept section's version, since the client holds versions
    /// hashed another way. Never 304: its id is never the page's now.
    private func deltaFromEarlierRelease(_ old: SnapshotStructure, oldID: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        let current = try handOut(viewer: old.viewer, parameters: old.parameters, movingOnFrom: oldID)
        deltasDiffed.add(1, ordering: .relaxed)
        var document = DeltaDocument(format: format, from: old, to: current, renderedItem: items.rendered(version:), patch: items.patch(from:to:))
        document.sendVersionOfEveryKeptSection()
        return .changed(document)
    }

    /// The delta from a snapshot the client sends itself (for servers that forgot it, or that
    /// never saw it: another replica) to the feed now, asked for with `parameters`.
    ///
    /// `heldID` is the snapshot id the client's document names, if it names one: when `client`
    /// does not hash to it (an earlier release made it), the delta carries every section's
    /// version.
    ///
    /// - Throws: ``FeedError``.
    public func delta(viewer: Int64, from client: SnapshotStructure, heldID: String? = nil, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        var client = client
        client.viewer = viewer
        let id = client.id
        if let heldID, heldID != id { return try deltaFromEarlierRelease(client, oldID: id, format: format) }
        return try delta(from: client, oldID: id, format: format)
    }

    private func delta(from old: SnapshotStructure, oldID: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        delta(from: old, oldID: oldID, format: format, current: try handOut(viewer: old.viewer, parameters: old.parameters, movingOnFrom: oldID))
    }

    private func delta(from old: SnapshotStructure, oldID: String, format: DeltaFormat, current: RenderedFeed, caching: Bool = true) -> DeltaOutcome {
        guard current.snapshotID != oldID else { return .unchanged(snapshotID: oldID) }
        guard caching, options.deltaCacheBytes > 0 else { return .changed(document(from: old, oldID: oldID, format: format, current: current)) }
        let key = DeltaKey(viewer: old.viewer, since: oldID, format: format)
        if let cached = deltas.withLock({ $0.value(for: key) }), cached.snapshot == current.snapshotID {
            return .changed(cached)
        }
        let delta = document(from: old, oldID: oldID, format: format, current: current)
        deltas.withLock { _ = $0.insert(delta, for: key, cost: delta.estimatedCost) }
        return .changed(delta)
    }

    /// The delta document from `old` to `current`: built from what changed when `current` is
    /// `old`'s page patched (a client one write behind): from the items a patch rendered again,
    /// or the items of the sections a shift changed; else diffed.
    private func document(from old: SnapshotStructure, oldID: String, format: DeltaFormat, current: RenderedFeed) -> DeltaDocument {
        if let patched = current.patchedFrom, patched.snapshotID == oldID {
            switch patched.change {
            case .itemsUpdated(let paths):
                deltasPatched.add(1, ordering: .relaxed)
                return DeltaDocument(
                    format: format, from: old, to: current, updatedItems: paths, renderedItem: items.rendered(version:),
                    patch: items.patch(from:to:))
            case .sectionsChanged(let sections):
                if let document = DeltaDocument(
                    format: format, from: old, to: current, changedSections: sections, renderedItem: items.rendered(version:),
                    patch: items.patch(from:to:))
                {
                    deltasEdited.add(1, ordering: .relaxed)
                    return document
                }
            }
        }
        deltasDiffed.add(1, ordering: .relaxed)
        return DeltaDocument(format: format, from: old, to: current, renderedItem: items.rendered(version:), patch: items.patch(from:to:))
    }

    // MARK: - Snapshot persistence and upkeep

    /// Writes the snapshots handed out since the last call to the store, and deletes those
    /// retention removed. Blocking; the maintenance thread calls it every second and at shutdown.
    ///
    /// The whole batch goes in one transaction by default: SQLite appends it to its snapshot log
    /// as a few rows (pages at the log's end; content writes' p99 in the polling mix did not
    /// move, BENCHMARKS "The snapshot log"), and PostgreSQL takes it as one transaction. With
    /// `rowsPerTransaction`, the rows go in transactions of at most that many (new bases first,
    /// so a row is never stored before the base it names).
    ///
    /// Each snapshot is stored as the difference from its viewer's base (``SnapshotCoding``'s
    /// delta form: a like is a few dozen bytes, the same feed at another width or limit not much
    /// more), the base being a full structure kept in the store's snapshot bases. A viewer takes
    /// a new base (this snapshot, stored in full as a base) when it has none in memory, when the
    /// difference would be over two thirds of the full form, or when its base is older than
    /// ``FeedStore/StorageOptions/SnapshotRetention/baseUseMilliseconds``.
    ///
    /// `pause` is called between runs of the snapshots it encodes, before the store's
    /// transaction: the maintenance thread waits there while a fan-out is being sent (it holds
    /// the lock of every store pass meanwhile, so only where no answer waits for a pass).
    ///
    /// With `pruningApart`, the viewers' pruning goes in a transaction of its own once the pass
    /// has released that lock, so answers waiting for their own passes
    /// (``storeHandedOutSnapshots()``) do not wait for it too: on PostgreSQL it reads every
    /// stored snapshot of the viewers pruned, and took 40–110 ms once a second in the polling
    /// mix at 50 writes/s, the changed polls' p99 (BENCHMARKS, session 27). The store's pruning
    /// leaves a row served again meanwhile alone.
    ///
    /// - Returns: how many rows were written or deleted.
    /// - Throws: ``FeedStore/FeedStoreError``; the batch is queued again then.
    @discardableResult
    public func persistSnapshots(rowsPerTransaction: Int = .max, pruningApart: Bool = false, pause: () -> Void = {}) throws(FeedStoreError) -> Int {
        let (count, apart) = try persistSnapshots(rowsPerTransaction: rowsPerTransaction, handedOutOnly: false, pruningApart: pruningApart, pause: pause)
        guard !apart.isEmpty else { return count }
        do throws(FeedStoreError) {
            try store.persistSnapshots(upserts: [], deletions: [], prune: apart, keepPerViewer: storedPerViewer, bases: [])
        } catch {
            book.withLock { $0.requeue(SnapshotBook.Pending(prune: apart)) }
            throw error
        }
        return count
    }

    /// ``persistSnapshots(rowsPerTransaction:pruningApart:pause:)`` at a clean stop: the
    /// snapshots kept only in memory (their clients moved on before a pass took them,
    /// ``storeEverySnapshot()``) are stored too, so every snapshot handed out still
    /// works after the restart. Blocking.
    @discardableResult
    public func persistEverySnapshot() throws(FeedStoreError) -> Int {
        _ = book.withLock { $0.queueUnstored() }
        return try persistSnapshots()
    }

    /// Writes the snapshots handed out since the last store pass, in one transaction, and
    /// returns once they are in the store (and any pass in progress has ended): from then on
    /// every replica on the same store reads them back. Deletions and pruning are left to
    /// ``persistSnapshots(rowsPerTransaction:pruningApart:pause:)``. The server calls it before an answer that hands
    /// out a new snapshot leaves, for all the answers waiting at once (one round trip for them
    /// all). Blocking.
    ///
    /// - Returns: how many snapshots were written.
    /// - Throws: ``FeedStore/FeedStoreError``; they are queued again then.
    @discardableResult
    public func storeHandedOutSnapshots() throws(FeedStoreError) -> Int {
        try persistSnapshots(rowsPerTransaction: Int.max, handedOutOnly: true, pruningApart: false).written
    }

    /// How many snapshots (and bases) pruning leaves each viewer in the store: twice what memory
    /// keeps, so other replicas' snapshots of the viewer have room too.
    private var storedPerViewer: Int { 2 * store.options.snapshotRetention.maxPerViewer }

    /// The pass, under the pass lock: how many rows it wrote or deleted, and with
    /// `pruningApart` the viewers it left to prune (none otherwise).
    private func persistSnapshots(
        rowsPerTransaction: Int, handedOutOnly: Bool, pruningApart: Bool, pause: () -> Void = {}
    ) throws(FeedStoreError) -> (written: Int, prune: Set<Int64>) {
        let retention = store.options.snapshotRetention
        let chunk = max(1, rowsPerTransaction)
        var apart: Set<Int64> = []
        // Taken under the pass lock: a snapshot retired and then served again is deleted by one
        // pass and stored again by a later one, never the other way round.
        let written = try persisting.withLock { bases throws(FeedStoreError) -> Int in
            var pending = book.withLock { handedOutOnly ? $0.takePendingUpserts() : $0.takePending() }
            if pruningApart { swap(&apart, &pending.prune) }
            guard !pending.isEmpty else { return 0 }
            let now = self.now
            var upserts: [StoredSnapshot] = []
            upserts.reserveCapacity(pending.upserts.count)
            var added: [SnapshotBases.Key: SnapshotBases.Base] = [:]
            var newBases: [StoredSnapshot] = []
            // In key order (viewer, then id), as the rows and their indexes are stored: each
            // transaction then writes one run of neighbouring pages, and the second's pages are
            // written about once, however many transactions share them.
            // (The queue's slots are sorted, not its pairs: sorting the pairs moved each structure
            // with its counts up and down, on memory long out of the caches.)
            let upsertsInOrder = pending.upserts.indices.sorted { SnapshotBook.Key.inIDOrder(pending.upserts.keys[$0], pending.upserts.keys[$1]) }
            for (offset, slot) in upsertsInOrder.enumerated() {
                let (key, value) = pending.upserts[slot]
                if offset % Self.pauseEvery == Self.pauseEvery - 1 { pause() }
                let structure = value.structure
                let baseKey = SnapshotBases.Key(viewer: key.viewer)
                var encoded: [UInt8]?
                if let base = added[baseKey] ?? bases.base(for: baseKey), now - base.createdAt < retention.baseUseMilliseconds {
                    encoded = SnapshotCoding.encode(structure, against: base.structure, baseID: base.id, lookup: base.lookup)
                }
                if encoded == nil {
                    // This snapshot becomes its viewer's base: stored in full there, as an empty
                    // difference here.
                    let full = SnapshotCoding.encode(structure)
                    newBases.append(StoredSnapshot(id: key.id, viewerID: key.viewer, createdAt: now, structure: Data(full)))
                    let base = SnapshotBases.Base(id: key.id, structure: structure, createdAt: now, cost: full.count * 4 + 512)
                    added[baseKey] = base
                    encoded = SnapshotCoding.encode(structure, against: structure, baseID: key.id, lookup: base.lookup)
                }
                upserts.append(
                    StoredSnapshot(id: key.id, viewerID: key.viewer, createdAt: value.servedAt, structure: Data(encoded ?? SnapshotCoding.encode(structure))))
            }
            let keep = storedPerViewer
            /// `write` for each run of at most `size` of `elements`, in order.
            func inRuns<Element>(_ elements: [Element], of size: Int, _ write: ([Element]) throws(FeedStoreError) -> Void) throws(FeedStoreError) {
                for start in stride(from: 0, to: elements.count, by: size) { try write(Array(elements[start..<min(start + size, elements.count)])) }
            }
            do throws(FeedStoreError) {
                if handedOutOnly || chunk == .max {
                    // One transaction: the bases first inside it, so no row names a base the
                    // store lacks. (Handed-out passes take no deletions or pruning.)
                    try store.persistSnapshots(
                        upserts: upserts, deletions: pending.deletions.map { ($0.viewer, $0.id) }, prune: pending.prune, keepPerViewer: keep, bases: newBases)
                    for (key, base) in added { bases.insert(base, for: key) }
                    return upserts.count + pending.deletions.count
                }
                try inRuns(newBases, of: chunk) { bases throws(FeedStoreError) in
                    try store.persistSnapshots(upserts: [], deletions: [], prune: [], keepPerViewer: keep, bases: bases)
                }
                try inRuns(upserts, of: chunk) { rows throws(FeedStoreError) in
                    try store.persistSnapshots(upserts: rows, deletions: [], prune: [], keepPerViewer: keep, bases: [])
                }
                let deletions = pending.deletions.sorted(by: SnapshotBook.Key.inIDOrder).map { ($0.viewer, $0.id) }
                try inRuns(deletions, of: chunk) { rows throws(FeedStoreError) in
                    try store.persistSnapshots(upserts: [], deletions: rows, prune: [], keepPerViewer: keep, bases: [])
                }
                // Pruning a viewer deletes up to a dozen rows and reads its index range: a quarter
                // as many viewers per transaction as rows.
                try inRuns(pending.prune.sorted(), of: max(1, chunk / 4)) { viewers throws(FeedStoreError) in
                    try store.persistSnapshots(upserts: [], deletions: [], prune: Set(viewers), keepPerViewer: keep, bases: [])
                }
            } catch {
                // Everything is queued again; the rows already stored are written again, which
                // changes nothing.
                book.withLock { $0.requeue(pending) }
                throw error
            }
            // Only bases the store now holds are used for later snapshots.
            for (key, base) in added { bases.insert(base, for: key) }
            return upserts.count + pending.deletions.count
        }
        return (written, apart)
    }

    /// Stores every snapshot in memory again, against new bases, at the maintenance thread's
    /// next passes (5,000 a pass, the most recently served first): for a store that lost them.
    /// PostgreSQL keeps snapshots unlogged, so a crash of PostgreSQL empties them (and may lose
    /// the bases of its last few hundred milliseconds); without this, every client whose next
    /// request lands on another replica would get a 410 and fetch its whole feed again, all of
    /// them at once. The server calls it each time its change listener connects again.
    ///
    /// An answer's hand-off pass never carries them; an answer whose hand-off comes while a
    /// maintenance pass runs waits for that pass, which they make at most 5,000 snapshots
    /// longer. As when trimming memory, they are listed under the book's lock, sorted outside
    /// it and queued a run at a time: serving waits for one run at most.
    public func storeSnapshotsAgain() {
        persisting.withLock { $0.removeAll() }
        let listed = book.withLock { $0.snapshotsToStoreAgain() }.sorted { $0.servedAt > $1.servedAt }
        for start in stride(from: 0, to: listed.count, by: Self.lockedRun) {
            book.withLock { $0.storeAgain(listed[start..<min(start + Self.lockedRun, listed.count)]) }
        }
    }

    /// A stored structure read back: the full form as it is, the delta form against its base
    /// (read from the store). Nil when the bytes or the base are missing or malformed.
    private func readStored(_ bytes: Data, viewer: Int64) throws(FeedError) -> SnapshotStructure? {
        let bytes = Array(bytes)
        guard let baseID = try? SnapshotCoding.baseID(of: bytes) else { return try? SnapshotStructure.decode(Data(bytes)) }
        let stored: StoredSnapshot?
        do {
            stored = try store.snapshotBase(id: baseID, viewer: viewer)
        } catch {
            throw .storage(error)
        }
        guard let stored, let base = try? SnapshotStructure.decode(stored.structure) else { return nil }
        return try? SnapshotCoding.decode(bytes, base: base)
    }

    /// Notes the changes the index applied since on the cached pages they may touch
    /// (``PageMarks``). Requests note what they need themselves; the maintenance thread calls
    /// this several times a second so that a request after a quiet spell, on an event loop,
    /// does not find a long backlog to note.
    public func noteChanges() {
        pages.noteChanges()
    }

    /// Frees the snapshots retention removed while serving, and snapshot memory past its budget
    /// (older snapshots first; they stay in the store). The maintenance thread calls it several
    /// times a second, so serving never sorts, and seldom frees. `pause`
    /// is called between runs, outside every lock.
    public func trimSnapshotMemory(pause: () -> Void = {}) {
        // The snapshots retention removed while serving, freed here, outside the lock, rather
        // than on the thread that served.
        _ = book.withLock { $0.takeRetired() }
        // Listed under the lock, sorted outside it, dropped under it again a run at a time; what
        // a run dropped is freed outside the lock. Serving waits for one run at most.
        guard let candidates = book.withLock({ $0.sheddingCandidates() }) else { return }
        let ordered = candidates.sorted { $0.servedAt < $1.servedAt }
        for start in stride(from: 0, to: ordered.count, by: Self.lockedRun) {
            // `dropped` is released at the end of the iteration, after the lock.
            let (dropped, done) = book.withLock { book in (book.shed(ordered[start..<min(start + Self.lockedRun, ordered.count)]), !book.isOverTarget) }
            _ = dropped
            if done { return }
            pause()
        }
        let viewers = book.withLock { $0.viewersByRecency() }.sorted { $0.servedAt < $1.servedAt }.map(\.viewer)
        for start in stride(from: 0, to: viewers.count, by: Self.lockedRun) {
            let (dropped, done) = book.withLock { book in (book.shedViewers(viewers[start..<min(start + Self.lockedRun, viewers.count)]), !book.isOverTarget) }
            _ = dropped
            if done { return }
            pause()
        }
    }

    /// How many snapshots (or viewers) the maintenance thread handles per hold of the snapshot
    /// book's lock when trimming or expiring.
    static let lockedRun = 256

    /// How many snapshots a store pass encodes between calls of its `pause`: about a
    /// millisecond's work.
    static let pauseEvery = 256

    /// Drops expired snapshots from memory and from the store, and trims the change log.
    /// Blocking; the maintenance thread calls it now and then.
    public func pruneExpired(keepingChanges: Int64 = 100_000) throws(FeedStoreError) {
        let now = self.now
        let viewers = book.withLock { $0.viewerIDs }
        for start in stride(from: 0, to: viewers.count, by: Self.lockedRun) {
            _ = book.withLock { $0.dropExpired(now: now, viewers: viewers[start..<min(start + Self.lockedRun, viewers.count)]) }
        }
        try store.pruneExpiredSnapshots()
        try store.pruneChangeLog(keeping: keepingChanges)
    }
}
