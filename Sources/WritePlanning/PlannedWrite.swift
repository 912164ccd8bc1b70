public import JSONBytes

/// The kinds of content writes the planner draws. Each needs something to draw from
/// (``WriteOptions``); a kind whose options are empty is not drawn.
public enum WriteKind: String, CaseIterable, Sendable, Hashable, Comparable {
    /// Sets a video's like count (and sometimes its view count).
    case like
    /// Adds a few likes to a video, as they arrive (the store's increment; the API has no route).
    case likeIncrement
    /// Gives a video a new title.
    case title
    /// Changes a video's duration and thumbnail.
    case videoDetails
    /// A new video by one of ``WriteOptions/authors``.
    case newVideo
    /// A new video with many likes by one of ``WriteOptions/otherAuthors`` (it enters popular lists).
    case newPopularVideo
    /// Deletes a video.
    case deleteVideo
    /// The follower follows one of ``WriteOptions/followable``.
    case follow
    /// The follower unfollows one of ``WriteOptions/followees``.
    case unfollow
    /// Someone's follow of someone else flips: the caller, who knows the graph, follows or unfollows.
    case toggleFollow
    /// A new user.
    case newUser
    /// A user's new display name (the store's update; the API has no route).
    case renameUser
    /// Deletes a user with their videos and follows (the store's; the API has no route).
    case deleteUser
    /// A new ad.
    case newAd
    /// Changes an ad: its title, weight, or whether it is active.
    case editAd
    /// Deletes an ad (never the last one).
    case deleteAd

    public static func < (lhs: WriteKind, rhs: WriteKind) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A new video's fields.
public struct NewVideo: Equatable, Sendable {
    public var authorID: Int64
    public var title: String
    public var thumbnailURL: String
    public var durationSeconds: Int64
    public var likeCount: Int64
    public var viewCount: Int64?
}

/// A new ad's fields.
public struct NewAd: Equatable, Sendable {
    public var advertiser: String
    public var title: String
    public var imageURL: String
    public var targetURL: String
    public var weight: Int64
}

/// What changes in an ad.
public enum AdEdit: Equatable, Sendable {
    case title(String)
    case weight(Int64)
    case active(Bool)
    /// Turns it on under another advertiser.
    case reactivate(advertiser: String)
}

/// One write the planner chose, with every value it needs; the caller carries it out (through
/// the API with ``request``, or on a store directly).
public enum PlannedWrite: Equatable, Sendable {
    case setLikes(video: Int64, likes: Int64, views: Int64?)
    case addLikes(video: Int64, likes: Int64)
    case retitle(video: Int64, title: String)
    case changeDetails(video: Int64, durationSeconds: Int64, thumbnailURL: String)
    case createVideo(NewVideo)
    case deleteVideo(Int64)
    case follow(follower: Int64, followee: Int64)
    case unfollow(follower: Int64, followee: Int64)
    case toggleFollow(follower: Int64, followee: Int64)
    case createUser(handle: String, displayName: String)
    case renameUser(Int64, displayName: String)
    case deleteUser(Int64)
    case createAd(NewAd)
    case editAd(Int64, AdEdit)
    case deleteAd(Int64)

    /// The request that makes this write through the HTTP API: method, path and JSON body. Nil
    /// for writes the API has no route for (``WriteKind/likeIncrement``, ``WriteKind/renameUser``,
    /// ``WriteKind/deleteUser``) and for ``toggleFollow(follower:followee:)``, which the caller
    /// first resolves into a follow or an unfollow.
    public var request: (method: String, path: String, body: JSONValue?)? {
        switch self {
        case .setLikes(let video, let likes, let views):
            var body: [String: JSONValue] = ["like_count": .int(likes)]
            if let views { body["view_count"] = .int(views) }
            return ("PATCH", "/v1/videos/\(video)", .object(body))
        case .retitle(let video, let title):
            return ("PATCH", "/v1/videos/\(video)", ["title": .string(title)])
        case .changeDetails(let video, let duration, let thumbnail):
            return ("PATCH", "/v1/videos/\(video)", ["duration_seconds": .int(duration), "thumbnail_url": .string(thumbnail)])
        case .createVideo(let video):
            var body: [String: JSONValue] = [
                "author_id": .int(video.authorID), "title": .string(video.title), "thumbnail_url": .string(video.thumbnailURL),
                "duration_seconds": .int(video.durationSeconds), "like_count": .int(video.likeCount),
            ]
            if let views = video.viewCount { body["view_count"] = .int(views) }
            return ("POST", "/v1/videos", .object(body))
        case .deleteVideo(let video):
            return ("DELETE", "/v1/videos/\(video)", nil)
        case .follow(let follower, let followee):
            return ("PUT", "/v1/users/\(follower)/follows/\(followee)", nil)
        case .unfollow(let follower, let followee):
            return ("DELETE", "/v1/users/\(follower)/follows/\(followee)", nil)
        case .createUser(let handle, let displayName):
            return ("POST", "/v1/users", ["handle": .string(handle), "display_name": .string(displayName)])
        case .createAd(let ad):
            return (
                "POST", "/v1/ads",
                [
                    "advertiser": .string(ad.advertiser), "title": .string(ad.title), "image_url": .string(ad.imageURL),
                    "target_url": .string(ad.targetURL), "weight": .int(ad.weight),
                ]
            )
        case .editAd(let ad, let edit):
            let body: JSONValue =
                switch edit {
                case .title(let title): ["title": .string(title)]
                case .weight(let weight): ["weight": .int(weight)]
                case .active(let active): ["active": .bool(active)]
                case .reactivate(let advertiser): ["active": true, "advertiser": .string(advertiser)]
                }
            return ("PATCH", "/v1/ads/\(ad)", body)
        case .deleteAd(let ad):
            return ("DELETE", "/v1/ads/\(ad)", nil)
        case .addLikes, .toggleFollow, .renameUser, .deleteUser:
            return nil
        }
    }
}
