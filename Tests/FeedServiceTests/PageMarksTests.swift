import FeedIndex
import FeedService
import FeedStore
import FeedWire
import Foundation
import StoreOracle
import Testing

/// A poll judges only the index changes noted on its page (``PageMarks``), so what it costs does
/// not grow with how often others write.
@Suite("Polls judge only the changes that may touch their page")
struct PageMarksTests {
    @Test("Writes to what no cached page shows cost a poll nothing; a write to what it shows is judged alone")
    func writesElsewhereAreNotJudged() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        // Someone nobody follows posts a video no page shows.
        let stranger = try service.write { store throws(FeedStoreError) in
            try store.createUser(handle: "stranger", displayName: "Stranger")
        }
        let video = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: stranger.id, title: "unseen", thumbnailURL: "https://x.example/u.jpg", durationSeconds: 5)
        }
        let page = try service.feed(viewer: 1, parameters: parameters)
        let (judged, work) = (service.changesJudged, service.pageWork)
        for round in 0..<100 {
            _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video.id, title: "unseen \(round)") }
        }
        let again = try service.feed(viewer: 1, parameters: parameters)
        #expect(again.snapshotID == page.snapshotID)
        #expect(service.changesJudged == judged, "100 changes to a video the page does not show were judged against it")
        #expect(service.pageWork.composed == work.composed && service.pageWork.patched == work.patched)

        // A like on a video the page shows, after 100 more writes elsewhere: that change alone.
        let shown = try #require(page.sections.flatMap(\.items).first { $0.id.hasPrefix("video:") }.flatMap { Int64($0.id.dropFirst(6)) })
        for round in 0..<100 {
            _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video.id, title: "still unseen \(round)") }
        }
        _ = try service.write { store throws(FeedStoreError) in try store.addToVideoCounts(id: shown, likes: 1) }
        let liked = try service.feed(viewer: 1, parameters: parameters)
        #expect(service.changesJudged == judged + 1)
        #expect(liked.snapshotID != page.snapshotID)
        #expect(service.pageWork.composed == work.composed)
        #expect(liked.snapshotID == (try FeedService(store: service.store).feed(viewer: 1, parameters: parameters)).snapshotID)
    }

    @Test("A held page is reported once a change is noted on it, and only then; a released page no more")
    func heldPagesAreReportedWhenTouched() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        service.holdPage(viewer: 1, parameters: parameters, for: .liveStreams)
        let page = try service.livePage(viewer: 1, parameters: parameters)
        _ = service.heldPagesTouched(by: .liveStreams)
        let stranger = try service.write { store throws(FeedStoreError) in
            try store.createUser(handle: "stranger", displayName: "Stranger")
        }
        let video = try service.write { store throws(FeedStoreError) in
            try store.createVideo(authorID: stranger.id, title: "unseen", thumbnailURL: "https://x.example/u.jpg", durationSeconds: 5)
        }
        _ = service.heldPagesTouched(by: .liveStreams)
        for round in 0..<20 {
            _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video.id, title: "unseen \(round)") }
        }
        #expect(service.heldPagesTouched(by: .liveStreams).isEmpty, "writes no held page shows touch none")
        let shown = try #require(page.sections.flatMap(\.items).first { $0.id.hasPrefix("video:") }.flatMap { Int64($0.id.dropFirst(6)) })
        _ = try service.write { store throws(FeedStoreError) in try store.addToVideoCounts(id: shown, likes: 1) }
        let touched = service.heldPagesTouched(by: .liveStreams)
        #expect(touched.count == 1 && touched.first?.viewer == 1 && touched.first?.parameters == parameters)
        #expect(service.heldPagesTouched(by: .liveStreams).isEmpty, "reported once")
        service.releasePage(viewer: 1, parameters: parameters, for: .liveStreams)
        _ = try service.write { store throws(FeedStoreError) in try store.addToVideoCounts(id: shown, likes: 1) }
        #expect(service.heldPagesTouched(by: .liveStreams).isEmpty, "a released page is no longer reported")
    }

    @Test("Each holder is told of its own held pages: one taking its report leaves the other's, and a page held by one is not reported to the other")
    func holdersAreToldApart() throws {
        let service = try makeService()
        let both = FeedParameters(limit: 12)
        let liveOnly = FeedParameters(limit: 13)
        service.holdPage(viewer: 1, parameters: both, for: .liveStreams)
        service.holdPage(viewer: 1, parameters: both, for: .longPolls)
        service.holdPage(viewer: 1, parameters: liveOnly, for: .liveStreams)
        let page = try service.livePage(viewer: 1, parameters: both)
        _ = try service.livePage(viewer: 1, parameters: liveOnly)
        _ = service.heldPagesTouched(by: .liveStreams)
        _ = service.heldPagesTouched(by: .longPolls)
        // A like on a video both pages show (the second page begins as the first does).
        let shown = try #require(page.sections.flatMap(\.items).first { $0.id.hasPrefix("video:") }.flatMap { Int64($0.id.dropFirst(6)) })
        _ = try service.write { store throws(FeedStoreError) in try store.addToVideoCounts(id: shown, likes: 1) }
        let live = Set(service.heldPagesTouched(by: .liveStreams).map(\.parameters))
        #expect(live == [both, liveOnly])
        let waiting = service.heldPagesTouched(by: .longPolls).map(\.parameters)
        #expect(waiting == [both], "the live streams' take left the long polls' report, and only their page is in it")
        // Released by the long polls: the live streams are still told of it.
        service.releasePage(viewer: 1, parameters: both, for: .longPolls)
        _ = try service.write { store throws(FeedStoreError) in try store.addToVideoCounts(id: shown, likes: 1) }
        #expect(service.heldPagesTouched(by: .longPolls).isEmpty)
        #expect(Set(service.heldPagesTouched(by: .liveStreams).map(\.parameters)) == [both, liveOnly])
    }

    @Test("The maintenance thread notes changes with no request asking, so a poll after a quiet spell finds no backlog")
    func maintenanceNotesChanges() throws {
        let service = try makeService()
        _ = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12))
        var intervals = FeedMaintenance.Intervals()
        intervals.catchUp = .milliseconds(20)
        let maintenance = FeedMaintenance(service: service, intervals: intervals) { _ in }
        defer { maintenance.stop() }
        // Written as another process would: the maintenance thread applies them, and no request follows.
        for round in 0..<5 {
            _ = try service.store.updateUser(id: 2, displayName: "Quiet \(round)")
        }
        let target = service.store.changeVersion
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while service.changesNotedThrough < target, clock.now < deadline { usleep(10_000) }
        #expect(service.index.sequence == target)
        #expect(service.changesNotedThrough == target)
    }

    /// The carousel's last card loses a follower and stays last: the carousel is ranked again into
    /// the same users, so the page keeps its composition, but the rank a newcomer must beat is now
    /// lower. A user between the old and the new rank who gains a follower enters the carousel.
    @Test("After the carousel's last card loses a follower, a user climbing past its new rank enters the carousel")
    func aLowerFloorLetsNewcomersIn() throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 12)
        let viewer: Int64 = 1
        let page = try service.feed(viewer: viewer, parameters: parameters)
        let shown = try PageShiftTests().cards(on: page)
        try #require(shown.count == FeedComposer.maxSuggestions, "a full carousel")
        let last = try #require(shown.last)
        let followees = Set(try service.store.read { try $0.followees(of: viewer) })
        let lastUser = try #require(try service.store.read { try $0.user(id: last.user) })
        let lastFans = try service.store.read { try $0.followers(of: last.user) }
        // Who may follow and unfollow without moving a mutual count or the page itself.
        let outsiders = try service.store.read { reader in
            try (2...40).map(Int64.init).filter { try !followees.contains($0) && $0 != viewer && reader.user(id: $0) != nil }
        }
        let leaving = try #require(lastFans.first { !followees.contains($0) && $0 != viewer }, "a follower of the last card who is not a followee")

        // A newcomer with as many mutual followees as the last card and one follower fewer: it
        // ranks right behind it, newer so behind on ties.
        let newcomer = try service.write { store throws(FeedStoreError) in try store.createUser(handle: "newcomer", displayName: "Newcomer") }
        let mutualFans = followees.sorted().prefix(Int(last.mutuals))
        let otherFans = outsiders.filter { $0 != leaving }
        let needed = Int(lastUser.followerCount) - 1 - mutualFans.count
        try #require(mutualFans.count == Int(last.mutuals) && needed >= 0 && needed < otherFans.count, "enough users to follow the newcomer")
        for fan in Array(mutualFans) + otherFans.prefix(needed) {
            _ = try service.write { store throws(FeedStoreError) in _ = try store.follow(follower: fan, followee: newcomer.id) }
        }
        let gainer = try #require(otherFans.dropFirst(needed).first)
        var current = try service.feed(viewer: viewer, parameters: parameters)
        try #require(try PageShiftTests().cards(on: current).map(\.user) == shown.map(\.user), "the newcomer ranks behind the last card")

        // The last card loses a follower: now it ties with the newcomer and still ranks first.
        _ = try service.write { store throws(FeedStoreError) in try store.unfollow(follower: leaving, followee: last.user) }
        current = try service.feed(viewer: viewer, parameters: parameters)
        try #require(try PageShiftTests().cards(on: current).map(\.user) == shown.map(\.user), "the last card stays last")
        #expect(service.pageWork.composed == 1, "the carousel was ranked again, the page not composed")

        // The newcomer gains a follower: it ranks before the last card now.
        _ = try service.write { store throws(FeedStoreError) in _ = try store.follow(follower: gainer, followee: newcomer.id) }
        current = try service.feed(viewer: viewer, parameters: parameters)
        let fresh = try FeedService(store: service.store).feed(viewer: viewer, parameters: parameters)
        #expect(try PageShiftTests().cards(on: fresh).contains { $0.user == newcomer.id }, "the newcomer enters a fresh page")
        #expect(try PageShiftTests().cards(on: current).map(\.user) == PageShiftTests().cards(on: fresh).map(\.user))
        #expect(current.snapshotID == fresh.snapshotID)
    }
}
