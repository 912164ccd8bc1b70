import FeedWire
import JSONBytes
import Testing
import WritePlanning

@Suite("Write planner")
struct WritePlannerTests {
    static func richOptions() -> WriteOptions {
        var options = WriteOptions()
        options.follower = 1
        options.videos = [10, 11, 12]
        options.preferredVideos = [13]
        options.likeCounts = [10: 100]
        options.authors = [2, 3]
        options.otherAuthors = [4]
        options.followable = [5, 6]
        options.followees = [2, 3]
        options.users = [1, 2, 3, 4, 5, 6]
        options.ads = [20, 21]
        return options
    }

    static let everyKind = WriteMix(uniqueKeysWithValues: WriteKind.allCases.map { ($0, 1) })

    @Test("The same seed plans the same writes") func theSameSeedPlansTheSameWrites() {
        var first = WritePlanner(seed: 42, mix: .endToEnd)
        var second = WritePlanner(seed: 42, mix: .endToEnd)
        let options = Self.richOptions()
        let a = (0..<200).compactMap { _ in first.next(options) }
        let b = (0..<200).compactMap { _ in second.next(options) }
        #expect(a == b)
        var other = WritePlanner(seed: 43, mix: .endToEnd)
        #expect((0..<200).compactMap { _ in other.next(options) } != a)
    }

    @Test("A seed plans the same writes on every machine") func aSeedPlansTheSameWritesOnEveryMachine() {
        // `--seed` reproduces a run of simulate or prove: the sequence must not depend on the
        // platform, the hash seed or the order of a dictionary.
        var planner = WritePlanner(seed: 7, mix: .simulate)
        let requests = (0..<4).compactMap { _ in planner.next(Self.richOptions())?.request }.map { "\($0.method) \($0.path) \($0.body?.jsonText ?? "")" }
        #expect(requests == Self.goldenSimulate)
    }

    static let goldenSimulate = [
        #"PATCH /v1/videos/13 {"like_count":46795,"view_count":2494315}"#,
        #"PATCH /v1/videos/13 {"like_count":91801}"#,
        #"PATCH /v1/videos/13 {"title":"\"quoted\" jump #3-905977"}"#,
        #"POST /v1/videos {"author_id":2,"duration_seconds":28,"like_count":2035,"thumbnail_url":"https://cdn.example/thumbs/4-111877.jpg","title":"street rain #4-111877"}"#,
    ]

    @Test("Every kind of the mix is drawn") func everyKindOfTheMixIsDrawn() {
        var planner = WritePlanner(seed: 1, mix: Self.everyKind)
        var seen: Set<String> = []
        for _ in 0..<2000 {
            guard let write = planner.next(Self.richOptions()) else { continue }
            seen.insert(String(describing: write).prefix { $0 != "(" }.description)
        }
        #expect(seen.count == 15, "drew only \(seen.sorted())")
    }

    @Test("Writes are only on ids the caller gave") func writesAreOnlyOnIdsTheCallerGave() {
        var planner = WritePlanner(seed: 3, mix: Self.everyKind)
        let options = Self.richOptions()
        let videos = Set(options.videos + options.preferredVideos)
        for _ in 0..<2000 {
            switch planner.next(options) {
            case .setLikes(let video, _, _), .addLikes(let video, _), .retitle(let video, _), .changeDetails(let video, _, _), .deleteVideo(let video):
                #expect(videos.contains(video))
            case .createVideo(let video):
                #expect((options.authors + options.otherAuthors).contains(video.authorID))
            case .follow(let follower, let followee):
                #expect(follower == 1 && options.followable.contains(followee))
            case .unfollow(let follower, let followee):
                #expect(follower == 1 && options.followees.contains(followee))
            case .toggleFollow(let follower, let followee):
                #expect(follower != followee && options.users.contains(follower) && options.users.contains(followee))
            case .renameUser(let user, _), .deleteUser(let user):
                #expect(options.users.contains(user))
            case .editAd(let ad, _), .deleteAd(let ad):
                #expect(options.ads.contains(ad))
            case .createUser, .createAd, nil:
                break
            }
        }
    }

    @Test("Kinds with nothing to draw from are left out") func kindsWithNothingToDrawFromAreLeftOut() {
        var planner = WritePlanner(seed: 5, mix: .simulate)
        #expect(planner.next(WriteOptions()) == nil, "simulate's kinds all need a feed")
        var options = WriteOptions()
        options.ads = [9]
        var ads = WritePlanner(seed: 5, mix: [.editAd: 1, .deleteAd: 1])
        for _ in 0..<100 {
            if case .deleteAd = ads.next(options) { Issue.record("deleted the last ad") }
        }
    }

    @Test("A known like count only goes up") func aKnownLikeCountOnlyGoesUp() {
        var planner = WritePlanner(seed: 9, mix: [.like: 1])
        var options = WriteOptions()
        options.videos = [10]
        options.likeCounts = [10: 500]
        for _ in 0..<100 {
            guard case .setLikes(_, let likes, _) = planner.next(options) else { Issue.record("not a like"); continue }
            #expect(likes > 500 && likes <= 900)
        }
    }

    @Test("A feed page gives its videos authors suggestions and ads") func aFeedPageGivesItsVideosAuthorsSuggestionsAndAds() throws {
        let feed = FeedDocument(
            snapshot: "s", viewer: 1,
            sections: [
                .init(
                    id: "grid:0", kind: "video_grid", version: "v", columns: 2,
                    items: [
                        .init(id: "video:10", kind: "video", version: "v", data: ["video": ["id": 10, "like_count": 7], "author": ["id": 2]])
                    ]),
                .init(id: "ad:20", kind: "ad", version: "v", columns: 1, items: [.init(id: "ad:20", kind: "ad", version: "v", data: ["id": 20])]),
                .init(
                    id: "suggestions", kind: "follow_suggestions", version: "v", columns: 1,
                    items: [
                        .init(id: "user:5", kind: "user", version: "v", data: ["user": ["id": 5]])
                    ]),
            ], nextCursor: nil)
        let options = WriteOptions(viewer: 1, feed: feed)
        #expect(options.follower == 1)
        #expect(options.videos == [10])
        #expect(options.likeCounts == [10: 7])
        #expect(options.authors == [2])
        #expect(options.followees == [2])
        #expect(options.followable == [5])
        #expect(options.ads == [20])
    }

    @Test("Writes without a route have no request") func writesWithoutARouteHaveNoRequest() {
        #expect(PlannedWrite.addLikes(video: 1, likes: 2).request == nil)
        #expect(PlannedWrite.renameUser(1, displayName: "x").request == nil)
        #expect(PlannedWrite.toggleFollow(follower: 1, followee: 2).request == nil)
        let follow = PlannedWrite.follow(follower: 1, followee: 2).request
        #expect(follow?.method == "PUT" && follow?.path == "/v1/users/1/follows/2" && follow?.body == nil)
        let like = PlannedWrite.setLikes(video: 3, likes: 4, views: nil).request
        #expect(like?.method == "PATCH" && like?.path == "/v1/videos/3" && like?.body == ["like_count": 4])
    }
}
