import FeedIndex
import FeedStore
import FeedWire
import ListDiff
import Synchronization

/// Composed pages, per viewer and parameters, with what each depends on (``FeedDependencies``),
/// kept current against the index's changes rather than thrown away.
///
/// A request revalidates the cached page against the index changes applied since it was last
/// known current: a change that touches nothing the page shows costs a lookup; a change that
/// only edits what some items show re-renders those items in place; anything else (an item
/// added, removed or moved, a change the log no longer holds) composes the page again.
final class PageCache: Sendable {
    private let index: FeedIndex
    private let items: ItemCache
    private let cache: Mutex<ByteBoundedCache<PageKey, CachedPage>>
    /// Numbers the compositions.
    private let compositions = Atomic<UInt64>(0)

    init(index: FeedIndex, items: ItemCache, budget: Int) {
        self.index = index
        self.items = items
        cache = Mutex(ByteBoundedCache(budget: budget))
    }

    /// Bytes the cached pages hold beyond their shared item bytes (an estimate), held pages
    /// included.
    var bytes: Int { cache.withLock { $0.totalCost + $0.pinnedCost } }

    /// Keeps the page of `viewer` with `parameters` out of eviction until ``release(viewer:parameters:)``
    /// (as many times as it was held).
    func hold(viewer: Int64, parameters: FeedParameters) {
        cache.withLock { $0.pin(PageKey(viewer: viewer, parameters: parameters)) }
    }

    /// Undoes one ``hold(viewer:parameters:)``.
    func release(viewer: Int64, parameters: FeedParameters) {
        cache.withLock { $0.unpin(PageKey(viewer: viewer, parameters: parameters)) }
    }

