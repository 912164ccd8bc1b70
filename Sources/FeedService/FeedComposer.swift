package import FeedIndex
package import FeedStore
package import FeedWire

/// Builds a viewer's feed (up to ``FeedComposer/maxVideos`` videos) from the index.
///
/// Order: the header; video-grid sections of ``FeedComposer/gridChunkSize`` videos — the
/// followed authors' videos newest first, then popular videos by others; the follow-suggestions
/// carousel after the first grid section; ads after the grid sections ``AdPlacement`` picks
/// (standalone sections, or the last item of that grid section when stacked). With no videos at
/// all, an empty-state section takes the grid's place.
///
/// Composition happens in two steps. ``select(viewer:parameters:in:)`` runs under the index's
/// reader lock: it picks the videos, lays out every section of the feed (ids and what goes in
/// each, no rendering) and copies out only the records of the sections in the requested page.
/// ``build(_:)`` then renders those sections, outside the lock, from the shared item cache.
package struct FeedComposer {
    /// Videos per grid section, shown in two columns.
    package static let gridChunkSize = 6
    /// The window of videos one feed holds; pagination walks within it.
    package static let maxVideos = 240
    /// Users in the suggestions carousel.
    package static let maxSuggestions = 10

    package let items: ItemCache

    /// One section of the page, with the records it shows.
    package enum PlannedSection {
        case header(Revised<User>)
        case empty
        case suggestions([Suggestion])
        case grid(index: Int, videos: [(video: Revised<Video>, author: Revised<User>?)], ad: Ad?)
        case ad(index: Int, Ad)
    }

    /// The page's sections, copied out of the index, and what the whole feed depends on.
    package struct Selection {
        var page: [PlannedSection]
        /// Sections in the whole feed (for the next cursor).
        var totalSections: Int
        var adEpoch: Int64
        var stackAds: Bool
        /// The kinds the client renders.
        var kinds: ItemKinds
        var dependencies: FeedDependencies
        /// The videos of the region in feed order (see ``FeedDependencies``), and how many videos
        /// the whole feed holds: what a page patched for a new video at the top starts from.
        var regionOrder: [VideoRef]
        var feedCount: Int

        /// For each page section, the grid index it shows (nil for other sections).
        var gridIndices: [Int?] {
            page.map { section in
                if case .grid(let index, _, _) = section { return index }
                return nil
            }
        }

        /// For each page section, for each item, the video it shows (nil for other items).
        var videoRefs: SectionVideos {
            SectionVideos(
                page.lazy.map { section -> [VideoRef?] in
                    switch section {
                    case .grid(_, let videos, let ad):
                        let refs: [VideoRef?] = videos.map { VideoRef(id: $0.video.value.id, author: $0.video.value.authorID) }
                        return ad == nil ? refs : refs + [nil]
                    case .suggestions(let suggestions):
                        return Array(repeating: nil, count: suggestions.count)
                    case .header, .empty, .ad:
                        return [nil]
                    }
                })
        }
    }

    /// Picks what `viewerID`'s feed shows and the sections of the page `parameters` asks for.
    /// Call inside ``FeedIndex/read(_:)``.
    ///
    /// - Throws: ``FeedError/viewerNotFound(_:)``.
    package static func select(viewer viewerID: Int64, parameters: FeedParameters, in view: IndexView) throws(FeedError) -> Selection {
        guard let viewer = view.user(viewerID) else { throw .viewerNotFound(viewerID) }
        let followees = view.followees(of: viewerID)
        var videos = view.followedVideos(viewer: viewerID, limit: maxVideos)
        let followedCount = videos.count
        var popularKeys: [PopularityKey] = []
        if videos.count < maxVideos {
            // The followed part is not full, so it holds every followee's video: excluding the
            // followees excludes exactly the authors it shows.
            let popular = view.popularVideos(limit: maxVideos - videos.count, excludingAuthors: followees)
            videos.append(contentsOf: popular.map(\.video))
            popularKeys = popular.map(\.key)
        }
        var dependencies = FeedDependencies(viewer: viewerID, followees: followees)
        dependencies.feedVideos = videos.map(\.id).sorted()

        // Lay out the whole feed: which sections, in which order.
        let chunkCount = (videos.count + gridChunkSize - 1) / gridChunkSize
        let ads = view.ads
        let slots = AdPlacement.slots(viewer: viewerID, inventory: ads, gridSections: chunkCount)
        // Sections of kinds the client does not render are left out before paging, so a page
        // holds `limit` sections it can show and the cursor counts only those.
        let kinds = parameters.kinds
        let hasSuggestions = view.hasSuggestions(for: viewerID) && kinds.contains(.user)
        let showsVideos = kinds.contains(.video)
        let showsAds = kinds.contains(.ad)
        var layout: [LaidOut] = kinds.contains(.header) ? [.header] : []
        if chunkCount == 0 {
            if kinds.contains(.empty) { layout.append(.empty) }
            if hasSuggestions { layout.append(.suggestions) }
        }
        var nextSlot = 0
        for index in 0..<chunkCount {
            var ad: Ad?
            if nextSlot < slots.count, slots[nextSlot].afterGrid == index {
                ad = showsAds ? slots[nextSlot].ad : nil
                nextSlot += 1
            }
            let stacked = parameters.stackAds ? ad : nil
            // A grid without videos shows only its stacked ad, if it has one.
            if showsVideos || stacked != nil { layout.append(.grid(index: index, ad: stacked)) }
            if let ad, !parameters.stackAds { layout.append(.ad(index: index, ad)) }
            if index == 0, hasSuggestions { layout.append(.suggestions) }
        }

        // Copy out only what the page shows.
        let start = min(parameters.offset, layout.count)
        let end = min(start + parameters.limit, layout.count)
        var page: [PlannedSection] = []
        page.reserveCapacity(end - start)
        var shownUsers: [Int64] = [viewerID]
        for section in layout[start..<end] {
            switch section {
            case .header:
                page.append(.header(viewer))
            case .empty:
                page.append(.empty)
            case .suggestions:
                let suggestions = view.followSuggestions(for: viewerID, limit: maxSuggestions)
                shownUsers.append(contentsOf: suggestions.map(\.user.value.id))
                dependencies.suggestionFloor = suggestions.count == maxSuggestions ? suggestions.last : nil
                dependencies.suggestionOrder = suggestions.map { ($0.user.value.id, $0.mutualCount, FollowerRankKey($0.user.value)) }
                dependencies.suggestionsOnPage = true
                page.append(.suggestions(suggestions))
            case .grid(let index, let ad):
                let chunk = showsVideos ? videos[(index * gridChunkSize)..<min((index + 1) * gridChunkSize, videos.count)] : []
                // Labelled as the section's tuples are: an unlabelled one was converted to them by
                // a runtime cast per video (swift_dynamicCast, about 11,000 instructions a page).
                let records = chunk.compactMap { video in view.video(video.id).map { (video: $0, author: view.user(video.author)) } }
                page.append(.grid(index: index, videos: records, ad: ad))
            case .ad(let index, let ad):
                page.append(.ad(index: index, ad))
            }
        }
        // The region: the videos of every grid section up to the end of the page.
        var regionCount = 0
        for section in layout[0..<end] {
            if case .grid(let index, _) = section { regionCount = min(videos.count, (index + 1) * gridChunkSize) }
        }
        dependencies.regionVideos = videos[0..<regionCount].map(\.id).sorted()
        dependencies.watchedVideos = dependencies.regionVideos
        if regionCount > followedCount {
            dependencies.regionPopular = (followedCount..<regionCount).map { (videos[$0].id, popularKeys[$0 - followedCount]) }
        }
        shownUsers.append(contentsOf: videos[0..<regionCount].map(\.author))
        dependencies.shownUsers = shownUsers.sortedUnique()
        dependencies.pageIsLast = end == layout.count
        // Off the page, the carousel matters only by being there or not.
        dependencies.suggestionsOffPage = hasSuggestions && !dependencies.suggestionsOnPage
        return Selection(
            page: page, totalSections: layout.count, adEpoch: ads.epoch, stackAds: parameters.stackAds, kinds: kinds,
            dependencies: dependencies, regionOrder: Array(videos[0..<regionCount]), feedCount: videos.count)
    }

    /// A section of the whole feed before anything is copied out.
    private enum LaidOut {
        case header
        case empty
        case suggestions
        case grid(index: Int, ad: Ad?)
        case ad(index: Int, Ad)
    }

    /// Renders the sections of the page (outside the index lock), with the headers and footers
    /// of the kinds the client renders: the carousel's title and "See all", an ad's "Sponsored".
    package func build(_ selection: Selection) -> [FeedSection] {
        let kinds = selection.kinds
        return selection.page.map { planned in
            switch planned {
            case .header(let viewer):
                return FeedSection(id: "header", kind: .header, columns: 1, items: [items.header(viewer)])
            case .empty:
                return FeedSection(id: "empty", kind: .empty, columns: 1, items: [items.emptyState()])
            case .suggestions(let suggestions):
                return FeedSection(
                    id: "suggestions", kind: .followSuggestions, columns: 1, items: suggestions.map(items.suggestion),
                    header: kinds.contains(.sectionTitle) ? items.suggestionsTitle() : nil,
                    footer: kinds.contains(.seeAll) ? items.seeAll(count: suggestions.count) : nil)
            case .grid(let index, let videos, let ad):
                var sectionItems = items.videos(videos)
                if let ad { sectionItems.append(items.ad(ad, epoch: selection.adEpoch)) }
                let kind: SectionKind = ad != nil ? .videoGridStacked : .videoGrid
                return FeedSection(id: "grid-\(index)", kind: kind, columns: 2, items: sectionItems)
            case .ad(let index, let ad):
                return FeedSection(
                    id: "ad-slot-\(index)", kind: .ad, columns: 1, items: [items.ad(ad, epoch: selection.adEpoch)],
                    footer: kinds.contains(.sponsored) ? items.sponsored(ad, epoch: selection.adEpoch) : nil)
            }
        }
    }
}
