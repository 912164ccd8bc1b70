// The hot content writes (a like or unlike, a new video, a video's fields, a follow or
// unfollow) in two steps: a storage step that checks what the write needs and changes the store
// only when every check passes, then a decision that turns what the step found into the write's
// value or its own error. A write alone runs both at once inside its transaction
// (``FeedStorage/perform(_:)``); a group sends its writes' steps together and decides each
// from its answer afterwards (``FeedStorage/performTogether(_:)``): on PostgreSQL one round
// trip for all of them while the group holds the store_meta lock, instead of one each.

/// The storage work of one staged content write, which a backend can carry out as one
/// statement. A step changes the store only when its answer is the one its write keeps (a like
/// ``LikeChange/changed(_:)``, a follow ``FollowInsert/inserted``, an insert's id, a delete that
/// found its row, an update that found its video): a refused write's step leaves nothing behind,
/// so the steps of many writes can run one after the other before any answer is read. Each step
/// sees what the steps before it in the same transaction did.
public enum WriteStep: Sendable, Hashable {
    /// Like (`liking`) or unlike `video` as `user` at `at`: both must exist; moves the video's
    /// like count by one (never below zero, refused on overflow) and its `updatedAt` to `at`
    /// (never before its creation), and inserts or deletes the like row. Answers
    /// ``StepAnswer/like(_:)``, checked in ``LikeChange``'s order.
    case changeLike(video: Int64, user: Int64, liking: Bool, at: Int64)
    /// Insert `video` (its `id` ignored) when its author exists. Answers
    /// ``StepAnswer/videoInserted(_:)``.
    case insertVideo(Video)
    /// Insert the edge when both users exist and it is not there. Answers
    /// ``StepAnswer/follow(_:)``, checked in ``FollowInsert``'s order.
    case insertFollow(Follow)
    /// Delete the edge. Answers ``StepAnswer/followDeleted(_:)``.
    case deleteFollow(follower: Int64, followee: Int64)
    /// Set the fields of `changes` on video `id`, and its `updatedAt` to `at` (never before its
    /// creation). Answers ``StepAnswer/videoUpdated(_:)``.
    case updateVideo(id: Int64, changes: VideoChanges, at: Int64)
}

/// What a ``WriteStep`` found; its write decides from it whether it stays.
public enum StepAnswer: Sendable, Hashable {
    /// What a ``WriteStep/changeLike(video:user:liking:at:)`` found.
    case like(LikeChange)
    /// The new video's id, nil when its author does not exist.
    case videoInserted(Int64?)
    /// What a ``WriteStep/insertFollow(_:)`` found.
    case follow(FollowInsert)
    /// Whether the edge existed (it is deleted now).
    case followDeleted(Bool)
    /// The video as it is now, nil when there is none.
    case videoUpdated(Video?)
}

/// The fields a video update sets; nil leaves a field as it is.
public struct VideoChanges: Sendable, Hashable {
    public var title: String?
    public var thumbnailURL: String?
    public var durationSeconds: Int64?
    public var likeCount: Int64?
    public var viewCount: Int64?

    /// Changes of these fields, as given (``FeedStorage/stageVideoUpdate(id:title:thumbnailURL:durationSeconds:likeCount:viewCount:)``
    /// validates them first).
    public init(
        title: String? = nil, thumbnailURL: String? = nil, durationSeconds: Int64? = nil, likeCount: Int64? = nil, viewCount: Int64? = nil
    ) {
        self.title = title
        self.thumbnailURL = thumbnailURL
        self.durationSeconds = durationSeconds
        self.likeCount = likeCount
        self.viewCount = viewCount
    }

    /// Whether no field changes.
    public var isEmpty: Bool { self == VideoChanges() }

    /// `video` with these fields set.
    public func applied(to video: Video) -> Video {
        var video = video
        if let title { video.title = title }
        if let thumbnailURL { video.thumbnailURL = thumbnailURL }
        if let durationSeconds { video.durationSeconds = durationSeconds }
        if let likeCount { video.likeCount = likeCount }
        if let viewCount { video.viewCount = viewCount }
        return video
    }
}

/// A content write in two steps: its storage ``step``, and the decision that turns the step's
/// answer into the write's value, or into the write's own error (then the step changed
/// nothing). Made by the store's `stage…` functions (``FeedStorage/stageLike(video:by:)``…),
/// after the write's input is validated; carried out alone by ``FeedStorage/perform(_:)``, or
/// with others by ``FeedStorage/performTogether(_:)`` (through ``grouped(answer:)``).
///
/// No staged write touches ads: its change-log entry never moves the ad epoch.
public struct StagedWrite<Value>: Sendable {
    /// What the write asks of storage.
    public let step: WriteStep
    let decide: @Sendable (StepAnswer) throws(FeedStoreError) -> Value
    let change: @Sendable (Value) -> PendingChange

    /// A write of `step`, decided by `decide`, logged as `change` of its value when it stays.
    package init(
        step: WriteStep, change: @escaping @Sendable (Value) -> PendingChange, decide: @escaping @Sendable (StepAnswer) throws(FeedStoreError) -> Value
    ) {
        self.step = step
        self.change = change
        self.decide = decide
    }

