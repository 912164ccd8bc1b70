import FeedStore

/// Builds a viewer's whole feed (up to ``FeedComposer/maxVideos`` videos) from the store.
///
/// Order: the header; video-grid sections of ``FeedComposer/gridChunkSize`` videos — the
/// followed authors' videos newest first, then popular videos by others; the follow-suggestions
/// carousel after the first grid section; ads after the grid sections ``AdPlacement`` picks
/// (standalone sections, or the last item of that grid section when stacked). With no videos at
/// all, an empty-state section takes the grid's place.
struct FeedComposer {
    /// Videos per grid section, shown in two columns.
    static let gridChunkSize = 6
    /// The window of videos one feed holds; pagination walks within it.
    static let maxVideos = 240
    /// Users in the suggestions carousel.
    static let maxSuggestions = 10

    let stackAds: Bool
    let renderer: ItemRenderer

    /// - Throws: ``FeedError/viewerNotFound(_:)``, or a storage error.
    func compose(viewer viewerID: Int64, reader: FeedReader) throws -> [FeedSection] {
        guard let viewer = try reader.user(id: viewerID) else { throw FeedError.viewerNotFound(viewerID) }
        let followed = try reader.followedVideos(viewer: viewerID, limit: FeedComposer.maxVideos)
        var videos = followed
        if videos.count < FeedComposer.maxVideos {
            let followedAuthors = Set(followed.map(\.authorID))
            let seen = Set(followed.map(\.id))
            let popular = try reader.popularVideos(limit: FeedComposer.maxVideos - videos.count, excludingAuthors: followedAuthors)
            videos.append(contentsOf: popular.lazy.filter { !seen.contains($0.id) })
        }
        let authors = try reader.users(ids: Set(videos.map(\.authorID)))
        let suggestions = try reader.followSuggestions(for: viewerID, limit: FeedComposer.maxSuggestions)
        let inventory = try reader.activeAds()

        var sections: [FeedSection] = [
            FeedSection(id: "header", kind: "header", columns: 1, items: [renderer.header(viewer: viewer)])
        ]
        let chunks = stride(from: 0, to: videos.count, by: FeedComposer.gridChunkSize).map {
            videos[$0..<min($0 + FeedComposer.gridChunkSize, videos.count)]
        }
        var ads = AdPlacement.slots(viewer: viewerID, inventory: inventory, gridSections: chunks.count)[...]
        let suggestionItems = suggestions.map(renderer.suggestion)
        if chunks.isEmpty {
            sections.append(FeedSection(id: "empty", kind: "empty", columns: 1, items: [renderer.emptyState()]))
        }
        if chunks.isEmpty, !suggestionItems.isEmpty {
            sections.append(FeedSection(id: "suggestions", kind: "follow_suggestions", columns: 1, items: suggestionItems))
        }
        for (index, chunk) in chunks.enumerated() {
            var items = chunk.map { renderer.video($0, author: authors[$0.authorID]) }
            var standaloneAd: FeedItem?
            if let slot = ads.first, slot.afterGrid == index {
                ads.removeFirst()
                let ad = renderer.ad(slot.ad)
                if stackAds { items.append(ad) } else { standaloneAd = ad }
            }
            sections.append(FeedSection(id: "grid-\(index)", kind: stackAds && items.last?.kind == "ad" ? "video_grid_stacked" : "video_grid", columns: 2, items: items))
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