    /// The page as it is now: the cached one if no change since touches it, the cached one with
    /// some items re-rendered in place if changes only edited what they show, else composed.
    func page(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> RenderedFeed {
        try entry(viewer: viewer, parameters: parameters).page
    }

    /// ``page(viewer:parameters:)`` with what it depends on.
    func entry(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> CachedPage {
        let key = PageKey(viewer: viewer, parameters: parameters)
        if let cached = cache.withLock({ $0.value(for: key) }) {
            let validatedAt = cached.validatedAt
            switch index.read({ view in revalidate(cached, validatedAt: validatedAt, view: view) }) {
            case .current(let sequence):
                // The same page, known current further on (the entry, or one that replaced it).
                cached.raiseValidatedAt(to: sequence)
                return cached
            case .patch(let patch):
                let patched = apply(patch, to: cached)
                keep(patched, for: key, replacing: validatedAt)
                return patched
            case .recompose:
                break
            }
        }
        let composed = try compose(viewer: viewer, parameters: parameters)
        cache.withLock { $0.insert(composed, for: key, cost: composed.cost) }
        return composed
    }

    /// Keeps `updated`, made from an entry current at `oldValidatedAt`, unless the entry is
    /// known current further on by now (another thread patched or revalidated it meanwhile).
    private func keep(_ updated: CachedPage, for key: PageKey, replacing oldValidatedAt: Int64) {
        cache.withLock { cache in
            if let current = cache.value(for: key), current.validatedAt > oldValidatedAt { return }
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
        /// The page's items to render again, in page order: where, and the records.
        var videoItems: [(section: Int, item: Int, video: Revised<Video>, author: Revised<User>?)] = []
        var viewer: Revised<User>?
        /// Suggested users whose card changed, by id.
        var suggestions: [Int64: Suggestion] = [:]
    }

    /// Judges the changes since `cached` was last known current (under the index's lock).
    private func revalidate(_ cached: CachedPage, validatedAt: Int64, view: IndexView) -> Revalidation {
        if validatedAt == view.sequence { return .current(view.sequence) }
        guard let changes = view.changes(after: validatedAt) else { return .recompose }
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
        var patch = PagePatch(sequence: view.sequence, dependencies: dependencies, viewer: nil)
        // A write touches one or two ids: comparing each of the page's videos with those costs
        // less than hashing it into the sets.
        let few = videoIDs.count + userIDs.count <= 8
        let (fewVideos, fewUsers) = few ? (Array(videoIDs), Array(userIDs)) : ([], [])
        for (sectionIndex, section) in cached.videoRefs.enumerated() {
            for (itemIndex, ref) in section.enumerated() {
                guard let ref,
                    few
                        ? fewVideos.contains(ref.id) || fewUsers.contains(ref.author)
                        : videoIDs.contains(ref.id) || userIDs.contains(ref.author)
                else { continue }
                guard let video = view.video(ref.id) else { return .recompose }
                patch.videoItems.append((sectionIndex, itemIndex, video, view.user(ref.author)))
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
        // The structure shares the shapes of the sections left as they were.
        var shapes = page.structure.sections
        var firstChanged = page.sections.count
        // Only the sections a patch touches are copied: a like changes one item of a page.
        var videoItems = patch.videoItems[...]
        // Where an item's version changed: what a client one patch behind is sent.
        var updated: [ItemPath] = []
        func replace(_ itemIndex: Int, in items: inout [FeedItem]?, of sectionIndex: Int, with item: FeedItem) {
            if items == nil { items = page.sections[sectionIndex].items }
            if items![itemIndex].version != item.version { updated.append(ItemPath(section: sectionIndex, item: itemIndex)) }
            items![itemIndex] = item
        }
        for sectionIndex in page.sections.indices {
            var items: [FeedItem]?
            while let next = videoItems.first, next.section == sectionIndex {
                replace(next.item, in: &items, of: sectionIndex, with: self.items.video(next.video, author: next.author))
                videoItems = videoItems.dropFirst()
            }
            let kind = page.sections[sectionIndex].kind
            if kind == .header, let viewer = patch.viewer, !page.sections[sectionIndex].items.isEmpty {
                replace(0, in: &items, of: sectionIndex, with: self.items.header(viewer))
            }
            if kind == .followSuggestions, !patch.suggestions.isEmpty {
                for (itemIndex, entry) in patch.dependencies.suggestionOrder.enumerated() where itemIndex < page.sections[sectionIndex].items.count {
                    guard let suggestion = patch.suggestions[entry.id] else { continue }
                    replace(itemIndex, in: &items, of: sectionIndex, with: self.items.suggestion(suggestion))
                }
            }
            if let items {
                let section = page.sections[sectionIndex]
                sections[sectionIndex] = FeedSection(
                    id: section.id, kind: section.kind, columns: section.columns, items: items, header: section.header, footer: section.footer)
                shapes[sectionIndex] = SnapshotStructure.Section(sections[sectionIndex])
                firstChanged = min(firstChanged, sectionIndex)
            }
        }
        // Items patched in place: the sections' heights, so the hint, are the page's.
        let structure = SnapshotStructure(
            viewer: page.structure.viewer, parameters: page.structure.parameters, sections: shapes, prefetch: page.structure.prefetch)
        // The id is hashed again from the first section that changed.
        let idHashes = structure.idHashes(reusing: cached.idHashes, unchangedBefore: firstChanged)
        assert(idHashes.id == structure.id, "a patched page's id differs from its hash from the start")
        updated.sort { ($0.section, $0.item) < ($1.section, $1.item) }
        let rendered = RenderedFeed(
            snapshotID: idHashes.id, sections: sections, nextCursor: page.nextCursor,
            structure: structure, patchedFrom: RenderedFeed.Patched(snapshotID: page.snapshotID, updatedItems: updated))
        return CachedPage(
            page: rendered, validatedAt: patch.sequence, dependencies: patch.dependencies, videoRefs: cached.videoRefs, composition: cached.composition,
            idHashes: idHashes)
    }

    private func compose(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> CachedPage {
        let (selection, sequence) = try index.read { view throws(FeedError) in
            (try FeedComposer.select(viewer: viewer, parameters: parameters, in: view), view.sequence)
        }
        let page = FeedComposer(items: items).build(selection)
        let end = min(parameters.offset, selection.totalSections) + page.count
        let nextCursor = end < selection.totalSections ? FeedCursor.encode(offset: end) : nil
        let structure = SnapshotStructure(viewer: viewer, parameters: parameters, page: page, hasNextPage: nextCursor != nil)
        let idHashes = structure.idHashes()
        let rendered = RenderedFeed(
            snapshotID: idHashes.id, sections: page, nextCursor: nextCursor, structure: structure)
        return CachedPage(
            page: rendered, validatedAt: sequence, dependencies: selection.dependencies, videoRefs: selection.videoRefs,
            composition: compositions.add(1, ordering: .relaxed).newValue, idHashes: idHashes)
    }
}

/// A page in the cache, with the index position it is known to be current at.
///
/// A class: an entry is read from the cache for every poll and every live event, and a copy
/// of the struct it was retained each of its dozen arrays and strings.
final class CachedPage: Sendable {
    let page: RenderedFeed
    /// The index position the page is known current at: only raised, by whoever revalidates it.
    private let validated: Atomic<Int64>
    let dependencies: FeedDependencies
    /// For each section of the page, for each item, the video it shows (nil for other items).
    let videoRefs: [[VideoRef?]]
    /// Which composition this is (patches keep it): what a page shows changes only with a new
    /// composition, or with its last popular video's rank.
    let composition: UInt64
    /// The hashes of the page's snapshot id at its section boundaries (for the next patch).
    let idHashes: SnapshotStructure.IDHashes

    init(
        page: RenderedFeed, validatedAt: Int64, dependencies: FeedDependencies, videoRefs: [[VideoRef?]], composition: UInt64,
        idHashes: SnapshotStructure.IDHashes
    ) {
        self.page = page
        self.validated = Atomic(validatedAt)
        self.dependencies = dependencies
        self.videoRefs = videoRefs
        self.composition = composition
        self.idHashes = idHashes
    }

    /// The index position the page is known current at.
    var validatedAt: Int64 { validated.load(ordering: .acquiring) }

    /// Records that the page is current at `sequence` too (no change since touched it).
    func raiseValidatedAt(to sequence: Int64) {
        validated.max(sequence, ordering: .acquiringAndReleasing)
    }

    /// What ``PageInterests`` of this page depend on.
    var interestStamp: PageInterests.Stamp {
        PageInterests.Stamp(composition: composition, popularThreshold: dependencies.regionPopular.last?.key)
    }

    /// An estimate of the memory it holds beyond the shared item bytes.
    var cost: Int {
        var itemCount = 0
        for section in page.sections { itemCount += section.items.count }
        return 512 + itemCount * 160 + page.sections.count * 112
            + (dependencies.feedVideos.count + dependencies.regionVideos.count + dependencies.shownUsers.count
                + dependencies.followees.count * 3 + dependencies.regionPopular.count * 3) * 8
    }
}

struct PageKey: Hashable {
    let viewer: Int64
    let parameters: FeedParameters
}
