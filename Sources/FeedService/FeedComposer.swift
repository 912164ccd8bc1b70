import FeedIndex
import FeedStore

/// Builds a viewer's whole feed (up to ``FeedComposer/maxVideos`` videos) from the index.
///
/// Order: the header; video-grid sections of ``FeedComposer/gridChunkSize`` videos — the
/// followed authors' videos newest first, then popular videos by others; the follow-suggestions
/// carousel after the first grid section; ads after the grid sections ``AdPlacement`` picks
/// (standalone sections, or the last item of that grid section when stacked). With no videos at
/// all, an empty-state section takes the grid's place.
///
/// Composition happens in two steps: ``select(viewer:in:)`` picks the records under the index's
/// reader lock (no rendering there), ``build(_:)`` renders sections from them afterwards.
struct FeedComposer {
    /// Videos per grid section, shown in two columns.
    static let gridChunkSize = 6
    /// The window of videos one feed holds; pagination walks within it.
    static let maxVideos = 240
    /// Users in the suggestions carousel.
    static let maxSuggestions = 10

    let stackAds: Bool
    let items: ItemCache

    /// The records one feed shows, copied out of the index, and what the feed depends on.
    struct Selection {
        var viewer: Revised<User>
        var videos: [(video: Revised<Video>, author: Revised<User>?)]
        var suggestions: [Suggestion]
        var ads: AdInventory
        var dependencies: FeedDependencies
    }

    /// Picks what `viewerID`'s feed shows. Call inside ``FeedIndex/read(_:)``.
    ///
    /// - Throws: ``FeedError/viewerNotFound(_:)``.
    static func select(viewer viewerID: Int64, in view: IndexView) throws(FeedError) -> Selection {
        guard let viewer = view.user(viewerID) else { throw .viewerNotFound(viewerID) }
        let followees = view.followees(of: viewerID)
        let followed = view.followedVideos(viewer: viewerID, limit: maxVideos)
        var videos = followed
        var popularFloor: PopularityKey?
        let needsPopular = videos.count < maxVideos
        if needsPopular {
            // Exactly the authors of the followed videos: when the followed list is not full it
            // holds every followee's video, so this is every followee who has posted.
            let followedAuthors = Set(followed.map(\.value.authorID))
            let wanted = maxVideos - videos.count
            let popular = view.popularVideos(limit: wanted, excludingAuthors: followedAuthors)
            if popular.count == wanted, let last = popular.last { popularFloor = PopularityKey(last.value) }
            videos.append(contentsOf: popular)
        }
        let suggestions = view.followSuggestions(for: viewerID, limit: maxSuggestions)
        var dependencies = FeedDependencies(viewer: viewerID, followees: followees)
        dependencies.needsPopular = needsPopular
        dependencies.popularFloor = popularFloor
        dependencies.shownVideos.reserveCapacity(videos.count)
        dependencies.shownUsers.insert(viewerID)
        var selected: [(video: Revised<Video>, author: Revised<User>?)] = []
        selected.reserveCapacity(videos.count)
        for video in videos {
            dependencies.shownVideos.insert(video.value.id)
            dependencies.shownUsers.insert(video.value.authorID)
            selected.append((video, view.user(video.value.authorID)))
        }
        for suggestion in suggestions {
            dependencies.shownUsers.insert(suggestion.user.value.id)
            dependencies.suggested.insert(suggestion.user.value.id)
        }
        dependencies.suggestionFloor = suggestions.count == maxSuggestions ? suggestions.last : nil
        return Selection(viewer: viewer, videos: selected, suggestions: suggestions, ads: view.ads, dependencies: dependencies)
    }

    /// Renders the sections of a selection (outside the index lock).
    func build(_ selection: Selection) -> [FeedSection] {
        let viewerID = selection.viewer.value.id
        var sections: [FeedSection] = [
            FeedSection(id: "header", kind: "header", columns: 1, items: [items.header(selection.viewer)])
        ]
        let chunks = stride(from: 0, to: selection.videos.count, by: FeedComposer.gridChunkSize).map {
            selection.videos[$0..<min($0 + FeedComposer.gridChunkSize, selection.videos.count)]
        }
        var ads = AdPlacement.slots(viewer: viewerID, inventory: selection.ads, gridSections: chunks.count)[...]
        let suggestionItems = selection.suggestions.map(items.suggestion)
        if chunks.isEmpty {
            sections.append(FeedSection(id: "empty", kind: "empty", columns: 1, items: [items.emptyState()]))
        }
        if chunks.isEmpty, !suggestionItems.isEmpty {
            sections.append(FeedSection(id: "suggestions", kind: "follow_suggestions", columns: 1, items: suggestionItems))
        }
        for (index, chunk) in chunks.enumerated() {
            var sectionItems = chunk.map { items.video($0.video, author: $0.author) }
            var standaloneAd: FeedItem?
            if let slot = ads.first, slot.afterGrid == index {
                ads.removeFirst()
                let ad = items.ad(slot.ad, epoch: selection.ads.epoch)
                if stackAds { sectionItems.append(ad) } else { standaloneAd = ad }
            }
            let kind = stackAds && sectionItems.last?.kind == "ad" ? "video_grid_stacked" : "video_grid"
            sections.append(FeedSection(id: "grid-\(index)", kind: kind, columns: 2, items: sectionItems))
            if let standaloneAd {
                sections.append(FeedSection(id: "ad-slot-\(index)", kind: "ad", columns: 1, items: [standaloneAd]))
            }
            if index == 0, !suggestionItems.isEmpty {
                sections.append(FeedSection(id: "suggestions", kind: "follow_suggestions", columns: 1, items: suggestionItems))
            }
        }
        return sections
    }
}
