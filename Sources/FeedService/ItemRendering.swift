import FeedStore
import JSONBytes

/// Turns stored records into ``FeedItem``s: the data object, its version and the item JSON.
struct ItemRenderer {
    let layout: Layout?

    func video(_ video: Video, author: User?) -> FeedItem {
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
        return item(id: "video:\(video.id)", kind: "video", data: data.bytes)
    }

    func ad(_ ad: Ad) -> FeedItem {
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
        return item(id: "ad:\(ad.id)", kind: "ad", data: data.bytes)
    }

    func suggestion(_ suggestion: FollowSuggestion) -> FeedItem {
        var data = JSONWriter(capacity: 200)
        data.raw("{\"user\":")
        writeUser(suggestion.user, to: &data)
        data.raw(",\"follower_count\":")
        data.int(suggestion.user.followerCount)
        data.raw(",\"mutual_followees\":")
        data.int(suggestion.mutualCount)
        data.raw("}")
        return item(id: "user:\(suggestion.user.id)", kind: "user", data: data.bytes)
    }

    func header(viewer: User) -> FeedItem {
        var data = JSONWriter(capacity: 160)
        data.raw("{\"title\":\"For you\",\"viewer\":")
        writeUser(viewer, to: &data)
        data.raw("}")
        return item(id: "header", kind: "header", data: data.bytes)
    }

    func emptyState() -> FeedItem {
        let data = Array(#"{"title":"Nothing here yet","message":"Follow people to fill your feed with their videos."}"#.utf8)
        return item(id: "empty", kind: "empty", data: data)
    }

    private func writeUser(_ user: User, to data: inout JSONWriter) {
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

    /// The item JSON: id, kind, version (a hash of the data), the data, and the size if a width
    /// was given.
    private func item(id: String, kind: String, data: [UInt8]) -> FeedItem {
        var hasher = StableHasher()
        hasher.combine(kind)
        hasher.combine(bytes: data)
        let version = hasher.state
        var json = JSONWriter(capacity: data.count + 96)
        json.raw("{\"id\":")
        json.string(id)
        json.raw(",\"kind\":")
        json.string(kind)
        json.raw(",\"version\":\"")
        json.raw(hex16(version))
        json.raw("\",\"data\":")
        json.raw(bytes: data)
        if let layout {
            let size = layout.size(of: kind)
            json.raw(",\"size\":{\"width\":")
            json.int(size.width)
            json.raw(",\"height\":")
            json.int(size.height)
            json.raw("}")
        }
        json.raw("}")
        return FeedItem(id: id, kind: kind, version: version, json: json.bytes)
    }
}
