import FeedIndex
import FeedStore
import FeedWire
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
///   ``delta(viewer:since:format:)`` returns nil and the caller, off its event loop, calls
///   ``deltaReadingStorage(viewer:since:format:)``.
///
/// Writes go through the store as before; ``catchUp()`` (or ``write(_:)``, which does both)
/// brings the index up to date so the writer reads its own write.
public final class FeedService: Sendable {
    /// Memory budgets of the caches, in bytes.
    public struct Options: Sendable {
        /// Composed pages (structure, dependencies; their items are shared). Default 128 MiB.
        public var pageCacheBytes: Int
        /// Rendered items. Default 64 MiB.
        public var itemCacheBytes: Int
        /// Computed deltas, for clients that ask the same question again. Default 4 MiB.
        public var deltaCacheBytes: Int
        /// Snapshot structures kept in memory; past it the least recently served viewers'
        /// snapshots are read back from the store when asked for. Default 128 MiB.
        public var snapshotBytes: Int

        /// Options with every default.
        public init(
            pageCacheBytes: Int = 128 << 20, itemCacheBytes: Int = 64 << 20,
            deltaCacheBytes: Int = 4 << 20, snapshotBytes: Int = 128 << 20
        ) {
            self.pageCacheBytes = pageCacheBytes
            self.itemCacheBytes = itemCacheBytes
            self.deltaCacheBytes = deltaCacheBytes
            self.snapshotBytes = snapshotBytes
        }
    }

    /// The store everything comes from and writes go to.
    public let store: any FeedStorage
    /// What feeds are composed from.
    public let index: FeedIndex
    /// The budgets the service was made with.
    public let options: Options

