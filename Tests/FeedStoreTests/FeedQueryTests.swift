import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

@Suite("Feed queries")
struct FeedQueryTests {
    @Test("Followed videos come newest first, ties by id descending, only from followed authors, at most limit")
    func followedVideosOrderAndLimit() throws {
        let clock = ManualClock(start: 10_000, step: 0)
        let store = try makeStore(clock: clock)
        let ids = try makeUsers(4, in: store)
        let (viewer, b, c, d) = (ids[0], ids[1], ids[2], ids[3])
        try store.follow(follower: viewer, followee: b)
        try store.follow(follower: viewer, followee: c)

        clock.advance(by: 1)
        let b1 = try makeVideo(store, author: b, title: "b1")  // t = 10001
        clock.advance(by: 1)
        let c1 = try makeVideo(store, author: c, title: "c1")  // t = 10002
        let b2 = try makeVideo(store, author: b, title: "b2")  // t = 10002, higher id than c1
        clock.advance(by: 1)
        _ = try makeVideo(store, author: d, title: "d1")  // not followed
        _ = try makeVideo(store, author: viewer, title: "own")  // the viewer's own
        clock.advance(by: 1)
        let c2 = try makeVideo(store, author: c, title: "c2")  // t = 10004

        #expect(try store.read { try $0.followedVideos(viewer: viewer, limit: 10) }.map(\.title) == ["c2", "b2", "c1", "b1"])
        #expect(try store.read { try $0.followedVideos(viewer: viewer, limit: 2) }.map(\.id) == [c2.id, b2.id])
        #expect(try store.read { try $0.followedVideos(viewer: viewer, limit: 0) }.isEmpty)
        #expect(
            try store.read { try $0.followedVideos(viewer: viewer, limit: 10, includeOwn: true) }.map(\.title)
                == ["c2", "own", "b2", "c1", "b1"])
        #expect(try store.read { try $0.followedVideos(viewer: d, limit: 10) }.isEmpty, "follows nobody")

        #expect(try store.read { try $0.videos(authorID: c, limit: 10) }.map(\.id) == [c2.id, c1.id])
        #expect(try store.read { try $0.videos(authorID: c, limit: 10, before: c2.feedCursor) }.map(\.id) == [c1.id])
        #expect(try store.read { try $0.videos(authorID: 404, limit: 10) }.isEmpty)

