import Deterministic
import FeedIndex
import FeedStore
import FeedWire
import JSONBytes
import Synchronization

/// Renders records into ``FeedItem``s once per version and keeps them: every viewer, page and
/// delta that shows the same video (with the same author) reuses the same bytes. Validity is
/// checked against the index revisions of the records the bytes were made from, so a change
/// re-renders only what it touched. Bounded in bytes.
final class ItemCache: Sendable {
    private struct Stamp: Hashable {
        var revision: Int64
        var otherRevision: Int64
    }

    private struct Cached {
        var stamp: Stamp
        var item: FeedItem
    }

    private enum Key: Hashable {
        case video(Int64)
        case suggestion(user: Int64, mutuals: Int64)
        case header(Int64)
        case ad(Int64)
    }

    private let cache: Mutex<ByteBoundedCache<Key, Cached>>

    /// A cache holding at most `budget` bytes of rendered items.
    init(budget: Int) {
        cache = Mutex(ByteBoundedCache(budget: budget))
    }

    /// Bytes held now.
    var bytes: Int { cache.withLock { $0.totalCost } }

    private func cached(_ key: Key, stamp: Stamp, render: () -> FeedItem) -> FeedItem {
        if let hit = cache.withLock({ $0.value(for: key) }), hit.stamp == stamp { return hit.item }
        let item = render()
        cache.withLock { $0.insert(Cached(stamp: stamp, item: item), for: key, cost: item.json.count + 96) }
        return item
    }

    /// The items of several videos, looked up under one lock.
    func videos(_ videos: [(video: Revised<Video>, author: Revised<User>?)]) -> [FeedItem] {
        let stamps = videos.map { Stamp(revision: $0.video.revision, otherRevision: $0.author?.revision ?? -1) }
        var found: [FeedItem?] = cache.withLock { cache in
            zip(videos, stamps).map { entry, stamp in
                guard let hit = cache.value(for: .video(entry.video.value.id)), hit.stamp == stamp else { return nil }
                return hit.item
            }
        }
        var rendered: [(Key, Cached)] = []
        for index in found.indices where found[index] == nil {
            let item = ItemRenderer.video(videos[index].video.value, author: videos[index].author?.value)
            found[index] = item
            rendered.append((.video(videos[index].video.value.id), Cached(stamp: stamps[index], item: item)))
        }
        if !rendered.isEmpty {
            cache.withLock { cache in
                for (key, value) in rendered { cache.insert(value, for: key, cost: value.item.json.count + 96) }
            }
        }
        return found.map { $0! }
    }

    func video(_ video: Revised<Video>, author: Revised<User>?) -> FeedItem {
        cached(.video(video.value.id), stamp: Stamp(revision: video.revision, otherRevision: author?.revision ?? -1)) {
            ItemRenderer.video(video.value, author: author?.value)
        }
    }

    func suggestion(_ suggestion: Suggestion) -> FeedItem {
        cached(.suggestion(user: suggestion.user.value.id, mutuals: suggestion.mutualCount), stamp: Stamp(revision: suggestion.user.revision, otherRevision: 0))
        {
            ItemRenderer.suggestion(suggestion.user.value, mutualCount: suggestion.mutualCount)
        }
    }

    func header(_ viewer: Revised<User>) -> FeedItem {
        cached(.header(viewer.value.id), stamp: Stamp(revision: viewer.revision, otherRevision: 0)) {
            ItemRenderer.header(viewer: viewer.value)
        }
    }

    /// `epoch` is the inventory's: every change of any ad moves it.
    func ad(_ ad: Ad, epoch: Int64) -> FeedItem {
        cached(.ad(ad.id), stamp: Stamp(revision: epoch, otherRevision: 0)) {
            ItemRenderer.ad(ad)
        }
    }

    func emptyState() -> FeedItem {
        ItemRenderer.emptyState
    }
}

/// Turns records into ``FeedItem``s: the data object, its version and the item JSON.
enum ItemRenderer {
    static func video(_ video: Video, author: User?) -> FeedItem {
        var data = JSONWriter(capacity: 400)
        data.raw("{\"video\":{\"id\":")
        data.int(video.id)
        data.raw(",\"title\":")
        data.string(video.title)
        data.raw(",\"thumbnail_url\":")
        data.string(video.thumbnailURL)
        data.raw(",\"duration_seconds\":")
        data.int(video.durationSeconds)
        data.raw(",\"like_count\":")
        data.int(video.likeCount)
        data.raw(",\"view_count\":")
        data.int(video.viewCount)
        data.raw(",\"created_at\":")
        data.int(video.createdAt)
        data.raw("},\"author\":")
        if let author {
            writeUser(author, to: &data)
        } else {
            data.null()
        }
        data.raw("}")
        return item(id: "video:\(video.id)", kind: .video, data: data.bytes)
    }

    static func ad(_ ad: Ad) -> FeedItem {
        var data = JSONWriter(capacity: 300)
        data.raw("{\"id\":")
        data.int(ad.id)
        data.raw(",\"advertiser\":")
        data.string(ad.advertiser)
        data.raw(",\"title\":")
        data.string(ad.title)
        data.raw(",\"image_url\":")
        data.string(ad.imageURL)
        data.raw(",\"target_url\":")
        data.string(ad.targetURL)
        data.raw("}")
        return item(id: "ad:\(ad.id)", kind: .ad, data: data.bytes)
    }

    static func suggestion(_ user: User, mutualCount: Int64) -> FeedItem {
        var data = JSONWriter(capacity: 200)
        data.raw("{\"user\":")
        writeUser(user, to: &data)
        data.raw(",\"follower_count\":")
        data.int(user.followerCount)
        data.raw(",\"mutual_followees\":")
        data.int(mutualCount)
        data.raw("}")
        return item(id: "user:\(user.id)", kind: .user, data: data.bytes)
    }

    static func header(viewer: User) -> FeedItem {
        var data = JSONWriter(capacity: 160)
        data.raw("{\"title\":\"For you\",\"viewer\":")
        writeUser(viewer, to: &data)
        data.raw("}")
        return item(id: "header", kind: .header, data: data.bytes)
    }

    static let emptyState: FeedItem = item(
        id: "empty", kind: .empty,
        data: Array(#"{"title":"Nothing here yet","message":"Follow people to fill your feed with their videos."}"#.utf8))

    private static func writeUser(_ user: User, to data: inout JSONWriter) {
        data.raw("{\"id\":")
        data.int(user.id)
        data.raw(",\"handle\":")
        data.string(user.handle)
        data.raw(",\"display_name\":")
        data.string(user.displayName)
        data.raw(",\"avatar_url\":")
        data.optionalString(user.avatarURL)
        data.raw("}")
    }

    /// The item JSON without a size: id, kind, version (a hash of the data) and the data.
    /// ``FeedItem/write(to:layout:)`` adds the size for a screen width when writing it out.
    private static func item(id: String, kind: ItemKind, data: [UInt8]) -> FeedItem {
        var hasher = StableHasher()
        hasher.combine(kind.rawValue)
        hasher.combine(bytes: data)
        let version = hasher.state
        let versionText = hex16(version)
        var json = JSONWriter(capacity: data.count + 96)
        json.raw("{\"id\":")
        json.string(id)
        json.raw(",\"kind\":")
        json.string(kind.rawValue)
        json.raw(",\"version\":\"")
        json.raw(versionText)
        json.raw("\",\"data\":")
        json.raw(bytes: data)
        json.raw("}")
        return FeedItem(id: id, kind: kind, version: version, versionText: versionText, json: json.bytes)
    }
}
