import FeedIndex
import FeedStore
import FeedWire
import ListDiff
import Synchronization

/// Composed pages, per viewer and parameters, with what each depends on (``FeedDependencies``),
/// kept current against the index's changes rather than thrown away.
///
/// A request revalidates the cached page against the index changes applied since it was last
/// known current that may touch it (``PageMarks`` notes them page by page, so a poll does not
/// look at everyone else's writes): a change that touches nothing the page shows costs a
/// lookup; a change that only edits what some items show re-renders those items in place;
/// anything else (an item added, removed or moved, a change the log no longer holds) composes
/// the page again.
final class PageCache: Sendable {
    private let index: FeedIndex
    private let items: ItemCache
    private let pages: Mutex<Pages>
    /// Numbers the compositions (a page shifted for new videos counts as one: what it shows changed).
    private let compositions = Atomic<UInt64>(0)
    /// Pages composed from the index, patched in place, and shifted for new videos at the top.
    private let composed = Atomic<UInt64>(0)
    private let patched = Atomic<UInt64>(0)
    private let shifted = Atomic<UInt64>(0)
    /// Carousels ranked again for pages kept current (not counting compositions).
    private let ranked = Atomic<UInt64>(0)
    /// Index changes judged against cached pages (``FeedDependencies/effect(of:view:)``).
    private let judged = Atomic<UInt64>(0)

    /// The cached pages and the changes noted on each, under one lock: a page is cached and
    /// registered for notes in one step, and leaves both in one step.
    private struct Pages {
        var cache: ByteBoundedCache<PageKey, CachedPage>
        var marks: PageMarks

        /// Caches `page` (unless `keepsCurrent` says the cached one stays) and registers it for
        /// notes; forgets the notes of every page that left the cache.
        mutating func insert(_ page: CachedPage, for key: PageKey, unless keepsCurrent: (CachedPage) -> Bool = { _ in false }) {
            let insertion = cache.insert(page, for: key, cost: page.cost, unless: keepsCurrent)
            if insertion.stored {
                marks.register(key, validatedAt: page.validatedAt, stamp: page.interestStamp) { PageInterests(page.dependencies) }
            }
            for removed in insertion.removed { marks.remove(removed) }
        }
    }

    init(index: FeedIndex, items: ItemCache, budget: Int, notesPerPage: Int = PageMarks.defaultMaxNotes) {
        self.index = index
        self.items = items
        let marks = index.read { view in PageMarks(from: view, maxNotes: notesPerPage) }
        pages = Mutex(Pages(cache: ByteBoundedCache(budget: budget), marks: marks))
    }

    /// How many pages were composed, patched in place and shifted for new videos so far.
    var work: (composed: UInt64, patched: UInt64, shifted: UInt64) {
        (composed.load(ordering: .relaxed), patched.load(ordering: .relaxed), shifted.load(ordering: .relaxed))
    }

    /// How many carousels were ranked again for pages kept current so far.
    var carouselsRanked: UInt64 { ranked.load(ordering: .relaxed) }

    /// How many index changes were judged against cached pages so far.
    var changesJudged: UInt64 { judged.load(ordering: .relaxed) }

    /// Bytes the cached pages hold beyond their shared item bytes (an estimate), held pages
    /// included.
    var bytes: Int { pages.withLock { $0.cache.totalCost + $0.cache.pinnedCost } }

    /// How many pages are cached, and how many registered for notes (the same, always).
    var registration: (cached: Int, registered: Int) { pages.withLock { ($0.cache.count, $0.marks.count) } }

    /// Keeps the page of `viewer` with `parameters` out of eviction until
    /// ``release(viewer:parameters:by:)`` (as many times as it was held), and tells `holder` of
    /// the changes that may touch it (``heldPagesTouched(by:)``).
    /// Returns whether the page was cached: one that was not is registered for notes only once
    /// it is composed again, so its holder must ask for it once.
    @discardableResult
    func hold(viewer: Int64, parameters: FeedParameters, by holder: PageHolder) -> Bool {
        let key = PageKey(viewer: viewer, parameters: parameters)
        return pages.withLock { pages in
            pages.cache.pin(key)
            pages.marks.hold(key, by: holder)
            return pages.cache.contains(key)
        }
    }

