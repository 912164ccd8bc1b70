import Deterministic

/// What the planner may draw a write from: the ids the caller knows. Empty lists leave out the
/// kinds that need them.
public struct WriteOptions: Sendable {
    /// Who follows and unfollows; nil: one of ``users``.
    public var follower: Int64?
    /// Videos to like, retitle, edit or delete.
    public var videos: [Int64] = []
    /// Videos drawn three times in four when not empty (what a viewer sees), else ``videos``.
    public var preferredVideos: [Int64] = []
    /// Like counts the caller knows: a like raises the count (popular videos change places),
    /// where an unknown count is drawn afresh.
    public var likeCounts: [Int64: Int64] = [:]
    /// Authors of ``WriteKind/newVideo``.
    public var authors: [Int64] = []
    /// Authors of ``WriteKind/newPopularVideo``.
    public var otherAuthors: [Int64] = []
    /// Users the follower may follow.
    public var followable: [Int64] = []
    /// Users the follower follows.
    public var followees: [Int64] = []
    /// Every user the caller knows.
    public var users: [Int64] = []
    /// Ads to edit or delete.
    public var ads: [Int64] = []

    public init() {}
}

/// How often each kind is drawn, relative to the others (a weight of 0, or no entry, never).
public typealias WriteMix = [WriteKind: UInt64]

extension WriteMix {
    /// `deltafeed simulate`: what a watcher of the demo page sees move: mostly likes.
    public static let simulate: WriteMix = [.like: 50, .title: 10, .newVideo: 20, .unfollow: 8, .follow: 12]
    /// `deltafeed prove`: every write the API has, most of them on what viewers see.
    public static let prove: WriteMix = [.newUser: 4, .like: 30, .title: 20, .newVideo: 14, .unfollow: 8, .follow: 10, .editAd: 10]
    /// The in-process end-to-end proof: every write route, deletions included.
    public static let endToEnd: WriteMix = [
        .newVideo: 14, .newPopularVideo: 6, .title: 12, .like: 14, .videoDetails: 4, .deleteVideo: 8, .newAd: 5, .editAd: 9,
        .deleteAd: 3, .follow: 9, .unfollow: 9, .toggleFollow: 4, .newUser: 3,
    ]
    /// The index's property test, on the store directly: writes the API does not offer too.
    public static let store: WriteMix = [
        .like: 15, .likeIncrement: 15, .title: 8, .newVideo: 17, .deleteVideo: 7, .toggleFollow: 23, .newUser: 4, .renameUser: 4,
        .deleteUser: 2, .newAd: 2, .editAd: 2, .deleteAd: 1,
    ]
}

/// Draws writes: which kind (weighted by a ``WriteMix`` among the kinds the options allow), on
/// which ids, with which values. The same seed and the same options give the same writes.
///
/// One planner serves `deltafeed simulate` and `deltafeed prove`, the end-to-end proof and the
/// index's property test; each carries the writes out its own way.
public struct WritePlanner: Sendable {
    private var random: SplitMix64
    private let mix: [(kind: WriteKind, weight: UInt64)]
    private var serial = 0

