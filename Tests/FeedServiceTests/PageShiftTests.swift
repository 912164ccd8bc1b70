import FeedService
import FeedStore
import FeedWire
import JSONBytes
import StoreOracle
import Testing

/// A followee's new video enters the feed at the top of the grid: the cached page's grids are
/// shown again from the region shifted by one, not composed from the index.
@Suite("Pages kept current without composing: new videos at the top, the carousel ranked again")
struct PageShiftTests {
    /// The page as a service that never saw the old one composes it.
    func fresh(_ service: FeedService, viewer: Int64, parameters: FeedParameters) throws -> RenderedFeed {
        try FeedService(store: service.store).feed(viewer: viewer, parameters: parameters)
    }

    /// The ids of the videos `page` shows, in order.
    func videoIDs(on page: RenderedFeed) -> [Int64] {
        page.sections.flatMap(\.items).compactMap { item in item.id.hasPrefix("video:") ? Int64(item.id.dropFirst(6)) : nil }
    }

    /// Asks for viewer 1's page again after writes and checks it was shifted once (not
    /// composed) and equals a fresh composition.
    func expectShiftedOnce(
        _ service: FeedService, since before: (composed: UInt64, patched: UInt64, shifted: UInt64), parameters: FeedParameters
    ) throws {
        let after = try service.feed(viewer: 1, parameters: parameters)
        #expect(service.pageWork.shifted == before.shifted + 1)
        #expect(service.pageWork.composed == before.composed)
        #expect(after.document.bytes == (try fresh(service, viewer: 1, parameters: parameters)).document.bytes)
    }

