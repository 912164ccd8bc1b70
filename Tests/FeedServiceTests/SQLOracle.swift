import FeedService
import FeedStore
import FeedWire
import JSONBytes
import SQLiteStore
import StoreOracle

/// The feed as it was composed before the index existed: straight from SQL, one query per part,
/// in one read transaction. Kept as the test oracle the index-based composition must equal.
struct SQLOracle {
    let stackAds: Bool

    func compose(viewer viewerID: Int64, store: SQLiteFeedStore) throws -> [FeedSection] {
        try store.read { reader in try compose(viewer: viewerID, reader: reader) }
    }

    private func compose(viewer viewerID: Int64, reader: SQLiteReader) throws -> [FeedSection] {
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
            FeedSection(id: "header", kind: .header, columns: 1, items: [ItemRenderer.header(viewer: viewer)])
        ]
        let chunks = stride(from: 0, to: videos.count, by: FeedComposer.gridChunkSize).map {
            videos[$0..<min($0 + FeedComposer.gridChunkSize, videos.count)]
        }
        var ads = AdPlacement.slots(viewer: viewerID, inventory: inventory, gridSections: chunks.count)[...]
        let suggestionItems = suggestions.map { ItemRenderer.suggestion($0.user, mutualCount: $0.mutualCount) }
        // The carousel carries its title above and "See all" below; an ad standing alone "Sponsored".
        let carousel = FeedSection(
            id: "suggestions", kind: .followSuggestions, columns: 1, items: suggestionItems, header: ItemRenderer.suggestionsTitle,
            footer: ItemRenderer.seeAll(count: suggestionItems.count))
        if chunks.isEmpty {
            sections.append(FeedSection(id: "empty", kind: .empty, columns: 1, items: [FeedItem.emptyState]))
        }
        if chunks.isEmpty, !suggestionItems.isEmpty {
            sections.append(carousel)
        }
        for (index, chunk) in chunks.enumerated() {
            var items = chunk.map { ItemRenderer.video($0, author: authors[$0.authorID]) }
            var standaloneAd: (item: FeedItem, footer: FeedItem)?
            if let slot = ads.first, slot.afterGrid == index {
                ads.removeFirst()
                let ad = ItemRenderer.ad(slot.ad)
                if stackAds { items.append(ad) } else { standaloneAd = (ad, ItemRenderer.sponsored(slot.ad)) }
            }
            sections.append(
                FeedSection(
                    id: "grid-\(index)", kind: stackAds && items.last?.kind == .ad ? SectionKind.videoGridStacked : .videoGrid, columns: 2, items: items))
            if let standaloneAd {
                sections.append(FeedSection(id: "ad-slot-\(index)", kind: .ad, columns: 1, items: [standaloneAd.item], footer: standaloneAd.footer))
            }
            if index == 0, !suggestionItems.isEmpty {
                sections.append(carousel)
            }
        }
        return sections
    }
}
