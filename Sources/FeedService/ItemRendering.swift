import Deterministic
package import FeedIndex
public import FeedStore
public import FeedWire
import JSONBytes
import Synchronization

/// Renders records into ``FeedItem``s once per version and keeps them: every viewer, page and
/// delta that shows the same video (with the same author) reuses the same bytes. Validity is
/// checked against the index revisions of the records the bytes were made from, so a change
/// re-renders only what it touched. Bounded in bytes.
///
/// Every rendering is also kept by its version (``rendered(version:)``), past the record's next
/// change, so a delta can send the fields that changed since the version a snapshot holds
/// instead of the whole item. That archive takes a quarter of the budget, and the patches
/// computed from it (once per pair of versions, for every viewer a change reaches) a sixteenth.
package final class ItemCache: Sendable {
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
        case seeAll(count: Int)
        case sponsored(ad: Int64)
    }

    private let cache: Mutex<ByteBoundedCache<Key, Cached>>
    private let archive: Mutex<ByteBoundedCache<UInt64, FeedItem>>
    /// Patches between two versions of an item (nil: the item goes whole), computed once for
    /// every viewer the change reaches.
    private let patches: Mutex<ByteBoundedCache<PatchKey, ItemPatch?>>

    private struct PatchKey: Hashable {
        let old: UInt64
        let new: UInt64
    }

    /// A cache holding at most `budget` bytes: three quarters of rendered items, a quarter of
    /// renderings by version.
    package init(budget: Int) {
        cache = Mutex(ByteBoundedCache(budget: budget - budget / 4 - budget / 16))
        archive = Mutex(ByteBoundedCache(budget: budget / 4))
        patches = Mutex(ByteBoundedCache(budget: budget / 16))
    }

    /// The patch from `old` to `new` (see ``ItemPatch/init(from:to:)``), computed once per pair
    /// of versions.
    package func patch(from old: FeedItem, to new: FeedItem) -> ItemPatch? {
        let key = PatchKey(old: old.version, new: new.version)
        if let hit = patches.withLock({ $0.value(for: key) }) { return hit }
        let patch = ItemPatch(from: old, to: new)
        patches.withLock { _ = $0.insert(patch, for: key, cost: 160 + (patch?.changes.count ?? 0) * 96) }
        return patch
    }

    /// Bytes held now.
    package var bytes: Int { cache.withLock { $0.totalCost } + archive.withLock { $0.totalCost } + patches.withLock { $0.totalCost } }

    /// The rendering whose version is `version`, if it is still kept.
    package func rendered(version: UInt64) -> FeedItem? {
        archive.withLock { $0.value(for: version) }
    }

    private func keep(_ items: some Sequence<FeedItem>) {
        archive.withLock { archive in
            for item in items { archive.insert(item, for: item.version, cost: item.json.count + 64) }
        }
    }

    private func cached(_ key: Key, stamp: Stamp, render: () -> FeedItem) -> FeedItem {
        if let hit = cache.withLock({ $0.value(for: key) }), hit.stamp == stamp { return hit.item }
        let item = render()
        cache.withLock { _ = $0.insert(Cached(stamp: stamp, item: item), for: key, cost: item.json.count + 96) }
        keep(CollectionOfOne(item))
        return item
    }

    /// The items of several videos, looked up under one lock.
    package func videos(_ videos: [(video: Revised<Video>, author: Revised<User>?)]) -> [FeedItem] {
        // Ids and stamps taken in one pass, the records borrowed: subscripting the array of
        // records copied each one (a retain and a release of each of its strings) before taking
        // its id, as zipping them did (callgrind: a third of looking a page's videos up).
        let keys = videos.map { (id: $0.video.value.id, stamp: Stamp(revision: $0.video.revision, otherRevision: $0.author?.revision ?? -1)) }
        var found: [FeedItem?] = cache.withLock { cache in
            keys.map { key in
                guard let hit = cache.value(for: .video(key.id)), hit.stamp == key.stamp else { return nil }
                return hit.item
            }
        }
        var rendered: [(Key, Cached)] = []
        for index in found.indices where found[index] == nil {
            let item = ItemRenderer.video(videos[index].video.value, author: videos[index].author?.value)
            found[index] = item
            rendered.append((.video(keys[index].id), Cached(stamp: keys[index].stamp, item: item)))
        }
        if !rendered.isEmpty {
            cache.withLock { cache in
                for (key, value) in rendered { cache.insert(value, for: key, cost: value.item.json.count + 96) }
            }
            keep(rendered.lazy.map(\.1.item))
        }
        return found.map { $0! }
    }

    package func video(_ video: Revised<Video>, author: Revised<User>?) -> FeedItem {
        cached(.video(video.value.id), stamp: Stamp(revision: video.revision, otherRevision: author?.revision ?? -1)) {
            ItemRenderer.video(video.value, author: author?.value)
        }
    }

    package func suggestion(_ suggestion: Suggestion) -> FeedItem {
        cached(.suggestion(user: suggestion.user.value.id, mutuals: suggestion.mutualCount), stamp: Stamp(revision: suggestion.user.revision, otherRevision: 0))
        {
            ItemRenderer.suggestion(suggestion.user.value, mutualCount: suggestion.mutualCount)
        }
    }

    package func header(_ viewer: Revised<User>) -> FeedItem {
        cached(.header(viewer.value.id), stamp: Stamp(revision: viewer.revision, otherRevision: 0)) {
            ItemRenderer.header(viewer: viewer.value)
        }
    }

    /// `epoch` is the inventory's: every change of any ad moves it.
    package func ad(_ ad: Ad, epoch: Int64) -> FeedItem {
        cached(.ad(ad.id), stamp: Stamp(revision: epoch, otherRevision: 0)) {
            ItemRenderer.ad(ad)
        }
    }

    package func emptyState() -> FeedItem {
        FeedItem.emptyState
    }

    /// The suggestions carousel's header.
    package func suggestionsTitle() -> FeedItem {
        ItemRenderer.suggestionsTitle
    }

    /// The suggestions carousel's footer, counting the users it shows.
    package func seeAll(count: Int) -> FeedItem {
        cached(.seeAll(count: count), stamp: Stamp(revision: 0, otherRevision: 0)) { ItemRenderer.seeAll(count: count) }
    }

    /// An ad section's footer; `epoch` as for ``ad(_:epoch:)``.
    package func sponsored(_ ad: Ad, epoch: Int64) -> FeedItem {
        cached(.sponsored(ad: ad.id), stamp: Stamp(revision: epoch, otherRevision: 0)) { ItemRenderer.sponsored(ad) }
    }
}