    /// The write's value or error from its step's answer.
    ///
    /// - Throws: the write's error (a refusal: ``FeedStoreError/notFound(entity:id:)``,
    ///   ``FeedStoreError/conflict(field:reason:)``, ``FeedStoreError/invalid(field:reason:)``), or
    ///   ``FeedStoreError/storage(code:message:)`` for an answer of another step's kind.
    public func decided(by answer: StepAnswer) throws(FeedStoreError) -> Value {
        try decide(answer)
    }

    /// This write as a group holds it, its value's type hidden: `answer` is called once with
    /// its result, from the thread that carries the group out.
    public func grouped(answer: @escaping (Result<Value, FeedStoreError>) -> Void) -> GroupedWrite {
        GroupedWrite(
            step: step,
            decide: { stepAnswer in
                do throws(FeedStoreError) {
                    let value = try decide(stepAnswer)
                    answer(.success(value))
                    return change(value)
                } catch {
                    answer(.failure(error))
                    return nil
                }
            },
            performAlone: { store in
                do throws(FeedStoreError) {
                    answer(.success(try store.perform(self)))
                } catch {
                    answer(.failure(error))
                }
            },
            fail: { error in answer(.failure(error)) })
    }
}

/// A ``StagedWrite`` as ``FeedStorage/performTogether(_:)`` takes it (``StagedWrite/grouped(answer:)``):
/// its step, and what becomes of it. Exactly one of ``decide(_:)``, ``performAlone(on:)`` and
/// ``fail(_:)`` answers the write; the backend calls one of them once.
public struct GroupedWrite {
    /// What the write asks of storage.
    public let step: WriteStep
    private let decideAnswer: (StepAnswer) -> PendingChange?
    private let performAloneOn: (any FeedStorage) -> Void
    private let failWith: (FeedStoreError) -> Void

    fileprivate init(
        step: WriteStep, decide: @escaping (StepAnswer) -> PendingChange?, performAlone: @escaping (any FeedStorage) -> Void,
        fail: @escaping (FeedStoreError) -> Void
    ) {
        self.step = step
        self.decideAnswer = decide
        self.performAloneOn = performAlone
        self.failWith = fail
    }

    /// Decides the write from its step's answer and answers it: returns the change-log entry
    /// to append when it stays, nil when it is refused (its step changed nothing).
    public func decide(_ answer: StepAnswer) -> PendingChange? { decideAnswer(answer) }

    /// Carries the write out alone on `store` (``FeedStorage/perform(_:)``: its own
    /// transaction, or its own savepoint in the group open on this thread) and answers it.
    public func performAlone(on store: any FeedStorage) { performAloneOn(store) }

    /// Answers the write with `error`: its group's transaction failed.
    public func fail(_ error: FeedStoreError) { failWith(error) }
}

extension FeedStorage {
    /// Carries out a staged write in one write transaction (``write(touchesAds:change:_:)``):
    /// its step, its decision, and its change-log entry when it stays.
    ///
    /// - Throws: the write's own error, or a storage failure.
    public func perform<Value>(_ write: StagedWrite<Value>) throws(FeedStoreError) -> Value {
        try self.write(touchesAds: false, change: write.change) { transaction in
            try write.decided(by: try transaction.perform(write.step))
        }
    }

    /// Carries out `writes` one after the other, each with ``perform(_:)``: the default of
    /// ``performTogether(_:)`` for a backend that has nothing to gain by sending steps together.
    public func performTogether(_ writes: [GroupedWrite]) {
        for write in writes { write.performAlone(on: self) }
    }
}

extension StorageTransaction {
    /// Carries out `step` with the transaction's other operations, one after the other, and
    /// returns what it found. A refused step may have written: the write's error rolls it back.
    public func perform(_ step: WriteStep) throws -> StepAnswer {
        switch step {
        case .changeLike(let id, let user, let liking, let time):
            guard var video = try fetch(Video.self, id: id) else { return .like(.videoMissing) }
            guard try fetch(User.self, id: user) != nil else { return .like(.userMissing) }
            let (likes, overflow) = video.likeCount.addingReportingOverflow(liking ? 1 : -1)
            guard !overflow else { return .like(.overflow) }
            // An unlike never goes below zero: a count set lower by hand stays at zero.
            video.likeCount = max(0, likes)
            video.updatedAt = max(time, video.createdAt)
            try update(video)
            let recorded = liking ? try insertLike(video: id, user: user, createdAt: time) : try deleteLike(video: id, user: user)
            return .like(recorded ? .changed(video) : .refused)
        case .insertVideo(let video):
            guard try fetch(User.self, id: video.authorID) != nil else { return .videoInserted(nil) }
            return .videoInserted(try insert(video))
        case .insertFollow(let follow):
            guard try fetch(User.self, id: follow.followerID) != nil else { return .follow(.followerMissing) }
            guard try fetch(User.self, id: follow.followeeID) != nil else { return .follow(.followeeMissing) }
            return .follow(try insertFollow(follow) ? .inserted : .exists)
        case .deleteFollow(let follower, let followee):
            return .followDeleted(try deleteFollow(follower: follower, followee: followee))
        case .updateVideo(let id, let changes, let time):
            guard let found = try fetch(Video.self, id: id) else { return .videoUpdated(nil) }
            var video = changes.applied(to: found)
            video.updatedAt = max(time, video.createdAt)
            try update(video)
            return .videoUpdated(video)
        }
    }
}
