import Foundation
import GRDB

// Content writes. Each public method validates its input first (no database access), then runs
// one write transaction that checks references, writes, and bumps the change version. Any error
// rolls the whole transaction back.

extension FeedStore {
    // MARK: - Users

    /// Creates a user.
    ///
    /// - Parameters:
    ///   - handle: unique, `[a-z0-9_]{1,30}`.
    ///   - displayName: 1…60 characters after trimming white space.
    ///   - avatarURL: an `http://` or `https://` URL, or `nil`.
    /// - Returns: the stored user (new id, zero counts, `createdAt` from the clock).
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` for `handle`, `display_name` or
    ///   `avatar_url`; ``FeedStoreError/conflict(field:reason:)`` on `handle` when it is taken;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func createUser(handle: String, displayName: String, avatarURL: String? = nil) throws(FeedStoreError) -> User {
        let handle = try Validate.handle(handle)
        let displayName = try Validate.displayName(displayName)
        var avatar: String?
        if let avatarURL { avatar = try Validate.url(avatarURL, field: "avatar_url") }
        let createdAt = now
        return try write(change: { PendingChange(kind: .userCreated, key: $0.id) }) { db in
            try Self.requireFreeHandle(handle, in: db)
            try db.cachedStatement(
                sql: """
                    INSERT INTO users (handle, display_name, avatar_url, created_at) VALUES (?1, ?2, ?3, ?4)
                    """
            ).execute(arguments: [handle, displayName, avatar, createdAt])
            return User(
                id: db.lastInsertedRowID, handle: handle, displayName: displayName, avatarURL: avatar,
                createdAt: createdAt)
        }
    }

    /// Changes a user's display name and/or avatar; `nil` parameters are left unchanged.
    /// Handles are immutable (they are the public identity of a user).
    ///
    /// - Parameters:
    ///   - id: the user.
    ///   - displayName: the new display name, 1…60 characters.
    ///   - avatarURL: `.some(url)` sets the avatar, `.some(nil)` removes it, `nil` keeps it.
    /// - Returns: the updated user. When both parameters are `nil`, the user unchanged (nothing
    ///   is written and the change version stays).
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` for `display_name` or `avatar_url`;
    ///   ``FeedStoreError/notFound(entity:id:)`` when there is no such user;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func updateUser(id: Int64, displayName: String? = nil, avatarURL: String?? = nil) throws(FeedStoreError) -> User {
        var newDisplayName: String?
        if let displayName { newDisplayName = try Validate.displayName(displayName) }
        var newAvatar: String??
        if let avatarURL {
            if let url = avatarURL {
                newAvatar = .some(try Validate.url(url, field: "avatar_url"))
            } else {
                newAvatar = .some(nil)
            }
        }
        guard newDisplayName != nil || newAvatar != nil else {
            guard let user = try reading({ reader throws(FeedStoreError) in try reader.user(id: id) }) else { throw .notFound(entity: .user, id: String(id)) }
            return user
        }
        return try write(change: { PendingChange(kind: .userUpdated, key: $0.id) }) { db in
            guard var user = try User.fetchOne(db, key: id) else {
                throw FeedStoreError.notFound(entity: .user, id: String(id))
            }
            if let newDisplayName { user.displayName = newDisplayName }
            if let newAvatar { user.avatarURL = newAvatar }
            try db.cachedStatement(sql: "UPDATE users SET display_name = ?2, avatar_url = ?3 WHERE id = ?1")
                .execute(arguments: [id, user.displayName, user.avatarURL])
            return user
        }
    }

    /// Deletes a user with their videos and follows (both directions). Follower and following
    /// counts of the other users are adjusted.
    ///
    /// - Parameter id: the user.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` when there is no such user;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O((1 + v + f) log n) for the user's v videos and f follow edges.
    public func deleteUser(id: Int64) throws(FeedStoreError) {
        try write(change: { _ in PendingChange(kind: .userDeleted, key: id) }) { db in
            try db.cachedStatement(sql: "DELETE FROM users WHERE id = ?1").execute(arguments: [id])
            guard db.changesCount > 0 else { throw FeedStoreError.notFound(entity: .user, id: String(id)) }
        }
    }

    // MARK: - Videos

    /// Creates a video.
    ///
    /// - Parameters:
    ///   - authorID: an existing user.
    ///   - title: 1…200 characters after trimming white space.
    ///   - thumbnailURL: an `http://` or `https://` URL.
    ///   - durationSeconds: 1…36000.
    ///   - likeCount: initial likes, ≥ 0 (default 0).
    ///   - viewCount: initial views, ≥ 0 (default 0).
    /// - Returns: the stored video (new id, `createdAt` = `updatedAt` from the clock).
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` for `title`, `thumbnail_url`,
    ///   `duration_seconds`, `like_count`, `view_count`, or `author_id` when the author does not
    ///   exist; ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func createVideo(
        authorID: Int64, title: String, thumbnailURL: String, durationSeconds: Int64,
        likeCount: Int64 = 0, viewCount: Int64 = 0
    ) throws(FeedStoreError) -> Video {
        let title = try Validate.title(title)
        let thumbnailURL = try Validate.url(thumbnailURL, field: "thumbnail_url")
        let durationSeconds = try Validate.duration(durationSeconds)
        let likeCount = try Validate.count(likeCount, field: "like_count")
        let viewCount = try Validate.count(viewCount, field: "view_count")
        let createdAt = now
        return try write(change: { PendingChange(kind: .videoCreated, key: $0.id) }) { db in
            guard try Self.userExists(authorID, in: db) else {
                throw FeedStoreError.invalid(field: "author_id", reason: "no user with id \(authorID)")
            }
            try db.cachedStatement(
                sql: """
                    INSERT INTO videos (author_id, title, thumbnail_url, duration_seconds, like_count,
                                        view_count, created_at, updated_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
                    """
            ).execute(arguments: [authorID, title, thumbnailURL, durationSeconds, likeCount, viewCount, createdAt])
            return Video(
                id: db.lastInsertedRowID, authorID: authorID, title: title, thumbnailURL: thumbnailURL,
                durationSeconds: durationSeconds, likeCount: likeCount, viewCount: viewCount,
                createdAt: createdAt, updatedAt: createdAt)
        }
    }

    /// Changes some fields of a video; `nil` parameters are left unchanged. Sets `updatedAt` to
    /// the clock's time.
    ///
    /// - Parameters:
    ///   - id: the video.
    ///   - title: 1…200 characters after trimming white space.
    ///   - thumbnailURL: an `http://` or `https://` URL.
    ///   - durationSeconds: 1…36000.
    ///   - likeCount: ≥ 0.
    ///   - viewCount: ≥ 0.
    /// - Returns: the updated video. When every field is `nil`, the video unchanged (nothing is
    ///   written, `updatedAt` and the change version stay).
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` naming the first invalid field;
    ///   ``FeedStoreError/notFound(entity:id:)`` when there is no such video;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func updateVideo(
        id: Int64, title: String? = nil, thumbnailURL: String? = nil, durationSeconds: Int64? = nil,
        likeCount: Int64? = nil, viewCount: Int64? = nil
    ) throws(FeedStoreError) -> Video {
        var newTitle: String?
        var newThumbnail: String?
        var newDuration: Int64?
        var newLikes: Int64?
        var newViews: Int64?
        if let title { newTitle = try Validate.title(title) }
        if let thumbnailURL { newThumbnail = try Validate.url(thumbnailURL, field: "thumbnail_url") }
        if let durationSeconds { newDuration = try Validate.duration(durationSeconds) }
        if let likeCount { newLikes = try Validate.count(likeCount, field: "like_count") }
        if let viewCount { newViews = try Validate.count(viewCount, field: "view_count") }
        let changesSomething =
            newTitle != nil || newThumbnail != nil || newDuration != nil
            || newLikes != nil || newViews != nil
        guard changesSomething else {
            guard let video = try reading({ reader throws(FeedStoreError) in try reader.video(id: id) }) else {
                throw .notFound(entity: .video, id: String(id))
            }
            return video
        }
        let updatedAt = now
        return try write(change: { PendingChange(kind: .videoUpdated, key: $0.id) }) { db in
            guard var video = try Video.fetchOne(db, key: id) else {
                throw FeedStoreError.notFound(entity: .video, id: String(id))
            }
            if let newTitle { video.title = newTitle }
            if let newThumbnail { video.thumbnailURL = newThumbnail }
            if let newDuration { video.durationSeconds = newDuration }
            if let newLikes { video.likeCount = newLikes }
            if let newViews { video.viewCount = newViews }
            video.updatedAt = max(updatedAt, video.createdAt)
            try Self.storeVideoFields(video, in: db)
            return video
        }
    }

    /// Adds to a video's like and view counts atomically (for "like" and "view" events, without
    /// a read-modify-write race in the caller). Sets `updatedAt` to the clock's time.
    ///
    /// - Parameters:
    ///   - id: the video.
    ///   - likes: added to `likeCount` (negative to remove likes).
    ///   - views: added to `viewCount`.
    /// - Returns: the updated video.
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` on `like_count` or `view_count` when
    ///   the result would be negative or overflow; ``FeedStoreError/notFound(entity:id:)`` when
    ///   there is no such video; ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func addToVideoCounts(id: Int64, likes: Int64 = 0, views: Int64 = 0) throws(FeedStoreError) -> Video {
        let updatedAt = now
        return try write(change: { PendingChange(kind: .videoUpdated, key: $0.id) }) { db in
            guard var video = try Video.fetchOne(db, key: id) else {
                throw FeedStoreError.notFound(entity: .video, id: String(id))
            }
            let (likeCount, likeOverflow) = video.likeCount.addingReportingOverflow(likes)
            let (viewCount, viewOverflow) = video.viewCount.addingReportingOverflow(views)
            guard !likeOverflow, likeCount >= 0 else {
                throw FeedStoreError.invalid(field: "like_count", reason: "must stay between 0 and \(Int64.max)")
            }
            guard !viewOverflow, viewCount >= 0 else {
                throw FeedStoreError.invalid(field: "view_count", reason: "must stay between 0 and \(Int64.max)")
            }
            video.likeCount = likeCount
            video.viewCount = viewCount
            video.updatedAt = max(updatedAt, video.createdAt)
            try Self.storeVideoFields(video, in: db)
            return video
        }
    }

    /// Deletes a video.
    ///
    /// - Parameter id: the video.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` when there is no such video;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    public func deleteVideo(id: Int64) throws(FeedStoreError) {
        try write(change: { _ in PendingChange(kind: .videoDeleted, key: id) }) { db in
            try db.cachedStatement(sql: "DELETE FROM videos WHERE id = ?1").execute(arguments: [id])
            guard db.changesCount > 0 else { throw FeedStoreError.notFound(entity: .video, id: String(id)) }
        }
    }

    // MARK: - Ads

    /// Creates an ad. Bumps the ad epoch and the change version.
    ///
    /// - Parameters:
    ///   - advertiser: 1…100 characters after trimming white space.
    ///   - title: 1…200 characters after trimming white space.
    ///   - imageURL: an `http://` or `https://` URL.
    ///   - targetURL: an `http://` or `https://` URL.
    ///   - weight: 1…1000.
    ///   - active: whether the ad may be shown (default `true`).
    /// - Returns: the stored ad.
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` for `advertiser`, `title`,
    ///   `image_url`, `target_url` or `weight`; ``FeedStoreError/storage(code:message:)`` on
    ///   SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func createAd(
        advertiser: String, title: String, imageURL: String, targetURL: String, weight: Int64,
        active: Bool = true
    ) throws(FeedStoreError) -> Ad {
        let advertiser = try Validate.advertiser(advertiser)
        let title = try Validate.title(title)
        let imageURL = try Validate.url(imageURL, field: "image_url")
        let targetURL = try Validate.url(targetURL, field: "target_url")
        let weight = try Validate.weight(weight)
        let updatedAt = now
        return try write(touchesAds: true, change: { PendingChange(kind: .adChanged, key: $0.id) }) { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO ads (advertiser, title, image_url, target_url, weight, active, updated_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                    """
            ).execute(arguments: [advertiser, title, imageURL, targetURL, weight, active, updatedAt])
            return Ad(
                id: db.lastInsertedRowID, advertiser: advertiser, title: title, imageURL: imageURL,
                targetURL: targetURL, weight: weight, active: active, updatedAt: updatedAt)
        }
    }

    /// Changes some fields of an ad; `nil` parameters are left unchanged. Sets `updatedAt` to
    /// the clock's time and bumps the ad epoch and the change version.
    ///
    /// - Parameters:
    ///   - id: the ad.
    ///   - advertiser: 1…100 characters.
    ///   - title: 1…200 characters.
    ///   - imageURL: an `http://` or `https://` URL.
    ///   - targetURL: an `http://` or `https://` URL.
    ///   - weight: 1…1000.
    ///   - active: whether the ad may be shown.
    /// - Returns: the updated ad. When every field is `nil`, the ad unchanged (nothing written).
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` naming the first invalid field;
    ///   ``FeedStoreError/notFound(entity:id:)`` when there is no such ad;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func updateAd(
        id: Int64, advertiser: String? = nil, title: String? = nil, imageURL: String? = nil,
        targetURL: String? = nil, weight: Int64? = nil, active: Bool? = nil
    ) throws(FeedStoreError) -> Ad {
        var newAdvertiser: String?
        var newTitle: String?
        var newImage: String?
        var newTarget: String?
        var newWeight: Int64?
        if let advertiser { newAdvertiser = try Validate.advertiser(advertiser) }
        if let title { newTitle = try Validate.title(title) }
        if let imageURL { newImage = try Validate.url(imageURL, field: "image_url") }
        if let targetURL { newTarget = try Validate.url(targetURL, field: "target_url") }
        if let weight { newWeight = try Validate.weight(weight) }
        let changesSomething =
            newAdvertiser != nil || newTitle != nil || newImage != nil
            || newTarget != nil || newWeight != nil || active != nil
        guard changesSomething else {
            guard let ad = try reading({ reader throws(FeedStoreError) in try reader.ad(id: id) }) else { throw .notFound(entity: .ad, id: String(id)) }
            return ad
        }
        let updatedAt = now
        return try write(touchesAds: true, change: { PendingChange(kind: .adChanged, key: $0.id) }) { db in
            guard var ad = try Ad.fetchOne(db, key: id) else {
                throw FeedStoreError.notFound(entity: .ad, id: String(id))
            }
            if let newAdvertiser { ad.advertiser = newAdvertiser }
            if let newTitle { ad.title = newTitle }
            if let newImage { ad.imageURL = newImage }
            if let newTarget { ad.targetURL = newTarget }
            if let newWeight { ad.weight = newWeight }
            if let active { ad.active = active }
            ad.updatedAt = updatedAt
            try db.cachedStatement(
                sql: """
                    UPDATE ads SET advertiser = ?2, title = ?3, image_url = ?4, target_url = ?5, weight = ?6,
                                   active = ?7, updated_at = ?8
                    WHERE id = ?1
                    """
            ).execute(arguments: [
                id, ad.advertiser, ad.title, ad.imageURL, ad.targetURL, ad.weight, ad.active, ad.updatedAt,
            ])
            return ad
        }
    }

    /// Deletes an ad. Bumps the ad epoch and the change version.
    ///
    /// - Parameter id: the ad.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` when there is no such ad;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    public func deleteAd(id: Int64) throws(FeedStoreError) {
        try write(touchesAds: true, change: { _ in PendingChange(kind: .adChanged, key: id) }) { db in
            try db.cachedStatement(sql: "DELETE FROM ads WHERE id = ?1").execute(arguments: [id])
            guard db.changesCount > 0 else { throw FeedStoreError.notFound(entity: .ad, id: String(id)) }
        }
    }

    // MARK: - Follows

    /// Makes `follower` follow `followee`. Both users' counts are adjusted.
    ///
    /// - Parameters:
    ///   - follower: the user who follows.
    ///   - followee: the user to follow; not `follower`.
    /// - Returns: the stored follow.
    /// - Throws: ``FeedStoreError/invalid(field:reason:)`` on `followee_id` for a self-follow;
    ///   ``FeedStoreError/notFound(entity:id:)`` (`.user`) when either user does not exist;
    ///   ``FeedStoreError/conflict(field:reason:)`` on `followee_id` when already following;
    ///   ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func follow(follower: Int64, followee: Int64) throws(FeedStoreError) -> Follow {
        guard follower != followee else {
            throw .invalid(field: "followee_id", reason: "a user cannot follow themselves")
        }
        let createdAt = now
        return try write(change: { _ in PendingChange(kind: .followed, key: follower, otherKey: followee) }) { db in
            for id in [follower, followee] {
                guard try Self.userExists(id, in: db) else {
                    throw FeedStoreError.notFound(entity: .user, id: String(id))
                }
            }
            try db.cachedStatement(
                sql: """
                    INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?1, ?2, ?3)
                    ON CONFLICT DO NOTHING
                    """
            ).execute(arguments: [follower, followee, createdAt])
            guard db.changesCount > 0 else {
                throw FeedStoreError.conflict(
                    field: "followee_id", reason: "user \(follower) already follows user \(followee)")
            }
            return Follow(followerID: follower, followeeID: followee, createdAt: createdAt)
        }
    }

    /// Makes `follower` stop following `followee`. Both users' counts are adjusted.
    ///
    /// - Parameters:
    ///   - follower: the user who follows.
    ///   - followee: the user followed.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` (`.follow`, id `"follower->followee"`)
    ///   when `follower` does not follow `followee`; ``FeedStoreError/storage(code:message:)`` on
    ///   SQLite failure.
    /// - Complexity: O(log n).
    public func unfollow(follower: Int64, followee: Int64) throws(FeedStoreError) {
        try write(change: { _ in PendingChange(kind: .unfollowed, key: follower, otherKey: followee) }) { db in
            try db.cachedStatement(sql: "DELETE FROM follows WHERE follower_id = ?1 AND followee_id = ?2")
                .execute(arguments: [follower, followee])
            guard db.changesCount > 0 else {
                throw FeedStoreError.notFound(entity: .follow, id: "\(follower)->\(followee)")
            }
        }
    }

    // MARK: - Helpers

    static func userExists(_ id: Int64, in db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?1)"), arguments: [id]) ?? false
    }

    static func requireFreeHandle(_ handle: String, in db: Database) throws {
        let taken =
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM users WHERE handle = ?1)"),
                arguments: [handle]) ?? false
        if taken {
            throw FeedStoreError.conflict(field: "handle", reason: "handle \(handle) is already taken")
        }
    }

    static func storeVideoFields(_ video: Video, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE videos SET title = ?2, thumbnail_url = ?3, duration_seconds = ?4, like_count = ?5,
                                  view_count = ?6, updated_at = ?7
                WHERE id = ?1
                """
        ).execute(arguments: [
            video.id, video.title, video.thumbnailURL, video.durationSeconds, video.likeCount,
            video.viewCount, video.updatedAt,
        ])
    }
}
