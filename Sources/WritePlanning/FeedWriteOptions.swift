public import FeedWire
import JSONBytes

extension WriteOptions {
    /// What a viewer's feed page shows, so most writes change that feed: its videos (with their
    /// like counts), the authors of its first grid section (the viewer's followees' newest
    /// videos: a new video by one lands at the top, unfollowing one slides sections), the users
    /// suggested to follow, and its ads. The viewer follows and unfollows.
    public init(viewer: Int64, feed: FeedDocument) {
        self.init()
        follower = viewer
        let items = feed.sections.flatMap(\.items)
        for item in items where item.kind == "video" {
            guard let video = item.data["video"], let id = video["id"]?.int64Value else { continue }
            videos.append(id)
            if let likes = video["like_count"]?.int64Value { likeCounts[id] = likes }
        }
        let firstGrid = feed.sections.first { $0.kind.hasPrefix("video_grid") }
        authors = firstGrid?.items.compactMap { $0.data["author"]?["id"]?.int64Value } ?? []
        followees = authors
        followable = feed.sections.filter { $0.kind == "follow_suggestions" }.flatMap(\.items).compactMap { $0.data["user"]?["id"]?.int64Value }
        ads = items.compactMap { $0.kind == "ad" ? $0.data["id"]?.int64Value ?? $0.data["ad"]?["id"]?.int64Value : nil }
    }
}
