import EventHTTP
import FeedService
import FeedStore
import FeedWire
import JSONBytes

/// The write side: users, videos, ads and follows. Every write route needs
/// `Authorization: Bearer <admin token>`; without a configured token, writes are refused.
///
/// The token and the body are checked on the event loop; the transaction runs on the `writes`
/// pool (one thread: SQLite has one writer), which also applies it to the feed index before the
/// answer goes out, so the writer's next read shows it. Reads of single records come from the
/// index; a user's profile is guarded like their feed (``ViewerAuthorization``), as it shows
/// whom they follow.
struct AdminRoutes {
    let service: FeedService
    let admin: AdminAuthorization
    let viewers: ViewerAuthorization
    let writes: BlockingPool

    func register(in router: inout Router) {
        let service = self.service
        let writes = self.writes
        let guardToken = admin
        let viewers = self.viewers
        /// Answers with `respond(value)` once `body` committed and the index applied it.
        @Sendable func committing<T: Sendable>(
            _ respond: @escaping @Sendable (T) throws -> HTTPResponse,
            _ body: @escaping @Sendable (any FeedStorage) throws(FeedStoreError) -> T
        ) -> HTTPResponse {
            .deferred(to: writes) {
                let value = try translatingErrors { try service.write(body) }
                return try respond(value)
            }
        }

        router.post("/v1/users") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: ["handle", "display_name", "avatar_url"])
            let (handle, displayName, avatarURL) = (try body.requiredString("handle"), try body.requiredString("display_name"), try body.string("avatar_url"))
            return committing(AdminRoutes.created) { store throws(FeedStoreError) in
                try store.createUser(handle: handle, displayName: displayName, avatarURL: avatarURL)
            }
        }
        router.get("/v1/users/{id}") { request in
            let id = try request.id("id")
            try viewers.check(request, viewer: id)
            guard let user = service.index.read({ $0.user(id)?.value }) else { throw HTTPError.notFound("No user with id \(id).") }
            return AdminRoutes.ok(user)
        }
        router.put("/v1/users/{id}/follows/{followee}") { request in
            try guardToken.check(request)
            let (follower, followee) = (try request.id("id"), try request.id("followee"))
            return committing(AdminRoutes.created) { store throws(FeedStoreError) in
                try store.follow(follower: follower, followee: followee)
            }
        }
        router.delete("/v1/users/{id}/follows/{followee}") { request in
            try guardToken.check(request)
            let (follower, followee) = (try request.id("id"), try request.id("followee"))
            return committing({ _ in .empty(status: 204) }) { store throws(FeedStoreError) in
                try store.unfollow(follower: follower, followee: followee)
            }
        }

        let videoFields: Set<String> = ["author_id", "title", "thumbnail_url", "duration_seconds", "like_count", "view_count"]
        router.post("/v1/videos") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: videoFields)
            let (authorID, title, thumbnailURL, duration) = (
                try body.requiredInt("author_id"), try body.requiredString("title"),
                try body.requiredString("thumbnail_url"), try body.requiredInt("duration_seconds")
            )
            let (likes, views) = (try body.int("like_count") ?? 0, try body.int("view_count") ?? 0)
            return committing(AdminRoutes.created) { store throws(FeedStoreError) in
                try store.createVideo(
                    authorID: authorID, title: title, thumbnailURL: thumbnailURL, durationSeconds: duration,
                    likeCount: likes, viewCount: views)
            }
        }
        router.get("/v1/videos/{id}") { request in
            let id = try request.id("id")
            guard let video = service.index.read({ $0.video(id)?.value }) else { throw HTTPError.notFound("No video with id \(id).") }
            return AdminRoutes.ok(video)
        }
        router.patch("/v1/videos/{id}") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: videoFields.subtracting(["author_id"]))
            let id = try request.id("id")
            let (title, thumbnailURL, duration) = (try body.string("title"), try body.string("thumbnail_url"), try body.int("duration_seconds"))
            let (likes, views) = (try body.int("like_count"), try body.int("view_count"))
            return committing(AdminRoutes.ok) { store throws(FeedStoreError) in
                try store.updateVideo(
                    id: id, title: title, thumbnailURL: thumbnailURL, durationSeconds: duration, likeCount: likes, viewCount: views)
            }
        }
        router.delete("/v1/videos/{id}") { request in
            try guardToken.check(request)
            let id = try request.id("id")
            return committing({ _ in .empty(status: 204) }) { store throws(FeedStoreError) in try store.deleteVideo(id: id) }
        }

        let adFields: Set<String> = ["advertiser", "title", "image_url", "target_url", "weight", "active"]
        router.post("/v1/ads") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: adFields)
            let (advertiser, title, imageURL, targetURL) = (
                try body.requiredString("advertiser"), try body.requiredString("title"),
                try body.requiredString("image_url"), try body.requiredString("target_url")
            )
            let (weight, active) = (try body.int("weight") ?? 100, try body.bool("active") ?? true)
            return committing(AdminRoutes.created) { store throws(FeedStoreError) in
                try store.createAd(
                    advertiser: advertiser, title: title, imageURL: imageURL, targetURL: targetURL, weight: weight, active: active)
            }
        }
        router.patch("/v1/ads/{id}") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: adFields)
            let id = try request.id("id")
            let (advertiser, title, imageURL, targetURL) = (
                try body.string("advertiser"), try body.string("title"), try body.string("image_url"), try body.string("target_url")
            )
            let (weight, active) = (try body.int("weight"), try body.bool("active"))
            return committing(AdminRoutes.ok) { store throws(FeedStoreError) in
                try store.updateAd(
                    id: id, advertiser: advertiser, title: title, imageURL: imageURL, targetURL: targetURL, weight: weight,
                    active: active)
            }
        }
        router.delete("/v1/ads/{id}") { request in
            try guardToken.check(request)
            let id = try request.id("id")
            return committing({ _ in .empty(status: 204) }) { store throws(FeedStoreError) in try store.deleteAd(id: id) }
        }
    }

    static func ok(_ value: some WireResource) -> HTTPResponse {
        .json(value.resourceDocument)
    }

    static func created(_ value: some WireResource) -> HTTPResponse {
        .json(value.resourceDocument, status: 201)
    }
}
