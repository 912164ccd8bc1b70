import DeltaFeedClient
import WritePlanning

extension ProveWrite {
    /// A planned write as the proof sends it and its ledger remembers it: nil for writes the API
    /// has no route for (prove's mix has none).
    init?(_ planned: PlannedWrite) {
        guard let request = planned.request else { return nil }
        var body: [String: JSONValue]?
        if case .object(let members)? = request.body { body = members }
        let (kind, record): (String, Record) =
            switch planned {
            case .setLikes(let video, _, _): ("like", .video(video))
            case .retitle(let video, _): ("title edit", .video(video))
            case .changeDetails(let video, _, _): ("video details", .video(video))
            case .createVideo: ("new video", .none)
            case .deleteVideo: ("deleted video", .none)
            case .follow: ("follow", .none)
            case .unfollow: ("unfollow", .none)
            case .createUser: ("new user", .none)
            case .createAd: ("new ad", .none)
            case .editAd: ("ad edit", .none)
            case .deleteAd: ("deleted ad", .none)
            case .addLikes, .toggleFollow, .renameUser, .deleteUser: ("unsent", .none)
            }
        self.init(kind: kind, method: request.method, path: request.path, body: body, record: record)
    }
}

extension FeedDocument {
    /// The ids of the videos the page shows.
    var videoIDs: [Int64] {
        sections.flatMap(\.items).compactMap { $0.kind == "video" ? $0.data["video"]?["id"]?.int64Value : nil }
    }
}