/// Turns records into ``FeedItem``s: the data object (written by FeedWire), its version and the
/// item JSON.
package enum ItemRenderer {
    package static func video(_ video: Video, author: User?) -> FeedItem {
        FeedItem(id: "video:\(video.id)", kind: .video, capacity: 400) { $0.videoData(video, author: author) }
    }

    package static func ad(_ ad: Ad) -> FeedItem {
        FeedItem(id: "ad:\(ad.id)", kind: .ad, capacity: 300) { $0.adData(ad) }
    }

    package static func suggestion(_ user: User, mutualCount: Int64) -> FeedItem {
        FeedItem(id: "user:\(user.id)", kind: .user, capacity: 200) {
            $0.suggestionData(user, followerCount: user.followerCount, mutualFollowees: mutualCount)
        }
    }

    package static func header(viewer: User) -> FeedItem {
        FeedItem(id: "header", kind: .header, capacity: 160) { $0.headerData(viewer: viewer) }
    }

    package static let suggestionsTitle = FeedItem(id: "title", kind: .sectionTitle, capacity: 40) { json in
        json.literal("{\"title\":")
        json.string("Suggested for you")
        json.literal("}")
    }

    package static func seeAll(count: Int) -> FeedItem {
        FeedItem(id: "see_all", kind: .seeAll, capacity: 40) { json in
            json.literal("{\"count\":")
            json.int(count)
            json.literal(",\"title\":")
            json.string("See all")
            json.literal("}")
        }
    }

    package static func sponsored(_ ad: Ad) -> FeedItem {
        FeedItem(id: "sponsored", kind: .sponsored, capacity: 80) { json in
            json.literal("{\"advertiser\":")
            json.string(ad.advertiser)
            json.literal(",\"label\":")
            json.string("Sponsored")
            json.literal("}")
        }
    }

}

// The records carry the fields the wire's writers read, under the same names.
extension User: UserResourceFields, WireResource {}
extension Video: VideoResourceFields, WireResource {}
extension Ad: AdResourceFields, WireResource {}
extension Follow: FollowResourceFields, WireResource {}
