import EventHTTP
import FeedStore
import Foundation

/// The write side: users, videos, ads and follows. Every route needs
/// `Authorization: Bearer <admin token>`; without a configured token, writes are refused.
struct AdminRoutes {
    let store: FeedStore
    let adminToken: String?

    func register(in router: inout Router) {
        let store = self.store
        let guardToken = AdminAuthorization(token: adminToken)

        router.post("/v1/users") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: ["handle", "display_name", "avatar_url"])
            let user = try translatingErrors {
                try store.createUser(handle: try body.requiredString("handle"), displayName: try body.requiredString("display_name"), avatarURL: try body.string("avatar_url"))
            }
            return try AdminRoutes.created(user)
        }
        router.get("/v1/users/{id}") { request in
            let id = try request.id("id")
            guard let user = try translatingErrors({ try store.user(id: id) }) else { throw HTTPError.notFound("No user with id \(id).") }
            return try AdminRoutes.ok(user)
        }
        router.put("/v1/users/{id}/follows/{followee}") { request in
            try guardToken.check(request)
            let follow = try translatingErrors { try store.follow(follower: try request.id("id"), followee: try request.id("followee")) }
            return try AdminRoutes.created(follow)
        }
        router.delete("/v1/users/{id}/follows/{followee}") { request in
            try guardToken.check(request)
            try translatingErrors { try store.unfollow(follower: try request.id("id"), followee: try request.id("followee")) }
            return .empty(status: 204)
        }

        let videoFields: Set<String> = ["author_id", "title", "thumbnail_url", "duration_seconds", "like_count", "view_count"]
        router.post("/v1/videos") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: videoFields)
            let video = try translatingErrors {
                try store.createVideo(
                    authorID: try body.requiredInt("author_id"), title: try body.requiredString("title"),
                    thumbnailURL: try body.requiredString("thumbnail_url"), durationSeconds: try body.requiredInt("duration_seconds"),
                    likeCount: try body.int("like_count") ?? 0, viewCount: try body.int("view_count") ?? 0)
            }
            return try AdminRoutes.created(video)
        }
        router.get("/v1/videos/{id}") { request in
            let id = try request.id("id")
            guard let video = try translatingErrors({ try store.video(id: id) }) else { throw HTTPError.notFound("No video with id \(id).") }
            return try AdminRoutes.ok(video)
        }
        router.patch("/v1/videos/{id}") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: videoFields.subtracting(["author_id"]))
            let video = try translatingErrors {
                try store.updateVideo(
                    id: try request.id("id"), title: try body.string("title"), thumbnailURL: try body.string("thumbnail_url"),
                    durationSeconds: try body.int("duration_seconds"), likeCount: try body.int("like_count"), viewCount: try body.int("view_count"))
            }
            return try AdminRoutes.ok(video)
        }
        router.delete("/v1/videos/{id}") { request in
            try guardToken.check(request)
            try translatingErrors { try store.deleteVideo(id: try request.id("id")) }
            return .empty(status: 204)
        }

        let adFields: Set<String> = ["advertiser", "title", "image_url", "target_url", "weight", "active"]
        router.post("/v1/ads") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: adFields)
            let ad = try translatingErrors {
                try store.createAd(
                    advertiser: try body.requiredString("advertiser"), title: try body.requiredString("title"),
                    imageURL: try body.requiredString("image_url"), targetURL: try body.requiredString("target_url"),
                    weight: try body.int("weight") ?? 100, active: try body.bool("active") ?? true)
            }
            return try AdminRoutes.created(ad)
        }
        router.patch("/v1/ads/{id}") { request in
            try guardToken.check(request)
            let body = try JSONObjectBody(request.body, allowed: adFields)
            let ad = try translatingErrors {
                try store.updateAd(
                    id: try request.id("id"), advertiser: try body.string("advertiser"), title: try body.string("title"),
                    imageURL: try body.string("image_url"), targetURL: try body.string("target_url"),
                    weight: try body.int("weight"), active: try body.bool("active"))
            }
            return try AdminRoutes.ok(ad)
        }
        router.delete("/v1/ads/{id}") { request in
            try guardToken.check(request)
            try translatingErrors { try store.deleteAd(id: try request.id("id")) }
            return .empty(status: 204)
        }
    }

    static func ok(_ value: some Encodable) throws -> HTTPResponse {
        .json(Array(try encoder.encode(value)))
    }

    static func created(_ value: some Encodable) throws -> HTTPResponse {
        .json(Array(try encoder.encode(value)), status: 201)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