    /// A planner drawing from `mix` with the pseudo-random sequence of `seed`.
    public init(seed: UInt64, mix: WriteMix) {
        random = SplitMix64(seed: seed)
        self.mix = mix.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The next write, or nil when the options allow no kind of the mix.
    public mutating func next(_ options: WriteOptions) -> PlannedWrite? {
        let allowed = mix.filter { Self.allows($0.kind, options) }
        guard !allowed.isEmpty else { return nil }
        var pick = random.next(below: allowed.reduce(0) { $0 + $1.weight })
        var kind = allowed[0].kind
        for entry in allowed {
            if pick < entry.weight {
                kind = entry.kind
                break
            }
            pick -= entry.weight
        }
        serial += 1
        return plan(kind, options)
    }

    /// Whether `options` hold what `kind` draws from.
    static func allows(_ kind: WriteKind, _ options: WriteOptions) -> Bool {
        let hasFollower = options.follower != nil || !options.users.isEmpty
        switch kind {
        case .like, .likeIncrement, .title, .videoDetails, .deleteVideo:
            return !options.videos.isEmpty || !options.preferredVideos.isEmpty
        case .newVideo: return !options.authors.isEmpty
        case .newPopularVideo: return !options.otherAuthors.isEmpty
        case .follow: return hasFollower && !options.followable.isEmpty
        case .unfollow: return hasFollower && !options.followees.isEmpty
        case .toggleFollow: return options.users.count > 1
        case .newUser, .newAd: return true
        case .renameUser, .deleteUser: return !options.users.isEmpty
        case .editAd: return !options.ads.isEmpty
        case .deleteAd: return options.ads.count > 1
        }
    }

    private mutating func plan(_ kind: WriteKind, _ options: WriteOptions) -> PlannedWrite {
        let tag = "\(serial)-\(random.next(below: 1 << 20))"
        switch kind {
        case .like:
            let video = pickVideo(options)
            if let likes = options.likeCounts[video] {
                return .setLikes(video: video, likes: likes + 1 + Int64(random.next(below: 400)), views: nil)
            }
            let views = random.next(below: 2) == 0 ? Int64(random.next(below: 10_000_000)) : nil
            return .setLikes(video: video, likes: Int64(random.next(below: 100_000)), views: views)
        case .likeIncrement:
            return .addLikes(video: pickVideo(options), likes: Int64(random.next(below: 4)) + 1)
        case .title:
            return .retitle(video: pickVideo(options), title: title(tag))
        case .videoDetails:
            return .changeDetails(
                video: pickVideo(options), durationSeconds: 1 + Int64(random.next(below: 36_000)),
                thumbnailURL: "https://cdn.example/thumbs/\(tag).jpg")
        case .newVideo:
            return .createVideo(
                NewVideo(
                    authorID: pick(options.authors), title: title(tag), thumbnailURL: "https://cdn.example/thumbs/\(tag).jpg",
                    durationSeconds: 5 + Int64(random.next(below: 300)), likeCount: Int64(random.next(below: 5_000)), viewCount: nil))
        case .newPopularVideo:
            return .createVideo(
                NewVideo(
                    authorID: pick(options.otherAuthors), title: title(tag), thumbnailURL: "https://cdn.example/popular/\(tag).jpg",
                    durationSeconds: 30, likeCount: Int64(random.next(below: 90_000)), viewCount: Int64(random.next(below: 9_000_000))))
        case .deleteVideo:
            return .deleteVideo(pickVideo(options))
        case .follow:
            return .follow(follower: follower(options), followee: pick(options.followable))
        case .unfollow:
            return .unfollow(follower: follower(options), followee: pick(options.followees))
        case .toggleFollow:
            let follower = pick(options.users)
            var followee = pick(options.users)
            while followee == follower { followee = pick(options.users) }
            return .toggleFollow(follower: follower, followee: followee)
        case .newUser:
            return .createUser(handle: "user_\(tag.replacing("-", with: "_"))", displayName: "New Person \(serial)")
        case .renameUser:
            return .renameUser(pick(options.users), displayName: "Renamed \(tag)")
        case .deleteUser:
            return .deleteUser(pick(options.users))
        case .newAd:
            return .createAd(
                NewAd(
                    advertiser: "Acme \(serial)", title: title(tag), imageURL: "https://ads.example/\(tag).png", targetURL: "https://ads.example/go",
                    weight: 1 + Int64(random.next(below: 1000))))
        case .editAd:
            let ad = pick(options.ads)
            switch random.next(below: 4) {
            case 0: return .editAd(ad, .title("Ad \(title(tag))"))
            case 1: return .editAd(ad, .weight(1 + Int64(random.next(below: 1000))))
            case 2: return .editAd(ad, .active(false))
            default: return .editAd(ad, .reactivate(advertiser: "Globex"))
            }
        case .deleteAd:
            return .deleteAd(pick(options.ads))
        }
    }

    /// Words of titles: plain, accented, quoted and emoji, so every form escapes them.
    private static let words = ["sunset", "skate", "ramen", "tiny", "cat", "drone", "café", "loop", "\"quoted\"", "jump", "🎉", "street", "rain"]

    private mutating func title(_ tag: String) -> String {
        let count = 1 + Int(random.next(below: 4))
        return ((0..<count).map { _ in pick(Self.words) } + ["#\(tag)"]).joined(separator: " ")
    }

    private mutating func pickVideo(_ options: WriteOptions) -> Int64 {
        if !options.preferredVideos.isEmpty, options.videos.isEmpty || random.next(below: 4) > 0 {
            return pick(options.preferredVideos)
        }
        return pick(options.videos)
    }

    private mutating func follower(_ options: WriteOptions) -> Int64 {
        options.follower ?? pick(options.users)
    }

    private mutating func pick<T>(_ values: [T]) -> T {
        values[Int(random.next(below: UInt64(values.count)))]
    }
}
