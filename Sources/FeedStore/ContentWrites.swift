// Content writes, once for every backend. Each public method validates its input first (no
// storage access), then runs one write transaction (``FeedStorage/write(touchesAds:change:_:)``)
// that checks references, writes, and bumps the change version with its change-log entry. Any
// error rolls the whole transaction back. "Storage failure" below is
// ``FeedStoreError/storage(code:message:)``, or ``FeedStoreError/unavailable(reason:)`` when a
// PostgreSQL server cannot be reached.

extension FeedStorage {
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
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func createUser(handle: String, displayName: String, avatarURL: String? = nil) throws(FeedStoreError) -> User {
        let handle = try Validate.handle(handle)
        let displayName = try Validate.displayName(displayName)
        let avatar = try avatarURL.map { url throws(FeedStoreError) in try Validate.url(url, field: "avatar_url") }
        let user = User(id: 0, handle: handle, displayName: displayName, avatarURL: avatar, createdAt: now)
        return try write(touchesAds: false, change: { PendingChange(kind: .userCreated, key: $0.id) }) { transaction in
            if try transaction.handleTaken(handle) {
                throw FeedStoreError.conflict(field: "handle", reason: "handle \(handle) is already taken")
            }
            var created = user
            created.id = try transaction.insert(user)
            return created
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
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func updateUser(id: Int64, displayName: String? = nil, avatarURL: String?? = nil) throws(FeedStoreError) -> User {
        let newDisplayName = try displayName.map { name throws(FeedStoreError) in try Validate.displayName(name) }
        let newAvatar = try avatarURL.map { url throws(FeedStoreError) in
            try url.map { url throws(FeedStoreError) in try Validate.url(url, field: "avatar_url") }
        }
        return try update(User.self, id: id, kind: .userUpdated, changing: newDisplayName != nil || newAvatar != nil) { user in
            if let newDisplayName { user.displayName = newDisplayName }
            if let newAvatar { user.avatarURL = newAvatar }
        }
    }

    /// Deletes a user with their videos and follows (both directions). Follower and following
    /// counts of the other users are adjusted.
    ///
    /// - Parameter id: the user.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` when there is no such user;
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O((1 + v + f) log n) for the user's v videos and f follow edges.
    public func deleteUser(id: Int64) throws(FeedStoreError) {
        try delete(User.self, id: id, kind: .userDeleted)
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
    ///   exist; ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func createVideo(
        authorID: Int64, title: String, thumbnailURL: String, durationSeconds: Int64,
        likeCount: Int64 = 0, viewCount: Int64 = 0
    ) throws(FeedStoreError) -> Video {
        try perform(
            stageVideo(
                authorID: authorID, title: title, thumbnailURL: thumbnailURL, durationSeconds: durationSeconds, likeCount: likeCount, viewCount: viewCount))
    }

    /// ``createVideo(authorID:title:thumbnailURL:durationSeconds:likeCount:viewCount:)`` staged
    /// (see ``StagedWrite``): validates the fields now, and throws what that throws for them.
    public func stageVideo(
        authorID: Int64, title: String, thumbnailURL: String, durationSeconds: Int64,
        likeCount: Int64 = 0, viewCount: Int64 = 0
    ) throws(FeedStoreError) -> StagedWrite<Video> {
        let title = try Validate.title(title)
        let thumbnailURL = try Validate.url(thumbnailURL, field: "thumbnail_url")
        let durationSeconds = try Validate.duration(durationSeconds)
        let likeCount = try Validate.count(likeCount, field: "like_count")
        let viewCount = try Validate.count(viewCount, field: "view_count")
        let createdAt = now
        let video = Video(
            id: 0, authorID: authorID, title: title, thumbnailURL: thumbnailURL, durationSeconds: durationSeconds,
            likeCount: likeCount, viewCount: viewCount, createdAt: createdAt, updatedAt: createdAt)
        return StagedWrite(step: .insertVideo(video), change: { PendingChange(kind: .videoCreated, key: $0.id) }) { answer throws(FeedStoreError) in
            guard case .videoInserted(let inserted) = answer else { throw .mismatchedAnswer }
            guard let id = inserted else { throw .invalid(field: "author_id", reason: "no user with id \(authorID)") }
            var created = video
            created.id = id
            return created
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
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func updateVideo(
        id: Int64, title: String? = nil, thumbnailURL: String? = nil, durationSeconds: Int64? = nil,
        likeCount: Int64? = nil, viewCount: Int64? = nil
    ) throws(FeedStoreError) -> Video {
        let staged = try stageVideoUpdate(
            id: id, title: title, thumbnailURL: thumbnailURL, durationSeconds: durationSeconds, likeCount: likeCount, viewCount: viewCount)
        guard case .updateVideo(_, let changes, _) = staged.step, changes.isEmpty else { return try perform(staged) }
        guard let video = try reading({ reader throws(FeedStoreError) in try reader.record(Video.self, id: id) }) else {
            throw .notFound(entity: .video, id: String(id))
        }
        return video
    }

    /// ``updateVideo(id:title:thumbnailURL:durationSeconds:likeCount:viewCount:)`` staged (see
    /// ``StagedWrite``): validates the fields now, and throws what that throws for them. Unlike
    /// `updateVideo`, it writes even when every field is nil (the video's `updatedAt` moves).
    public func stageVideoUpdate(
        id: Int64, title: String? = nil, thumbnailURL: String? = nil, durationSeconds: Int64? = nil,
        likeCount: Int64? = nil, viewCount: Int64? = nil
    ) throws(FeedStoreError) -> StagedWrite<Video> {
        let changes = VideoChanges(
            title: try title.map { text throws(FeedStoreError) in try Validate.title(text) },
            thumbnailURL: try thumbnailURL.map { url throws(FeedStoreError) in try Validate.url(url, field: "thumbnail_url") },
            durationSeconds: try durationSeconds.map { seconds throws(FeedStoreError) in try Validate.duration(seconds) },
            likeCount: try likeCount.map { count throws(FeedStoreError) in try Validate.count(count, field: "like_count") },
            viewCount: try viewCount.map { count throws(FeedStoreError) in try Validate.count(count, field: "view_count") })
        return StagedWrite(step: .updateVideo(id: id, changes: changes, at: now), change: { _ in PendingChange(kind: .videoUpdated, key: id) }) {
            answer throws(FeedStoreError) in
            guard case .videoUpdated(let updated) = answer else { throw .mismatchedAnswer }
            guard let updated else { throw .notFound(entity: .video, id: String(id)) }
            return updated
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
    ///   there is no such video; ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func addToVideoCounts(id: Int64, likes: Int64 = 0, views: Int64 = 0) throws(FeedStoreError) -> Video {
        let updatedAt = now
        return try update(Video.self, id: id, kind: .videoUpdated, changing: true) { video throws(FeedStoreError) in
            let (likeCount, likeOverflow) = video.likeCount.addingReportingOverflow(likes)
            let (viewCount, viewOverflow) = video.viewCount.addingReportingOverflow(views)
            guard !likeOverflow, likeCount >= 0 else {
                throw .invalid(field: "like_count", reason: "must stay between 0 and \(Int64.max)")
            }
            guard !viewOverflow, viewCount >= 0 else {
                throw .invalid(field: "view_count", reason: "must stay between 0 and \(Int64.max)")
            }
            video.likeCount = likeCount
            video.viewCount = viewCount
            video.updatedAt = max(updatedAt, video.createdAt)
        }
    }

    /// Records that `user` likes `video` and adds one to its like count, in one write. A user's
    /// like is counted once: liking again is refused, so a client may retry a like whose answer
    /// it lost without counting it twice. Concurrent likes of one video all count (each adds one
    /// in its own write; none sets the count).
    ///
    /// - Parameters:
    ///   - video: the video liked.
    ///   - user: who likes it.
    /// - Returns: the video with its new like count (`updatedAt` from the clock).
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` (`.video` or `.user`) when either does
    ///   not exist; ``FeedStoreError/conflict(field:reason:)`` on `user_id` when that user already
    ///   likes the video; ``FeedStoreError/invalid(field:reason:)`` on `like_count` when the count
    ///   would overflow; ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func like(video: Int64, by user: Int64) throws(FeedStoreError) -> Video {
        try perform(stageLike(video: video, by: user))
    }

    /// ``like(video:by:)`` staged (see ``StagedWrite``).
    public func stageLike(video: Int64, by user: Int64) -> StagedWrite<Video> {
        stageLikeChange(video: video, by: user, liking: true)
    }

    /// Takes back `user`'s like of `video` and removes one from its like count, in one write.
    ///
    /// - Returns: the video with its new like count.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)``: `.video` or `.user` when either does not
    ///   exist, `.like` (id `"user->video"`) when that user does not like the video;
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func unlike(video: Int64, by user: Int64) throws(FeedStoreError) -> Video {
        try perform(stageUnlike(video: video, by: user))
    }

    /// ``unlike(video:by:)`` staged (see ``StagedWrite``).
    public func stageUnlike(video: Int64, by user: Int64) -> StagedWrite<Video> {
        stageLikeChange(video: video, by: user, liking: false)
    }

    /// Deletes a video.
    ///
    /// - Parameter id: the video.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` when there is no such video;
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    public func deleteVideo(id: Int64) throws(FeedStoreError) {
        try delete(Video.self, id: id, kind: .videoDeleted)
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
        let ad = Ad(
            id: 0, advertiser: advertiser, title: title, imageURL: imageURL, targetURL: targetURL, weight: weight, active: active,
            updatedAt: now)
        return try write(touchesAds: true, change: { PendingChange(kind: .adChanged, key: $0.id) }) { transaction in
            var created = ad
            created.id = try transaction.insert(ad)
            return created
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
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func updateAd(
        id: Int64, advertiser: String? = nil, title: String? = nil, imageURL: String? = nil,
        targetURL: String? = nil, weight: Int64? = nil, active: Bool? = nil
    ) throws(FeedStoreError) -> Ad {
        let newAdvertiser = try advertiser.map { text throws(FeedStoreError) in try Validate.advertiser(text) }
        let newTitle = try title.map { text throws(FeedStoreError) in try Validate.title(text) }
        let newImage = try imageURL.map { url throws(FeedStoreError) in try Validate.url(url, field: "image_url") }
        let newTarget = try targetURL.map { url throws(FeedStoreError) in try Validate.url(url, field: "target_url") }
        let newWeight = try weight.map { value throws(FeedStoreError) in try Validate.weight(value) }
        let changesSomething =
            newAdvertiser != nil || newTitle != nil || newImage != nil || newTarget != nil || newWeight != nil || active != nil
        let updatedAt = now
        return try update(Ad.self, id: id, kind: .adChanged, changing: changesSomething) { ad in
            if let newAdvertiser { ad.advertiser = newAdvertiser }
            if let newTitle { ad.title = newTitle }
            if let newImage { ad.imageURL = newImage }
            if let newTarget { ad.targetURL = newTarget }
            if let newWeight { ad.weight = newWeight }
            if let active { ad.active = active }
            ad.updatedAt = updatedAt
        }
    }

    /// Deletes an ad. Bumps the ad epoch and the change version.
    ///
    /// - Parameter id: the ad.
    /// - Throws: ``FeedStoreError/notFound(entity:id:)`` when there is no such ad;
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    public func deleteAd(id: Int64) throws(FeedStoreError) {
        try delete(Ad.self, id: id, kind: .adChanged)
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
    ///   ``FeedStoreError/storage(code:message:)`` on storage failure.
    /// - Complexity: O(log n).
    @discardableResult
    public func follow(follower: Int64, followee: Int64) throws(FeedStoreError) -> Follow {
        try perform(stageFollow(follower: follower, followee: followee))
    }

    /// ``follow(follower:followee:)`` staged (see ``StagedWrite``): refuses a self-follow now.
    public func stageFollow(follower: Int64, followee: Int64) throws(FeedStoreError) -> StagedWrite<Follow> {
        guard follower != followee else {
            throw .invalid(field: "followee_id", reason: "a user cannot follow themselves")
        }
        let follow = Follow(followerID: follower, followeeID: followee, createdAt: now)
        return StagedWrite(step: .insertFollow(follow), change: { _ in PendingChange(kind: .followed, key: follower, otherKey: followee) }) {
            answer throws(FeedStoreError) in
            guard case .follow(let outcome) = answer else { throw .mismatchedAnswer }
            switch outcome {
            case .inserted: return follow
            case .followerMissing: throw .notFound(entity: .user, id: String(follower))
            case .followeeMissing: throw .notFound(entity: .user, id: String(followee))
            case .exists: throw .conflict(field: "followee_id", reason: "user \(follower) already follows user \(followee)")
            }
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
        try perform(stageUnfollow(follower: follower, followee: followee))
    }

    /// ``unfollow(follower:followee:)`` staged (see ``StagedWrite``).
    public func stageUnfollow(follower: Int64, followee: Int64) -> StagedWrite<Void> {
        StagedWrite(
            step: .deleteFollow(follower: follower, followee: followee), change: { _ in PendingChange(kind: .unfollowed, key: follower, otherKey: followee) }
        ) { answer throws(FeedStoreError) in
            guard case .followDeleted(let deleted) = answer else { throw .mismatchedAnswer }
            guard deleted else { throw .notFound(entity: .follow, id: "\(follower)->\(followee)") }
        }
    }

    // MARK: - Helpers

    /// The store's clock, read once per write.
    package var now: Int64 { options.clock() }

    /// Updates the record `id` with `apply` in one write (logged as `kind`, bumping the ad epoch
    /// for ads); when `changing` is false nothing is written and the record is returned as it is.
    private func update<Record: StoredRecord & Identifiable<Int64>>(
        _ type: Record.Type, id: Int64, kind: ChangeKind, changing: Bool,
        _ apply: @escaping (inout Record) throws(FeedStoreError) -> Void
    ) throws(FeedStoreError) -> Record {
        let entity = FeedStoreError.Entity(Record.self)
        guard changing else {
            guard let record = try reading({ reader throws(FeedStoreError) in try reader.record(Record.self, id: id) }) else {
                throw .notFound(entity: entity, id: String(id))
            }
            return record
        }
        return try write(touchesAds: Record.self == Ad.self, change: { _ in PendingChange(kind: kind, key: id) }) { transaction in
            guard var record = try transaction.fetch(Record.self, id: id) else {
                throw FeedStoreError.notFound(entity: entity, id: String(id))
            }
            try apply(&record)
            try transaction.update(record)
            return record
        }
    }

    /// A like or unlike staged (``WriteStep/changeLike(video:user:liking:at:)``), logged as the
    /// video's update; what its step found turned into the write's error.
    private func stageLikeChange(video id: Int64, by user: Int64, liking: Bool) -> StagedWrite<Video> {
        StagedWrite(step: .changeLike(video: id, user: user, liking: liking, at: now), change: { _ in PendingChange(kind: .videoUpdated, key: id) }) {
            answer throws(FeedStoreError) in
            guard case .like(let outcome) = answer else { throw .mismatchedAnswer }
            switch outcome {
            case .changed(let video): return video
            case .videoMissing: throw .notFound(entity: .video, id: String(id))
            case .userMissing: throw .notFound(entity: .user, id: String(user))
            case .overflow: throw .invalid(field: "like_count", reason: "must stay between 0 and \(Int64.max)")
            case .refused where liking: throw .conflict(field: "user_id", reason: "user \(user) already likes video \(id)")
            case .refused: throw .notFound(entity: .like, id: "\(user)->\(id)")
            }
        }
    }

    /// Deletes the record `id` in one write logged as `kind`.
    private func delete<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64, kind: ChangeKind) throws(FeedStoreError) {
        try write(touchesAds: Record.self == Ad.self, change: { _ in PendingChange(kind: kind, key: id) }) { transaction in
            guard try transaction.delete(Record.self, id: id) else {
                throw FeedStoreError.notFound(entity: FeedStoreError.Entity(Record.self), id: String(id))
            }
        }
    }
}

extension FeedStoreError {
    /// A step's answer of another kind than its write's: a backend's bug, never a client's.
    fileprivate static let mismatchedAnswer = FeedStoreError.storage(code: .other, message: "a write step's answer is of another kind")
}

extension FeedStoreError.Entity {
    /// The entity whose rows `Record` describes.
    init<Record: StoredRecord>(_ type: Record.Type) {
        switch Record.table {
        case User.table: self = .user
        case Video.table: self = .video
        case Ad.table: self = .ad
        case Follow.table: self = .follow
        default: self = .snapshot
        }
    }
}