    /// Undoes one ``hold(viewer:parameters:by:)``.
    func release(viewer: Int64, parameters: FeedParameters, by holder: PageHolder) {
        let key = PageKey(viewer: viewer, parameters: parameters)
        pages.withLock { pages in
            pages.marks.release(key, by: holder)
            for removed in pages.cache.unpin(key) { pages.marks.remove(removed) }
        }
    }

    /// Every change the index applied up to this sequence is noted on the cached pages.
    var notedThrough: Int64 { pages.withLock { $0.marks.notedThrough } }

    /// Notes the changes the index applied since on the cached pages they may touch.
    func noteChanges() {
        index.read { view in pages.withLock { $0.marks.catchUp(view) } }
    }

    /// The pages `holder` holds that a change may have touched since its last call
    /// (``PageMarks/takeTouchedHeld(by:_:)``).
    func heldPagesTouched(by holder: PageHolder) -> Set<PageKey> {
        index.read { view in pages.withLock { $0.marks.takeTouchedHeld(by: holder, view) } }
    }

    /// The page as it is now: the cached one if no change since touches it, the cached one with
    /// some items re-rendered in place if changes only edited what they show, else composed.
    func page(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> RenderedFeed {
        try entry(viewer: viewer, parameters: parameters).page
    }

    /// ``page(viewer:parameters:)`` with what it depends on.
    func entry(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> CachedPage {
        if let page = cachedEntry(viewer: viewer, parameters: parameters) { return page }
        let page = try compose(viewer: viewer, parameters: parameters)
        pages.withLock { $0.insert(page, for: PageKey(viewer: viewer, parameters: parameters)) }
        composed.add(1, ordering: .relaxed)
        return page
    }

    /// The page made from the cached one (as it was, patched or shifted), or nil when it must
    /// be composed (not cached, or a change it cannot follow): composing takes milliseconds, so
    /// an event loop leaves it to a pool (``FeedService/delta(viewer:since:format:composing:)``).
    func cachedEntry(viewer: Int64, parameters: FeedParameters) -> CachedPage? {
        let key = PageKey(viewer: viewer, parameters: parameters)
        guard let cached = pages.withLock({ $0.cache.value(for: key) }) else { return nil }
        let validatedAt = cached.validatedAt
        let revalidation = index.read { view -> Revalidation in
            if validatedAt == view.sequence { return .current(view.sequence) }
            let changes = pages.withLock { pages in
                pages.marks.catchUp(view)
                return pages.marks.changes(for: key, stamp: cached.interestStamp, after: validatedAt, view: view)
            }
            guard let changes else { return .recompose }
            return revalidate(cached, against: changes, view: view)
        }
        switch revalidation {
        case .current(let sequence):
            // The same page, known current further on (the entry, or one that replaced it).
            cached.raiseValidatedAt(to: sequence)
            return cached
        case .patch(let patch):
            let page = apply(patch, to: cached)
            keep(page, for: key, replacing: validatedAt)
            patched.add(1, ordering: .relaxed)
            return page
        case .shift(let shift):
            let page = apply(shift, to: cached)
            keep(page, for: key, replacing: validatedAt)
            shifted.add(1, ordering: .relaxed)
            return page
        case .recompose:
            return nil
        }
    }

    /// Keeps `updated`, made from an entry current at `oldValidatedAt`, unless the entry is
    /// known current further on by now (another thread patched or revalidated it meanwhile).
    private func keep(_ updated: CachedPage, for key: PageKey, replacing oldValidatedAt: Int64) {
        pages.withLock { $0.insert(updated, for: key, unless: { $0.validatedAt > oldValidatedAt }) }
    }

    private enum Revalidation {
        case current(Int64)
        case patch(PagePatch)
        case shift(GridShift)
        case recompose
    }

    /// New videos at the top of the feed: the page's grid sections shown again from the region
    /// as it is now, everything else as it was. Read under the index lock.
    private struct GridShift {
        var sequence: Int64
        var dependencies: FeedDependencies
        var region: [VideoRef]
        /// Each page section that is a grid, ascending, with its videos now.
        var grids: [(section: Int, videos: [GridVideo])]
        /// The carousel ranked again (a followee's follows came too), when set.
        var carousel: [Suggestion]?
        /// The viewer, when their profile changed too.
        var header: Revised<User>?
    }

    /// A video of a shifted grid: the item the page showed it with, where no change touched it
    /// or its author since, or the records to show it from.
    private enum GridVideo {
        case kept(section: Int, item: Int)
        case records(video: Revised<Video>, author: Revised<User>?)
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
        /// The whole carousel again (a followee's follows moved the mutual counts), when set.
        var carousel: [Suggestion]?
    }

    /// Judges `changes`, those since `cached` was last known current that may touch it, oldest
    /// first (under the index's lock).
    private func revalidate(_ cached: CachedPage, against changes: [IndexChange], view: IndexView) -> Revalidation {
        // Most polls: no change since may touch the page (and its dependencies are not copied).
        if changes.isEmpty { return .current(view.sequence) }
        judged.add(UInt64(changes.count), ordering: .relaxed)
        cached.fetchArrays()
        var dependencies = cached.dependencies
        var videoIDs: Set<Int64> = []
        var userIDs: Set<Int64> = []
        var suggestionIDs: Set<Int64> = []
        var newVideos: [VideoRef] = []
        var refreshSuggestions = false
        for change in changes {
            switch dependencies.effect(of: change, view: view) {
            case .none: continue
            case .patchVideo(let id): videoIDs.insert(id)
            case .patchUser(let id): userIDs.insert(id)
            case .patchSuggestion(let id): suggestionIDs.insert(id)
            case .insertFollowed(let video): newVideos.append(video)
            case .refreshSuggestions: refreshSuggestions = true
            case .recompose: return .recompose
            }
        }
        if !newVideos.isEmpty {
            // Oldest first, each to the top. (The changes of a batch do not come in time order.
            // What else they did to the grids' videos and authors shows when the grids are shown
            // again from the records.)
            var region = cached.regionOrder
            var keys: [(key: TimelineKey, video: VideoRef)] = []
            for video in newVideos {
                guard let record = view.video(video.id)?.value else { return .recompose }
                keys.append((TimelineKey(record), video))
            }
            for (key, video) in keys.sorted(by: { $0.key < $1.key }) {
                guard let updated = insertFirst(video, at: key, into: region, of: cached, dependencies: &dependencies, view: view) else {
                    return .recompose
                }
                region = updated
            }
            // The grids are shown again from the records now, which covers likes and new names
            // of their videos' authors; the carousel, if a card changed, is asked again, and the
            // viewer's header rendered again if the viewer's profile changed.
            let viewer = cached.page.structure.viewer
            var header: Revised<User>?
            if userIDs.contains(viewer) {
                guard let record = view.user(viewer) else { return .recompose }
                header = record
            }
            var carousel: [Suggestion]?
            // A suggested user's new name or avatar (asked only when some user changed).
            if refreshSuggestions || !suggestionIDs.isEmpty || (!userIDs.isEmpty && dependencies.suggestionOrder.contains { userIDs.contains($0.id) }) {
                guard let ranked = rankCarousel(of: cached, dependencies: &dependencies, region: region, view: view) else { return .recompose }
                carousel = ranked
            }
            // Every video but the new ones moved down by as many places as there are new ones.
            // One that no change touched since the page was checked (nor its author's profile)
            // keeps the item the page showed it with; the others are shown from the records.
            let inserted = keys.count
            let chunk = FeedComposer.gridChunkSize
            // The page section of each grid index, by index (-1: not on the page). The sets of
            // touched videos and users are asked only when not empty: a lookup hashes the key even
            // in an empty set (16,000 instructions a shifted page with the dictionary it replaced).
            var sectionOfGrid: [Int] = []
            sectionOfGrid.reserveCapacity(cached.gridIndices.count)
            for (section, grid) in cached.gridIndices.enumerated() {
                guard let grid else { continue }
                if grid >= sectionOfGrid.count { sectionOfGrid += repeatElement(-1, count: grid + 1 - sectionOfGrid.count) }
                sectionOfGrid[grid] = section
            }
            let (anyVideoTouched, anyUserTouched) = (!videoIDs.isEmpty, !userIDs.isEmpty)
            func keptItem(_ ref: VideoRef, wasAt position: Int) -> GridVideo? {
                guard position >= 0, !anyVideoTouched || !videoIDs.contains(ref.id), !anyUserTouched || !userIDs.contains(ref.author),
                    position / chunk < sectionOfGrid.count, case let section = sectionOfGrid[position / chunk], section >= 0
                else { return nil }
                let item = position % chunk
                guard cached.videoRefs.video(section: section, item: item) == ref else { return nil }
                return .kept(section: section, item: item)
            }
            var grids: [(section: Int, videos: [GridVideo])] = []
            grids.reserveCapacity(cached.gridIndices.count)
            for (section, grid) in cached.gridIndices.enumerated() {
                guard let grid else { continue }
                var videos: [GridVideo] = []
                videos.reserveCapacity(chunk)
                for position in min(region.count, grid * chunk)..<min(region.count, (grid + 1) * chunk) {
                    let ref = region[position]
                    if let kept = keptItem(ref, wasAt: position - inserted) {
                        videos.append(kept)
                        continue
                    }
                    guard let video = view.video(ref.id) else { return .recompose }
                    videos.append(.records(video: video, author: view.user(ref.author)))
                }
                grids.append((section, videos))
            }
            return .shift(GridShift(sequence: view.sequence, dependencies: dependencies, region: region, grids: grids, carousel: carousel, header: header))
        }
        if videoIDs.isEmpty && userIDs.isEmpty && suggestionIDs.isEmpty && !refreshSuggestions { return .current(view.sequence) }
        var carousel: [Suggestion]?
        if refreshSuggestions {
            guard let ranked = rankCarousel(of: cached, dependencies: &dependencies, region: cached.regionOrder, view: view) else { return .recompose }
            carousel = ranked
        }
        var patch = PagePatch(sequence: view.sequence, dependencies: dependencies, viewer: nil, carousel: carousel)
        var missing = false
        cached.videoRefs.forEach(touchedBy: SectionVideos.Touched(videos: videoIDs, authors: userIDs)) { sectionIndex, itemIndex, ref in
            guard let video = view.video(ref.id) else {
                missing = true
                return
            }
            patch.videoItems.append((sectionIndex, itemIndex, video, view.user(ref.author)))
        }
        if missing { return .recompose }
        if userIDs.contains(cached.page.structure.viewer) {
            guard let viewer = view.user(cached.page.structure.viewer) else { return .recompose }
            patch.viewer = viewer
        }
        for entry in dependencies.suggestionOrder where patch.carousel == nil && (suggestionIDs.contains(entry.id) || userIDs.contains(entry.id)) {
            guard let user = view.user(entry.id) else { return .recompose }
            patch.suggestions[entry.id] = Suggestion(user: user, mutualCount: entry.mutuals)
        }
        return .patch(patch)
    }

    /// The page's carousel ranked again, with `dependencies` to match (`region`: the region's
    /// videos as the page will show them). It keeps its size (whether the viewer has candidates
    /// does not depend on the followees' follows), so the page keeps its shape; nil if not.
    private func rankCarousel(
        of cached: CachedPage, dependencies: inout FeedDependencies, region: [VideoRef], view: IndexView
    ) -> [Suggestion]? {
        ranked.add(1, ordering: .relaxed)
        let carousel = view.followSuggestions(for: cached.page.structure.viewer, limit: FeedComposer.maxSuggestions)
        guard carousel.count == dependencies.suggestionOrder.count else { return nil }
        dependencies.refresh(carousel, region: region)
        return carousel
    }

    /// `region` with `video` (at `key` in the followed part's order) at its top when it is the
    /// newest of the feed and the page keeps its shape: the feed is full (one video leaves its
    /// end, so the sections and the ads stay), the region does not reach the feed's end, and the
    /// page shows videos. Nil otherwise (the page is composed again). Updates `dependencies` to
    /// match.
    private func insertFirst(
        _ video: VideoRef, at key: TimelineKey, into region: [VideoRef], of cached: CachedPage, dependencies: inout FeedDependencies,
        view: IndexView
    ) -> [VideoRef]? {
        guard cached.feedCount == FeedComposer.maxVideos, !region.isEmpty, region.count < cached.feedCount,
            cached.page.structure.parameters.kinds.contains(.video)
        else { return nil }
        // Newer than the region's first video if that one is a followee's (the followed part
        // comes first, newest first); ahead of the popular part otherwise.
        if dependencies.followees.contains(region[0].author) {
            guard let first = view.video(region[0].id)?.value, TimelineKey(first) < key else { return nil }
        }
        return dependencies.insertFirst(video, region: region)
    }

    /// The cached page with its grid sections shown from the shifted region (outside the index
    /// lock), and its carousel ranked again if it was: a grid keeps its stacked ad, every other
    /// section stays as it was.
    private func apply(_ shift: GridShift, to cached: CachedPage) -> CachedPage {
        let page = cached.page
        var sections = page.sections
        var shapes = page.structure.sections
        var videoRefs = cached.videoRefs
        var changed: [Int] = []
        for (index, videos) in shift.grids {
            let section = sections[index]
            // The videos shown from their records, rendered (or found rendered) at once.
            let records = videos.compactMap { video -> (video: Revised<Video>, author: Revised<User>?)? in
                guard case .records(let video, let author) = video else { return nil }
                return (video, author)
            }
            var rendered = (records.isEmpty ? [] : self.items.videos(records))[...]
            var items: [FeedItem] = []
            var refs: [VideoRef?] = []
            items.reserveCapacity(videos.count + 1)
            refs.reserveCapacity(videos.count + 1)
            for video in videos {
                switch video {
                case .kept(let keptSection, let item):
                    items.append(page.sections[keptSection].items[item])
                    refs.append(cached.videoRefs.video(section: keptSection, item: item))
                case .records(let record, _):
                    items.append(rendered.removeFirst())
                    refs.append(VideoRef(id: record.value.id, author: record.value.authorID))
                }
            }
            if cached.videoRefs.items(of: index).last == .some(nil), let ad = section.items.last {
                items.append(ad)
                refs.append(nil)
            }
            sections[index] = section.replacingItems(items)
            shapes[index] = SnapshotStructure.Section(sections[index])
            videoRefs.replace(section: index, with: refs)
            changed.append(index)
        }
        if let viewer = shift.header, let index = sections.firstIndex(where: { $0.kind == .header }), !sections[index].items.isEmpty {
            sections[index] = sections[index].replacingItems([self.items.header(viewer)])
            shapes[index] = SnapshotStructure.Section(sections[index])
            changed.append(index)
        }
        if let carousel = shift.carousel, let index = sections.firstIndex(where: { $0.kind == .followSuggestions }) {
            sections[index] = sections[index].replacingItems(carousel.map(self.items.suggestion))
            shapes[index] = SnapshotStructure.Section(sections[index])
            changed.append(index)
        }
        // Every grid keeps its count of items, so the heights and the hint are the page's.
        let structure = SnapshotStructure(
            viewer: page.structure.viewer, parameters: page.structure.parameters, sections: shapes, prefetch: page.structure.prefetch)
        let idHashes = structure.idHashes(reusing: cached.idHashes, changed: changed, page: sections)
        assert(idHashes.id == structure.id, "a shifted page's id differs from its hash from the start")
        // A client holding the cached page is sent the changed sections' edits (their items
        // matched by id), without a diff.
        let rendered = RenderedFeed(
            snapshotID: idHashes.id, sections: sections, nextCursor: page.nextCursor, structure: structure,
            patchedFrom: RenderedFeed.Patched(snapshotID: page.snapshotID, change: .sectionsChanged(changed.sorted())))
        return CachedPage(
            page: rendered, validatedAt: shift.sequence, dependencies: shift.dependencies, videoRefs: videoRefs,
            composition: compositions.add(1, ordering: .relaxed).newValue, idHashes: idHashes, regionOrder: shift.region,
            gridIndices: cached.gridIndices, feedCount: cached.feedCount)
    }

    /// The cached page with the patched items re-rendered (outside the index lock).
    private func apply(_ patch: PagePatch, to cached: CachedPage) -> CachedPage {
        let page = cached.page
        var sections = page.sections
        // The structure shares the shapes of the sections left as they were.
        var shapes = page.structure.sections
        var changed: [Int] = []
        // Only the sections a patch touches are copied: a like changes one item of a page.
        var videoItems = patch.videoItems[...]
        // Where an item's version changed: what a client one patch behind is sent.
        var updated: [ItemPath] = []
        // Whether the carousel, ranked again, shows other users or in another order: then the
        // page is no longer its predecessor with items changed in place, and shows other users.
        var reordered = false
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
            if kind == .followSuggestions, let carousel = patch.carousel {
                for (itemIndex, suggestion) in carousel.enumerated() where itemIndex < page.sections[sectionIndex].items.count {
                    let card = self.items.suggestion(suggestion)
                    if card.id != page.sections[sectionIndex].items[itemIndex].id { reordered = true }
                    replace(itemIndex, in: &items, of: sectionIndex, with: card)
                }
            }
            if let items {
                let section = page.sections[sectionIndex]
                sections[sectionIndex] = section.replacingItems(items)
                shapes[sectionIndex] = SnapshotStructure.Section(sections[sectionIndex])
                changed.append(sectionIndex)
            }
        }
        // Items patched in place: the sections' heights, so the hint, are the page's.
        let structure = SnapshotStructure(
            viewer: page.structure.viewer, parameters: page.structure.parameters, sections: shapes, prefetch: page.structure.prefetch)
        // Only the sections that changed are hashed again.
        let idHashes = structure.idHashes(reusing: cached.idHashes, changed: changed, page: sections)
        assert(idHashes.id == structure.id, "a patched page's id differs from its hash from the start")
        updated.sort { ($0.section, $0.item) < ($1.section, $1.item) }
        let rendered = RenderedFeed(
            snapshotID: idHashes.id, sections: sections, nextCursor: page.nextCursor,
            structure: structure,
            patchedFrom: RenderedFeed.Patched(
                snapshotID: page.snapshotID, change: reordered ? .sectionsChanged(changed.sorted()) : .itemsUpdated(updated)))
        return CachedPage(
            page: rendered, validatedAt: patch.sequence, dependencies: patch.dependencies, videoRefs: cached.videoRefs,
            composition: reordered ? compositions.add(1, ordering: .relaxed).newValue : cached.composition, idHashes: idHashes,
            regionOrder: cached.regionOrder, gridIndices: cached.gridIndices, feedCount: cached.feedCount)
    }

    private func compose(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> CachedPage {
        let (selection, sequence) = try index.read { view throws(FeedError) in
            (try FeedComposer.select(viewer: viewer, parameters: parameters, in: view), view.sequence)
        }
        let page = FeedComposer(items: items).build(selection)
        let end = min(parameters.offset, selection.totalSections) + page.count
        let nextCursor = end < selection.totalSections ? FeedCursor.encode(offset: end) : nil
        let structure = SnapshotStructure(viewer: viewer, parameters: parameters, page: page, hasNextPage: nextCursor != nil)
        assert(structure.nextCursor == nextCursor, "a delta tells the cursor's change from the snapshot's structure")
        let idHashes = structure.idHashes(page: page)
        assert(idHashes.id == structure.id, "a composed page's id differs from its structure's")
        let rendered = RenderedFeed(
            snapshotID: idHashes.id, sections: page, nextCursor: nextCursor, structure: structure)
        return CachedPage(
            page: rendered, validatedAt: sequence, dependencies: selection.dependencies, videoRefs: selection.videoRefs,
            composition: compositions.add(1, ordering: .relaxed).newValue, idHashes: idHashes, regionOrder: selection.regionOrder,
            gridIndices: selection.gridIndices, feedCount: selection.feedCount)
    }
}

extension FeedSection {
    /// The same section showing `items` (its id, kind, columns and views kept).
    fileprivate func replacingItems(_ items: [FeedItem]) -> FeedSection {
        FeedSection(id: id, kind: kind, columns: columns, items: items, header: header, footer: footer)
    }
}