    private let items: ItemCache
    private let pages: Mutex<ByteBoundedCache<PageKey, CachedPage>>
    private let deltas: Mutex<ByteBoundedCache<DeltaKey, DeltaDocument>>
    private let book: Mutex<SnapshotBook>
    /// Serialises ``persistSnapshots()``.
    private let persisting = Mutex(())

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
        pages = Mutex(ByteBoundedCache(budget: options.pageCacheBytes))
        deltas = Mutex(ByteBoundedCache(budget: options.deltaCacheBytes))
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
        _ = try? index.catchUp(from: store)
        return value
    }

    /// Applies the change-log entries committed since the index was last brought up to date
    /// (by this process or another). Blocks on storage.
    ///
    /// - Returns: how many entries were applied.
    @discardableResult
    public func catchUp() throws(FeedStoreError) -> Int {
        try index.catchUp(from: store)
    }

    // MARK: - Feed

    /// The feed page for `viewer` asked for with `parameters`; its snapshot is remembered for
    /// later deltas. Runs no SQL.
    ///
    /// - Throws: ``FeedError/viewerNotFound(_:)``.
    public func feed(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> RenderedFeed {
        let page = try currentPage(viewer: viewer, parameters: parameters)
        remember(page)
        return page
    }

    /// The page as it is now: the cached one if no change since touches it, the cached one with
    /// some items re-rendered in place if changes only edited what they show, else composed.
    private func currentPage(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> RenderedFeed {
        let key = PageKey(viewer: viewer, parameters: parameters)
        if let cached = pages.withLock({ $0.value(for: key) }) {
            switch index.read({ view in revalidate(cached, view: view) }) {
            case .current(let sequence):
                if sequence != cached.validatedAt {
                    var updated = cached
                    updated.validatedAt = sequence
                    store(updated, for: key, replacing: cached)
                }
                return cached.page
            case .patch(let patch):
                let patched = apply(patch, to: cached)
                store(patched, for: key, replacing: cached)
                return patched.page
            case .recompose:
                break
            }
        }
        let composed = try compose(viewer: viewer, parameters: parameters)
        pages.withLock { $0.insert(composed, for: key, cost: composed.cost) }
        return composed.page
    }

    /// Keeps `updated` unless another thread replaced the entry meanwhile with something newer.
    private func store(_ updated: CachedPage, for key: PageKey, replacing old: CachedPage) {
        pages.withLock { cache in
            if let current = cache.value(for: key), current.validatedAt > old.validatedAt { return }
            cache.insert(updated, for: key, cost: updated.cost)
        }
    }

    private enum Revalidation {
        case current(Int64)
        case patch(PagePatch)
        case recompose
    }

    /// The records a patch re-renders, read under the index lock.
    private struct PagePatch {
        var sequence: Int64
        var dependencies: FeedDependencies
        var videos: [Int64: (video: Revised<Video>, author: Revised<User>?)]
        var viewer: Revised<User>?
        /// Suggested users whose card changed, by id.
        var suggestions: [Int64: Suggestion] = [:]
    }

    /// Judges the changes since `cached` was last known current (under the index's lock).
    private func revalidate(_ cached: CachedPage, view: IndexView) -> Revalidation {
        if cached.validatedAt == view.sequence { return .current(view.sequence) }
        guard let changes = view.changes(after: cached.validatedAt) else { return .recompose }
        var dependencies = cached.dependencies
        var videoIDs: Set<Int64> = []
        var userIDs: Set<Int64> = []
        var suggestionIDs: Set<Int64> = []
        for change in changes {
            switch dependencies.effect(of: change, view: view) {
            case .none: continue
            case .patchVideo(let id): videoIDs.insert(id)
            case .patchUser(let id): userIDs.insert(id)
            case .patchSuggestion(let id): suggestionIDs.insert(id)
            case .recompose: return .recompose
            }
        }
        if videoIDs.isEmpty && userIDs.isEmpty && suggestionIDs.isEmpty { return .current(view.sequence) }
        var patch = PagePatch(sequence: view.sequence, dependencies: dependencies, videos: [:], viewer: nil)
        for section in cached.videoRefs {
            for case let ref? in section where videoIDs.contains(ref.id) || userIDs.contains(ref.author) {
                guard let video = view.video(ref.id) else { return .recompose }
                patch.videos[ref.id] = (video, view.user(ref.author))
            }
        }
        if userIDs.contains(cached.page.structure.viewer) {
            guard let viewer = view.user(cached.page.structure.viewer) else { return .recompose }
            patch.viewer = viewer
        }
        for entry in dependencies.suggestionOrder where suggestionIDs.contains(entry.id) || userIDs.contains(entry.id) {
            guard let user = view.user(entry.id) else { return .recompose }
            patch.suggestions[entry.id] = Suggestion(user: user, mutualCount: entry.mutuals)
        }
        return .patch(patch)
    }

    /// The cached page with the patched items re-rendered (outside the index lock).
    private func apply(_ patch: PagePatch, to cached: CachedPage) -> CachedPage {
        let page = cached.page
        var sections = page.sections
        for (sectionIndex, section) in page.sections.enumerated() {
            var items = section.items
            var changed = false
            for (itemIndex, ref) in cached.videoRefs[sectionIndex].enumerated() {
                guard let ref, let records = patch.videos[ref.id] else { continue }
                items[itemIndex] = self.items.video(records.video, author: records.author)
                changed = true
            }
            if section.kind == .header, let viewer = patch.viewer {
                items = [self.items.header(viewer)]
                changed = true
            }
            if section.kind == .followSuggestions, !patch.suggestions.isEmpty {
                for (itemIndex, entry) in patch.dependencies.suggestionOrder.enumerated() where itemIndex < items.count {
                    guard let suggestion = patch.suggestions[entry.id] else { continue }
                    items[itemIndex] = self.items.suggestion(suggestion)
                    changed = true
                }
            }
            if changed {
                sections[sectionIndex] = FeedSection(id: section.id, kind: section.kind, columns: section.columns, items: items)
            }
        }
        let structure = SnapshotStructure(viewer: page.structure.viewer, parameters: page.structure.parameters, page: sections)
        let rendered = RenderedFeed(
            snapshotID: structure.id, sections: sections, nextCursor: page.nextCursor,
            structure: structure)
        return CachedPage(page: rendered, validatedAt: patch.sequence, dependencies: patch.dependencies, videoRefs: cached.videoRefs)
    }

    private func compose(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> CachedPage {
        let (selection, sequence) = try index.read { view throws(FeedError) in
            (try FeedComposer.select(viewer: viewer, parameters: parameters, in: view), view.sequence)
        }
        let page = FeedComposer(items: items).build(selection)
        let end = min(parameters.offset, selection.totalSections) + page.count
        let nextCursor = end < selection.totalSections ? FeedCursor.encode(offset: end) : nil
        let structure = SnapshotStructure(viewer: viewer, parameters: parameters, page: page)
        let rendered = RenderedFeed(
            snapshotID: structure.id, sections: page, nextCursor: nextCursor, structure: structure)
        return CachedPage(page: rendered, validatedAt: sequence, dependencies: selection.dependencies, videoRefs: selection.videoRefs)
    }

    private func remember(_ page: RenderedFeed) {
        let now = self.now
        book.withLock { $0.served(page.structure, id: page.snapshotID, now: now) }
    }

    // MARK: - Deltas

    /// The delta from snapshot `since` (issued earlier to this viewer) to the feed now, or nil
    /// when `since` is not in memory and must be looked up in the store: then call
    /// ``deltaReadingStorage(viewer:since:format:)`` off the event loop. Runs no SQL.
    ///
    /// - Throws: ``FeedError/snapshotUnknown(_:)`` when retention removed `since`, or it is no
    ///   snapshot id at all (the server refuses those with 400 before asking);
    ///   ``FeedError/viewerNotFound(_:)``.
    public func delta(viewer: Int64, since: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome? {
        guard SnapshotStructure.isWellFormedID(since) else { throw .snapshotUnknown(since) }
        let now = self.now
        switch book.withLock({ $0.lookup(viewer: viewer, id: since, now: now) }) {
        case .found(let old):
            return try delta(from: old, oldID: since, format: format)
        case .expired:
            throw .snapshotUnknown(since)
        case .notInMemory:
            return nil
        }
    }

    /// ``delta(viewer:since:format:)`` for a snapshot not in memory: reads it from the store
    /// (blocking; call it off the event loop) and takes it back into memory.
    ///
    /// - Throws: ``FeedError/snapshotUnknown(_:)`` when the store does not have it either or it
    ///   expired; ``FeedError/storage(_:)`` when the store cannot answer.
    public func deltaReadingStorage(viewer: Int64, since: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        if let outcome = try delta(viewer: viewer, since: since, format: format) { return outcome }
        let stored: StoredSnapshot?
        do {
            stored = try store.snapshot(id: since, viewer: viewer)
        } catch {
            throw .storage(error)
        }
        let now = self.now
        guard let stored, let structure = try? SnapshotStructure.decode(stored.structure), structure.viewer == viewer,
            book.withLock({ $0.isFresh(servedAt: stored.createdAt, now: now) })
        else { throw .snapshotUnknown(since) }
        book.withLock { $0.adopt(structure, id: since, servedAt: stored.createdAt) }
        return try delta(from: structure, oldID: since, format: format)
    }

    /// The delta from a snapshot the client sends itself (for servers that forgot it, or that
    /// never saw it: another replica) to the feed now, asked for with `parameters`.
    ///
    /// - Throws: ``FeedError``.
    public func delta(viewer: Int64, from client: SnapshotStructure, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        var client = client
        client.viewer = viewer
        return try delta(from: client, oldID: client.id, format: format)
    }

    private func delta(from old: SnapshotStructure, oldID: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        let current = try feed(viewer: old.viewer, parameters: old.parameters)
        guard current.snapshotID != oldID else {
            return DeltaOutcome(snapshotID: oldID, delta: nil)
        }
        let key = DeltaKey(viewer: old.viewer, since: oldID, format: format)
        if let cached = deltas.withLock({ $0.value(for: key) }), cached.snapshot == current.snapshotID {
            return DeltaOutcome(snapshotID: current.snapshotID, delta: cached)
        }
        let delta = DeltaDocument(format: format, from: old, oldID: oldID, to: current)
        deltas.withLock { $0.insert(delta, for: key, cost: delta.estimatedCost) }
        return DeltaOutcome(snapshotID: current.snapshotID, delta: delta)
    }

    // MARK: - Snapshot persistence and upkeep

    /// Writes the snapshots handed out since the last call to the store in one transaction, and
    /// deletes those retention removed. Blocking; the maintenance thread calls it every second
    /// and at shutdown.
    ///
    /// - Returns: how many rows were written or deleted.
    /// - Throws: ``FeedStore/FeedStoreError``; the batch is queued again then.
    @discardableResult
    public func persistSnapshots() throws(FeedStoreError) -> Int {
        try persisting.withLock { _ throws(FeedStoreError) -> Int in
            let pending = book.withLock { $0.takePending() }
            guard !pending.isEmpty else { return 0 }
            var upserts: [StoredSnapshot] = []
            upserts.reserveCapacity(pending.upserts.count)
            for (key, value) in pending.upserts {
                upserts.append(
                    StoredSnapshot(
                        id: key.id, viewerID: key.viewer, createdAt: value.servedAt, structure: value.structure.encoded()))
            }
            do throws(FeedStoreError) {
                try store.persistSnapshots(
                    upserts: upserts, deletions: pending.deletions.map { ($0.viewer, $0.id) }, prune: pending.prune,
                    keepPerViewer: 2 * store.options.snapshotRetention.maxPerViewer)
            } catch {
                book.withLock { $0.requeue(pending) }
                throw error
            }
            return upserts.count + pending.deletions.count
        }
    }

    /// Frees snapshot memory past its budget (older snapshots first; they stay in the store).
    /// The maintenance thread calls it several times a second, so serving never sorts.
    public func trimSnapshotMemory() {
        book.withLock { $0.shedIfOverBudget() }
    }

    /// Drops expired snapshots from memory and from the store, and trims the change log.
    /// Blocking; the maintenance thread calls it now and then.
    public func pruneExpired(keepingChanges: Int64 = 100_000) throws(FeedStoreError) {
        let now = self.now
        _ = book.withLock { $0.dropExpired(now: now) }
        try store.pruneExpiredSnapshots()
        try store.pruneChangeLog(keeping: keepingChanges)
    }

    /// Bytes held by each cache now (for metrics and the memory benchmark).
    public var cacheBytes: (pages: Int, items: Int, deltas: Int, snapshots: Int) {
        (pages.withLock { $0.totalCost }, items.bytes, deltas.withLock { $0.totalCost }, book.withLock { $0.bytes })
    }
}

/// A composed page.
public struct RenderedFeed: Sendable {
    /// Its snapshot id (also the HTTP ETag).
    public let snapshotID: String
    /// The sections of the page.
    public let sections: [FeedSection]
    /// The cursor of the next page, if any.
    public let nextCursor: String?
    /// The page's structure, as remembered for deltas.
    public let structure: SnapshotStructure

    /// Sizes items for the screen width the page was asked with, if one was.
    public var layout: Layout? { structure.parameters.width.map(Layout.init(width:)) }

    /// The page as FeedWire writes it.
    public var document: FeedPage {
        FeedPage(snapshot: snapshotID, viewer: structure.viewer, sections: sections, nextCursor: nextCursor, layout: layout)
    }
}

/// The answer to a delta request.
public struct DeltaOutcome: Sendable {
    /// The snapshot id of the feed now.
    public let snapshotID: String
    /// The delta from the client's snapshot to the feed now, in the form asked for; nil when the
    /// client holds the feed as it is now.
    public let delta: DeltaDocument?
}

/// A page in the cache, with the index position it is known to be current at.
struct CachedPage {
    var page: RenderedFeed
    var validatedAt: Int64
    let dependencies: FeedDependencies
    /// For each section of the page, for each item, the video it shows (nil for other items).
    let videoRefs: [[VideoRef?]]

    /// An estimate of the memory it holds beyond the shared item bytes.
    var cost: Int {
        var itemCount = 0
        for section in page.sections { itemCount += section.items.count }
        return 512 + itemCount * 160 + page.sections.count * 96
            + (dependencies.feedVideos.count + dependencies.regionVideos.count + dependencies.shownUsers.count
                + dependencies.followees.count * 3 + dependencies.regionPopular.count * 3) * 8
    }
}

struct PageKey: Hashable {
    let viewer: Int64
    let parameters: FeedParameters
}

struct DeltaKey: Hashable {
    let viewer: Int64
    let since: String
    let format: DeltaFormat
}
