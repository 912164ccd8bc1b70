import EventHTTP
import FeedIndex
import FeedService
import FeedStore
import FeedWire
import JSONBytes

/// The write side: users, videos, ads and follows. Every write route needs
/// `Authorization: Bearer <admin token>`; without a configured token, writes are refused.
///
/// The token and the body are checked on the event loop; the write is then queued for the
/// group commit (``FeedService/GroupCommit``), which commits it with the writes queued beside
/// it, each in a savepoint of its own, and applies the group to the feed index before any
/// answer goes out, so the writer's next read shows it. Reads of single records come from the
/// index; a user's profile is guarded like their feed (``ViewerAuthorization``), as it shows
/// whom they follow.
struct AdminRoutes {
    let service: FeedService
    let admin: AdminAuthorization
    let viewers: ViewerAuthorization
    let commits: GroupCommit

    func register(in router: inout Router) {
        let service = self.service
        let commits = self.commits
        let admin = self.admin
        let viewers = self.viewers
        /// Registers a write route. On the event loop, the admin token is checked and the body
        /// (when `fields` is given) read as a JSON object holding only those members; `prepare`
        /// reads the rest of the request into a write, which is committed in a group, applied
        /// to the index and answered with `respond(value)`. A full queue answers 503 `overloaded`.
        /// Likes, follows, new videos and video edits are staged: their statements travel with
        /// their neighbours' in one round trip on PostgreSQL.
        func write<T: Sendable>(
            _ method: HTTPMethod, _ path: String, fields: Set<String>? = nil,
            respond: @escaping @Sendable (T) throws -> HTTPResponse,
            _ prepare: @escaping @Sendable (HTTPRequest, JSONObjectBody) throws -> GroupWrite<T>
        ) {
            router.add(method, path) { request in
                try admin.check(request)
                let body = try fields.map { try JSONObjectBody(request.body, allowed: $0) } ?? .empty
                let write = try prepare(request, body)
                return .later(from: "writes") { responder in
                    commits.submit(write) { result in
                        responder.respond { try respond(try translatingErrors { try result.get() }) }
                    }
                }
            }
        }

        write(.post, "/v1/users", fields: ["handle", "display_name", "avatar_url"], respond: AdminRoutes.created) { _, body in
            let (handle, displayName, avatarURL) = (try body.requiredString("handle"), try body.requiredString("display_name"), try body.string("avatar_url"))
            return .run { store throws(FeedStoreError) in try store.createUser(handle: handle, displayName: displayName, avatarURL: avatarURL) }
        }
        router.get("/v1/users/{id}") { request in
            let id = try request.id("id")
            try viewers.check(request, viewer: id)
            guard let user = service.index.read({ $0.user(id)?.value }) else { throw HTTPError.notFound("No user with id \(id).") }
            return AdminRoutes.ok(user)
        }
        write(.put, "/v1/users/{id}/follows/{followee}", respond: AdminRoutes.created) { request, _ in
            let (follower, followee) = (try request.id("id"), try request.id("followee"))
            return .staged { store throws(FeedStoreError) in try store.stageFollow(follower: follower, followee: followee) }
        }
        write(.delete, "/v1/users/{id}/follows/{followee}", respond: AdminRoutes.noContent) { request, _ in
            let (follower, followee) = (try request.id("id"), try request.id("followee"))
            return .staged { store throws(FeedStoreError) in store.stageUnfollow(follower: follower, followee: followee) }
        }

        let videoFields: Set<String> = ["author_id", "title", "thumbnail_url", "duration_seconds", "like_count", "view_count"]
        write(.post, "/v1/videos", fields: videoFields, respond: AdminRoutes.created) { _, body in
            let (authorID, title, thumbnailURL, duration) = (
                try body.requiredInt("author_id"), try body.requiredString("title"),
                try body.requiredString("thumbnail_url"), try body.requiredInt("duration_seconds")
            )
            let (likes, views) = (try body.int("like_count") ?? 0, try body.int("view_count") ?? 0)
            return .staged { store throws(FeedStoreError) in
                try store.stageVideo(
                    authorID: authorID, title: title, thumbnailURL: thumbnailURL, durationSeconds: duration, likeCount: likes, viewCount: views)
            }
        }
        router.get("/v1/videos/{id}") { request in
            let id = try request.id("id")
            guard let video = service.index.read({ $0.video(id)?.value }) else { throw HTTPError.notFound("No video with id \(id).") }
            return AdminRoutes.ok(video)
        }
        write(.patch, "/v1/videos/{id}", fields: videoFields.subtracting(["author_id"]), respond: AdminRoutes.ok) { request, body in
            let id = try request.id("id")
            let (title, thumbnailURL, duration) = (try body.string("title"), try body.string("thumbnail_url"), try body.int("duration_seconds"))
            let (likes, views) = (try body.int("like_count"), try body.int("view_count"))
            guard title != nil || thumbnailURL != nil || duration != nil || likes != nil || views != nil else {
                return .run { store throws(FeedStoreError) in try store.updateVideo(id: id) }  // changes nothing: a read
            }
            return .staged { store throws(FeedStoreError) in
                try store.stageVideoUpdate(id: id, title: title, thumbnailURL: thumbnailURL, durationSeconds: duration, likeCount: likes, viewCount: views)
            }
        }
        // Likes count once per user (the like is a row): a retried PUT is refused with 409, not
        // counted twice, and concurrent likes of one video all count.
        write(.put, "/v1/videos/{id}/likes/{user}", respond: AdminRoutes.created) { request, _ in
            let (video, user) = (try request.id("id"), try request.id("user"))
            return .staged { store throws(FeedStoreError) in store.stageLike(video: video, by: user) }
        }
        write(.delete, "/v1/videos/{id}/likes/{user}", respond: AdminRoutes.ok) { request, _ in
            let (video, user) = (try request.id("id"), try request.id("user"))
            return .staged { store throws(FeedStoreError) in store.stageUnlike(video: video, by: user) }
        }
        write(.delete, "/v1/videos/{id}", respond: AdminRoutes.noContent) { request, _ in
            let id = try request.id("id")
            return .run { store throws(FeedStoreError) in try store.deleteVideo(id: id) }
        }

        let adFields: Set<String> = ["advertiser", "title", "image_url", "target_url", "weight", "active"]
        write(.post, "/v1/ads", fields: adFields, respond: AdminRoutes.created) { _, body in
            let (advertiser, title, imageURL, targetURL) = (
                try body.requiredString("advertiser"), try body.requiredString("title"),
                try body.requiredString("image_url"), try body.requiredString("target_url")
            )
            let (weight, active) = (try body.int("weight") ?? 100, try body.bool("active") ?? true)
            return .run { store throws(FeedStoreError) in
                try store.createAd(advertiser: advertiser, title: title, imageURL: imageURL, targetURL: targetURL, weight: weight, active: active)
            }
        }
        write(.patch, "/v1/ads/{id}", fields: adFields, respond: AdminRoutes.ok) { request, body in
            let id = try request.id("id")
            let (advertiser, title, imageURL, targetURL) = (
                try body.string("advertiser"), try body.string("title"), try body.string("image_url"), try body.string("target_url")
            )
            let (weight, active) = (try body.int("weight"), try body.bool("active"))
            return .run { store throws(FeedStoreError) in
                try store.updateAd(
                    id: id, advertiser: advertiser, title: title, imageURL: imageURL, targetURL: targetURL, weight: weight, active: active)
            }
        }
        write(.delete, "/v1/ads/{id}", respond: AdminRoutes.noContent) { request, _ in
            let id = try request.id("id")
            return .run { store throws(FeedStoreError) in try store.deleteAd(id: id) }
        }
    }

    static func ok(_ value: some WireResource) -> HTTPResponse {
        .json(value.resourceDocument)
    }

    static func created(_ value: some WireResource) -> HTTPResponse {
        .json(value.resourceDocument, status: 201)
    }

    static func noContent(_: some Sendable) -> HTTPResponse {
        .empty(status: 204)
    }
}