        let firstPage = try store.read { try $0.followedVideos(viewer: viewer, limit: 2) }
        let secondPage = try store.read { try $0.followedVideos(viewer: viewer, limit: 2, before: firstPage.last!.feedCursor) }
        #expect(secondPage.map(\.id) == [c1.id, b1.id])
        #expect(try store.read { try $0.followedVideos(viewer: viewer, limit: 2, before: secondPage.last!.feedCursor) }.isEmpty)
    }

    @Test("Followed videos match a brute-force computation on a seeded store, across limits and pages")
    func followedVideosMatchBruteForce() throws {
        let store = try makeStore()
        try store.seed(DemoSeed(users: 60, videos: 3000, ads: 0, seed: 7, followsPerUser: 1...20))
        let all = try store.read { try $0.videos(ids: 1...3000) }
        #expect(all.count == 3000)
        let newestFirst = all.values.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
        for viewer in Int64(1)...60 {
            let followees = Set(try store.read { try $0.followees(of: viewer) })
            let expected = newestFirst.filter { followees.contains($0.authorID) }
            for limit in [1, 7, 50, 400] {
                let got = try store.read { try $0.followedVideos(viewer: viewer, limit: limit) }
                #expect(got == Array(expected.prefix(limit)), "viewer \(viewer) limit \(limit)")
            }
            // Paging through everything yields the full list once.
            var paged: [Video] = []
            var cursor: VideoCursor?
            while true {
                let page = try store.read { try $0.followedVideos(viewer: viewer, limit: 37, before: cursor) }
                if page.isEmpty { break }
                paged += page
                cursor = page.last!.feedCursor
            }
            #expect(paged == expected, "paging viewer \(viewer)")
        }
    }

    @Test("Huge limits are clamped to maximumLimit without crashing")
    func hugeLimitsAreClamped() throws {
        let store = try makeStore()
        try store.seed(DemoSeed(users: 5, videos: 3000, ads: 0, seed: 11, followsPerUser: 4...4))
        let followed = try store.read { try $0.followedVideos(viewer: 1, limit: Int.max) }
        #expect(followed.count == SQLiteReader.maximumLimit)
        let all = try store.read { try $0.videos(ids: 1...3000) }.values.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
        let authors = Set(try store.read { try $0.followees(of: 1) })
        #expect(followed == Array(all.filter { authors.contains($0.authorID) }.prefix(SQLiteReader.maximumLimit)))
        #expect(try store.read { try $0.popularVideos(limit: Int.max) }.count == SQLiteReader.maximumLimit)
        #expect(try store.read { try $0.popularVideos(limit: Int.max, excludingAuthors: [1]) }.count == SQLiteReader.maximumLimit)
        #expect(try store.read { try $0.followSuggestions(for: 1, limit: Int.max) }.count == 0, "user 1 follows everyone else")
    }

    @Test("Popular videos come by like count descending, ties by id descending, skipping excluded authors")
    func popularVideosOrder() throws {
        let store = try makeStore()
        let ids = try makeUsers(3, in: store)
        let v1 = try makeVideo(store, author: ids[0], likes: 5)
        let v2 = try makeVideo(store, author: ids[1], likes: 50)
        let v3 = try makeVideo(store, author: ids[2], likes: 5)
        let v4 = try makeVideo(store, author: ids[1], likes: 7)
        #expect(try store.read { try $0.popularVideos(limit: 10) }.map(\.id) == [v2.id, v4.id, v3.id, v1.id])
        #expect(try store.read { try $0.popularVideos(limit: 2) }.map(\.id) == [v2.id, v4.id])
        #expect(try store.read { try $0.popularVideos(limit: 10, excludingAuthors: [ids[1]]) }.map(\.id) == [v3.id, v1.id])
        #expect(try store.read { try $0.popularVideos(limit: 1, excludingAuthors: [ids[1]]) }.map(\.id) == [v3.id])
        #expect(try store.read { try $0.popularVideos(limit: 0) }.isEmpty)
    }

    /// The hand-built graph of the suggestion tests (user n has handle un):
    /// viewer 1 follows 2, 3, 4.
    /// 5 is followed by 2, 3, 4 (3 mutuals). 7 by 2, 3 (+ 9, 10: 4 followers). 6 by 2, 3.
    /// 8 by 4. 2 by 3 (already followed). 1 by 2 (the viewer). 11 by 9, 10, 12. 12 by 9.
    static func suggestionGraph() throws -> SQLiteFeedStore {
        let store = try makeStore()
        try makeUsers(12, in: store)
        let edges: [(Int64, Int64)] = [
            (1, 2), (1, 3), (1, 4),
            (2, 5), (3, 5), (4, 5),
            (2, 6), (3, 6),
            (2, 7), (3, 7), (9, 7), (10, 7),
            (4, 8),
            (3, 2), (2, 1),
            (9, 11), (10, 11), (12, 11),
            (9, 12),
        ]
        for (follower, followee) in edges {
            try store.follow(follower: follower, followee: followee)
        }
        return store
    }

    @Test("Follow suggestions rank by mutual followees, then follower count, then id, then fill by popularity")
    func followSuggestionsExactOrder() throws {
        let store = try Self.suggestionGraph()
        let suggestions = try store.read { try $0.followSuggestions(for: 1) }
        #expect(suggestions.map(\.user.id) == [5, 7, 6, 8, 11, 12, 9, 10])
        #expect(suggestions.map(\.mutualCount) == [3, 2, 2, 1, 0, 0, 0, 0])
        #expect(suggestions[0].user.handle == "u5")
        #expect(suggestions[0].user.followerCount == 3)
        #expect(try store.read { try $0.followSuggestions(for: 1, limit: 6) }.map(\.user.id) == [5, 7, 6, 8, 11, 12])
        #expect(try store.read { try $0.followSuggestions(for: 1, limit: 2) }.map(\.user.id) == [5, 7])
        #expect(try store.read { try $0.followSuggestions(for: 1, limit: 0) }.isEmpty)
    }

    @Test("A viewer who follows nobody gets the most followed users, never themselves")
    func followSuggestionsForNewcomer() throws {
        let store = try Self.suggestionGraph()
        // Follower counts: 7:4, 5:3, 11:3, 2:2, 6:2, then 1, 3, 4, 8, 12 with 1 each.
        let suggestions = try store.read { try $0.followSuggestions(for: 11, limit: 10) }
        #expect(suggestions.map(\.user.id) == [7, 5, 2, 6, 1, 3, 4, 8, 12, 9])
        #expect(suggestions.allSatisfy { $0.mutualCount == 0 })
        #expect(try store.read { try $0.followSuggestions(for: 999, limit: 3) }.map(\.user.id) == [7, 5, 11])
    }

    @Test("Follow suggestions match a brute-force ranking on a seeded store")
    func followSuggestionsMatchBruteForce() throws {
        let store = try makeStore()
        try store.seed(DemoSeed(users: 150, videos: 0, ads: 0, seed: 3, followsPerUser: 2...12))
        let users = try store.read { try $0.users(ids: 1...150) }
        var followees: [Int64: Set<Int64>] = [:]
        for id in users.keys {
            followees[id] = Set(try store.read { try $0.followees(of: id) })
        }
        for viewer in Int64(1)...150 {
            var mutual: [Int64: Int64] = [:]
            for f in followees[viewer]! {
                for candidate in followees[f]! {
                    mutual[candidate, default: 0] += 1
                }
            }
            let ranked = users.values
                .filter { $0.id != viewer && !followees[viewer]!.contains($0.id) }
                .sorted {
                    let l = (mutual[$0.id] ?? 0, $0.followerCount, -$0.id)
                    let r = (mutual[$1.id] ?? 0, $1.followerCount, -$1.id)
                    return l > r
                }
                .prefix(10)
            let got = try store.read { try $0.followSuggestions(for: viewer) }
            #expect(got.map(\.user.id) == ranked.map(\.id), "viewer \(viewer)")
            #expect(got.map(\.mutualCount) == ranked.map { mutual[$0.id] ?? 0 }, "viewer \(viewer)")
        }
    }

    @Test("One read closure sees one consistent state with its change version")
    func readClosureIsConsistent() throws {
        let store = try makeStore()
        let author = try store.createUser(handle: "a", displayName: "A").id
        let video = try makeVideo(store, author: author)
        let (version, fetched, users) = try store.read { reader in
            (try reader.changeVersion(), try reader.video(id: video.id), try reader.users(ids: [author, 404]))
        }
        #expect(version == 2)
        #expect(fetched == video)
        #expect(Array(users.keys) == [author])
    }
}
