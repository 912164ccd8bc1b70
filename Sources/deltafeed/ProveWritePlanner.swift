import DeltaFeedClient
import Deterministic
import Foundation

/// Draws writes from what a viewer's feed shows, so most of them change some feed.
struct ProveWritePlanner {
    private var random: SplitMix64
    private var counter = 0

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    static func videos(in document: FeedDocument?) -> [Int64] {
        (document?.sections ?? []).flatMap(\.items).compactMap { $0.kind == "video" ? $0.data["video"]?["id"]?.int64Value : nil }
    }

    mutating func next(viewer: Int64, feed: FeedDocument) -> ProveWrite? {
        counter += 1
        let videos = Self.videos(in: feed)
        let grids = feed.sections.filter { $0.kind.hasPrefix("video_grid") }
        let recentAuthors = grids.first?.items.compactMap { $0.data["author"]?["id"]?.int64Value } ?? []
        let suggested = feed.sections.filter { $0.kind == "follow_suggestions" }.flatMap(\.items).compactMap { $0.data["user"]?["id"]?.int64Value }
        let ads = feed.sections.flatMap(\.items).compactMap { $0.kind == "ad" ? $0.data["id"]?.int64Value ?? $0.data["ad"]?["id"]?.int64Value : nil }
        var kinds: [(String, UInt64)] = [("user", 4)]
        if !videos.isEmpty { kinds += [("like", 30), ("title", 20)] }
        if !recentAuthors.isEmpty { kinds += [("video", 14), ("unfollow", 8)] }
        if !suggested.isEmpty { kinds.append(("follow", 10)) }
        if !ads.isEmpty { kinds.append(("ad", 10)) }
        var pick = random.next(below: kinds.reduce(0) { $0 + $1.1 })
        var kind = kinds[0].0
        for (name, weight) in kinds {
            if pick < weight {
                kind = name
                break
            }
            pick -= weight
        }
        let tag = "\(counter)-\(random.next(below: 1 << 20))"
        switch kind {
        case "like":
            let video = videos[choose(videos.count)]
            let likes = Int64(random.next(below: 1_000_000))
            return ProveWrite(kind: "like", method: "PATCH", path: "/v1/videos/\(video)", body: ["like_count": .int(likes)], record: .video(video))
        case "title":
            let video = videos[choose(videos.count)]
            return ProveWrite(
                kind: "title edit", method: "PATCH", path: "/v1/videos/\(video)", body: ["title": .string("Proof title \(tag) ✓")], record: .video(video))
        case "video":
            let author = recentAuthors[choose(recentAuthors.count)]
            let body: [String: JSONValue] = [
                "author_id": .int(author), "title": .string("Proof video \(tag)"), "thumbnail_url": .string("https://cdn.example/proof/\(tag).jpg"),
                "duration_seconds": .int(Int64(5 + random.next(below: 300))), "like_count": .int(Int64(random.next(below: 50_000))),
            ]
            return ProveWrite(kind: "new video", method: "POST", path: "/v1/videos", body: body, record: .none)
        case "unfollow":
            let author = recentAuthors[choose(recentAuthors.count)]
            return ProveWrite(kind: "unfollow", method: "DELETE", path: "/v1/users/\(viewer)/follows/\(author)", body: nil, record: .none)
        case "follow":
            let user = suggested[choose(suggested.count)]
            return ProveWrite(kind: "follow", method: "PUT", path: "/v1/users/\(viewer)/follows/\(user)", body: nil, record: .none)
        case "ad":
            let ad = ads[choose(ads.count)]
            let body: [String: JSONValue] =
                random.next(below: 2) == 0 ? ["title": .string("Proof ad \(tag)")] : ["weight": .int(Int64(1 + random.next(below: 1000)))]
            return ProveWrite(kind: "ad edit", method: "PATCH", path: "/v1/ads/\(ad)", body: body, record: .none)
        default:
            let body: [String: JSONValue] = ["handle": .string("proof_\(tag.replacingOccurrences(of: "-", with: "_"))"), "display_name": "Proof Person"]
            return ProveWrite(kind: "new user", method: "POST", path: "/v1/users", body: body, record: .none)
        }
    }

    private mutating func choose(_ count: Int) -> Int {
        Int(random.next(below: UInt64(count)))
    }
}