    @Test(
        "A followee's new video shifts the grids of the cached page, which equals a fresh composition",
        arguments: [FeedParameters(limit: 12), FeedParameters(limit: 12, width: 390, stackAds: true), FeedParameters(limit: 6, offset: 3)])
    func newVideoShiftsThePage(parameters: FeedParameters) throws {
        let service = try makeService()
        _ = try service.feed(viewer: 1, parameters: parameters)
        let followees = try service.store.read { try $0.followees(of: 1) }
        for (round, author) in followees.prefix(3).enumerated() {
            let before = service.pageWork
            _ = try service.write { store throws(FeedStoreError) in
                try store.createVideo(authorID: author, title: "fresh \(round)", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
            }
            let after = try service.feed(viewer: 1, parameters: parameters)
            #expect(service.pageWork.shifted == before.shifted + 1, "round \(round)")
            #expect(service.pageWork.composed == before.composed, "round \(round)")
            let composed = try fresh(service, viewer: 1, parameters: parameters)
            #expect(after.snapshotID == composed.snapshotID, "round \(round)")
            #expect(after.document.bytes == composed.document.bytes, "round \(round)")
        }
    }

    @Test("Two new videos and a like in one window shift the page once and match a fresh composition")
    func severalChangesInOneWindow() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let page = try service.feed(viewer: 1, parameters: parameters)
        let followees = try service.store.read { try $0.followees(of: 1) }
        try #require(followees.count >= 2)
        // A followee's video on the page: its like count does not move it (the followed part is in
        // time order).
        let shown = videoIDs(on: page)
        let videos = try service.store.read { reader in try shown.compactMap { try reader.video(id: $0) } }
        let liked = try #require(videos.first { Set(followees).contains($0.authorID) })
        let before = service.pageWork
        _ = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: followees[0], title: "first", thumbnailURL: "https://x.example/a.jpg", durationSeconds: 5)
            _ = try store.updateVideo(id: liked.id, likeCount: liked.likeCount + 1)
            try store.createVideo(authorID: followees[1], title: "second", thumbnailURL: "https://x.example/b.jpg", durationSeconds: 6)
        }
        try expectShiftedOnce(service, since: before, parameters: parameters)
    }

    @Test("A new video and a renamed author of videos lower on the page in one window: the grids shift and show the new name")
    func newVideoAndRenamedAuthorInOneWindow() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let page = try service.feed(viewer: 1, parameters: parameters)
        let followees = try service.store.read { try $0.followees(of: 1) }
        // The author of the page's last video, whose items move down a place and are shown
        // again under the new name, not kept as the page had them.
        let shown = videoIDs(on: page)
        let lastID = try #require(shown.last)
        let last = try #require(try service.store.read { try $0.video(id: lastID) })
        let before = service.pageWork
        _ = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: followees[0], title: "fresh", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
            _ = try store.updateUser(id: last.authorID, displayName: "Renamed Author")
        }
        try expectShiftedOnce(service, since: before, parameters: parameters)
        let after = try service.feed(viewer: 1, parameters: parameters)
        #expect(String(decoding: after.document.bytes, as: UTF8.self).contains("Renamed Author"))
    }

    @Test("A followee's new video and another followee's follow in one window: the grids shift and the carousel is ranked again")
    func shiftAndCarouselInOneWindow() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let page = try service.feed(viewer: 1, parameters: parameters)
        try #require(page.sections.contains { $0.kind == .followSuggestions })
        let followees = try service.store.read { try $0.followees(of: 1) }
        try #require(followees.count >= 2)
        let followed = Set(followees)
        let stranger = try #require((2...40).map(Int64.init).last { !followed.contains($0) })
        let follows = try service.store.read { try $0.followees(of: followees[1]) }.contains(stranger)
        let before = service.pageWork
        _ = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: followees[0], title: "fresh", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
            if follows {
                try store.unfollow(follower: followees[1], followee: stranger)
            } else {
                _ = try store.follow(follower: followees[1], followee: stranger)
            }
        }
        try expectShiftedOnce(service, since: before, parameters: parameters)
    }

    @Test("A followee's follows rank the carousel again without composing the page, which equals a fresh composition")
    func followeeFollowsRefreshTheCarousel() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let page = try service.feed(viewer: 1, parameters: parameters)
        try #require(page.sections.contains { $0.kind == .followSuggestions })
        let followees = try service.store.read { try $0.followees(of: 1) }
        let followed = Set(followees)
        let others = (2...40).map(Int64.init).filter { !followed.contains($0) }
        // A followee follows, then unfollows, several users the viewer does not follow: mutual
        // counts move, and cards change places or enter the carousel.
        for (round, (followee, user)) in zip(followees.prefix(4), others.suffix(4)).enumerated() {
            let before = service.pageWork
            let follows = try service.store.read { try $0.followees(of: followee) }.contains(user)
            _ = try service.write { store throws(FeedStoreError) in
                if follows { _ = try store.unfollow(follower: followee, followee: user) } else { _ = try store.follow(follower: followee, followee: user) }
            }
            let after = try service.feed(viewer: 1, parameters: parameters)
            #expect(service.pageWork.composed == before.composed, "round \(round)")
            #expect(after.document.bytes == (try fresh(service, viewer: 1, parameters: parameters)).document.bytes, "round \(round)")
            // Deltas from the page before are right whichever way they are built.
            guard case .answered(let outcome) = try service.delta(viewer: 1, since: page.snapshotID, format: .sequential) else {
                Issue.record("round \(round): the snapshot is known")
                continue
            }
            if case .changed(let delta) = outcome {
                let applied = try FeedDocument(parsing: page.document.bytes).applying(try delta.decoded(since: page.snapshotID))
                #expect(applied == (try FeedDocument(parsing: after.document.bytes)), "round \(round)")
            }
        }
    }

    /// The carousel's cards on `page`: each user and their mutual followee count, in order.
    func cards(on page: RenderedFeed) throws -> [(user: Int64, mutuals: Int64)] {
        let document = try FeedDocument(parsing: page.document.bytes)
        let carousel = try #require(document.sections.first { $0.id == "suggestions" })
        var cards: [(user: Int64, mutuals: Int64)] = []
        for item in carousel.items {
            let user = try #require(item.id.split(separator: ":").last.flatMap { Int64($0) })
            switch item.data["mutual_followees"] {
            case .int(let mutuals)?: cards.append((user, mutuals))
            default: Issue.record("no mutual count on \(item.id)")
            }
        }
        return cards
    }

    /// The first of `followees` who does not follow `user`.
    func followee(_ followees: [Int64], notFollowing user: Int64, in service: FeedService) throws -> Int64? {
        for followee in followees where try !service.store.read({ try $0.followees(of: followee) }).contains(user) { return followee }
        return nil
    }

    @Test("A followee's follow of the carousel's first user patches that card's mutual count without ranking the carousel again")
    func followOfAShownUserKeepingTheOrderPatchesTheCard() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let page = try service.feed(viewer: 1, parameters: parameters)
        let first = try #require(try cards(on: page).first)
        let followees = try service.store.read { try $0.followees(of: 1) }
        let fan = try #require(try followee(followees, notFollowing: first.user, in: service))
        let (before, ranked) = (service.pageWork, service.carouselsRanked)
        _ = try service.write { store throws(FeedStoreError) in _ = try store.follow(follower: fan, followee: first.user) }
        let after = try service.feed(viewer: 1, parameters: parameters)
        #expect(try cards(on: after).first?.user == first.user)
        #expect(try cards(on: after).first?.mutuals == first.mutuals + 1)
        #expect(service.carouselsRanked == ranked, "the first card stays first: nothing to rank")
        #expect(service.pageWork.composed == before.composed)
        #expect(service.pageWork.patched == before.patched + 1)
        #expect(after.document.bytes == (try fresh(service, viewer: 1, parameters: parameters)).document.bytes)
    }

    @Test("A followee's follow of someone the carousel does not show, who stays behind its last card, leaves the page as it was")
    func followOfAnUnseenUserBehindTheLastCardChangesNothing() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let page = try service.feed(viewer: 1, parameters: parameters)
        let shown = try cards(on: page)
        try #require(shown.count == FeedComposer.maxSuggestions, "a full carousel")
        let last = try #require(shown.last)
        let followees = try service.store.read { try $0.followees(of: 1) }
        let followed = Set(followees)
        let shownUsers = Set(shown.map(\.user))
        var followeesOf: [Int64: Set<Int64>] = [:]
        for followee in followees { followeesOf[followee] = Set(try service.store.read { try $0.followees(of: followee) }) }
        func mutuals(_ user: Int64) -> Int64 { Int64(followees.count { followeesOf[$0]?.contains(user) == true }) }
        // The unseen candidate with the fewest mutual followees, one more still behind the last card.
        let unseen = try #require((2...40).map(Int64.init).filter { !followed.contains($0) && !shownUsers.contains($0) }.min { mutuals($0) < mutuals($1) })
        try #require(mutuals(unseen) + 1 < last.mutuals)
        let fan = try #require(try followee(followees, notFollowing: unseen, in: service))
        let ranked = service.carouselsRanked
        _ = try service.write { store throws(FeedStoreError) in _ = try store.follow(follower: fan, followee: unseen) }
        let after = try service.feed(viewer: 1, parameters: parameters)
        #expect(after.snapshotID == page.snapshotID)
        #expect(service.carouselsRanked == ranked, "nobody the page shows moved")
        #expect(after.document.bytes == (try fresh(service, viewer: 1, parameters: parameters)).document.bytes)
    }

    @Test("Suggested users gaining followers move through the carousel without composing the page, with or without a new video")
    func suggestedUsersMoveThroughTheCarousel() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let viewer: Int64 = 1
        let followees = try service.store.read { try $0.followees(of: viewer) }
        let followed = Set(followees)
        for round in 0..<4 {
            let page = try service.feed(viewer: viewer, parameters: parameters)
            let carousel = try #require(page.sections.first { $0.kind == .followSuggestions })
            let last = try #require(carousel.items.last.flatMap { Int64($0.id.split(separator: ":").last ?? "") })
            // Users the viewer does not follow follow the last card: only its follower count moves.
            let fans = (2...40).map(Int64.init).filter { $0 != last && !followed.contains($0) }.shuffled().prefix(6)
            let before = service.pageWork
            _ = try service.write { store throws(FeedStoreError) in
                for fan in fans { _ = try? store.follow(follower: fan, followee: last) }
                if round % 2 == 1 {
                    try store.createVideo(
                        authorID: followees[round % followees.count], title: "r\(round)", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
                }
            }
            let after = try service.feed(viewer: viewer, parameters: parameters)
            #expect(service.pageWork.composed == before.composed, "round \(round)")
            #expect(after.document.bytes == (try fresh(service, viewer: viewer, parameters: parameters)).document.bytes, "round \(round)")
        }
    }

    @Test("A new video on the feed's last page, or by someone the viewer does not follow, is not a shift")
    func otherNewVideosAreNotShifts() throws {
        let service = try makeService()
        let last = FeedParameters(limit: 200)
        _ = try service.feed(viewer: 1, parameters: last)
        let followees = Set(try service.store.read { try $0.followees(of: 1) })
        let stranger = try #require((2...40).map(Int64.init).first { !followees.contains($0) })
        let followee = try #require(followees.first)
        let before = service.pageWork
        _ = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: followee, title: "x", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
        }
        _ = try service.feed(viewer: 1, parameters: last)
        #expect(service.pageWork.shifted == before.shifted)
        #expect(service.pageWork.composed == before.composed + 1)
        let short = FeedParameters(limit: 12)
        _ = try service.feed(viewer: 1, parameters: short)
        let middle = service.pageWork
        _ = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: stranger, title: "y", thumbnailURL: "https://x.example/t.jpg", durationSeconds: 5)
        }
        _ = try service.feed(viewer: 1, parameters: short)
        #expect(service.pageWork.shifted == middle.shifted)
        #expect(service.pageWork.composed == middle.composed)
    }

    @Test("A delta whose page must be composed again is left to a pool when the caller says so; a patched page is answered at once")
    func compositionIsLeftToThePool() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let page = try service.feed(viewer: 1, parameters: parameters)
        let followees = Set(try service.store.read { try $0.followees(of: 1) })
        // A like on a video the page shows: patched, answered without composing.
        let shown = videoIDs(on: page)
        let liked = try #require(try service.store.read { reader in try reader.video(id: shown[0]) })
        _ = try service.write { store throws(FeedStoreError) in _ = try store.updateVideo(id: liked.id, likeCount: liked.likeCount + 1) }
        let patched = try #require(
            try service.delta(viewer: 1, since: page.snapshotID, format: .batch, composing: false).changedDocument, "a like is answered on the loop")
        // The viewer follows someone: its page is composed again, which the loop leaves to a pool.
        let stranger = try #require((2...40).map(Int64.init).first { !followees.contains($0) })
        _ = try service.write { store throws(FeedStoreError) in try store.follow(follower: 1, followee: stranger) }
        let composedBefore = service.pageWork.composed
        guard case .needsComposition = try service.delta(viewer: 1, since: patched.snapshot, format: .batch, composing: false) else {
            Issue.record("the viewer's own follow needs a composition")
            return
        }
        #expect(service.pageWork.composed == composedBefore, "not composed on the caller's thread")
        let delta = try #require(try service.delta(viewer: 1, since: patched.snapshot, format: .batch).changedDocument, "composing, it answers")
        #expect(service.pageWork.composed == composedBefore + 1)
        #expect(delta.snapshot == (try fresh(service, viewer: 1, parameters: parameters)).snapshotID)
    }
}
