import FeedService
import FeedStore
import FeedWire
import JSONBytes
import ListDiff
import Testing

/// The feed protocol a shipping app needs: capabilities (`kinds=`), section headers and footers,
/// the `prefetch` hint and server-computed frames.
@Suite("Feed protocol: capabilities, headers and footers, prefetch, frames")
struct FeedProtocolTests {
    private func document(_ feed: RenderedFeed) throws -> FeedDocument {
        try FeedDocument(parsing: feed.document.bytes)
    }

    @Test("kinds=video gives pages of video items only, with their own snapshots, and deltas that stay within the set")
    func onlyTheKindsAClientRenders() throws {
        let service = try makeService()
        let videosOnly = FeedParameters(limit: 200, kinds: try #require(ItemKinds(parameter: "video")))
        let page = try service.feed(viewer: 1, parameters: videosOnly)
        let everything = try service.feed(viewer: 1, parameters: FeedParameters(limit: 200))
        #expect(!page.sections.isEmpty)
        #expect(page.sections.allSatisfy { $0.kind == .videoGrid && $0.header == nil && $0.footer == nil })
        #expect(page.sections.allSatisfy { !$0.items.isEmpty && $0.items.allSatisfy { $0.kind == .video } })
        // The same videos in the same order as the full feed shows them, nothing else.
        #expect(page.sections.flatMap(\.items).map(\.id) == everything.sections.flatMap(\.items).filter { $0.kind == .video }.map(\.id))
        #expect(page.snapshotID != everything.snapshotID)

        // A like is a delta of the video page; a change to what it leaves out (a follow moving
        // the carousel) is not a change of it.
        let video = try #require(page.sections.first?.items.first?.id.split(separator: ":").last.flatMap { Int64($0) })
        _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video, likeCount: 777_777) }
        let lookup = try service.delta(viewer: 1, since: page.snapshotID, format: .jsonpatch)
        let delta = try #require(lookup.changedDocument, "expected a delta, got \(lookup)")
        let applied = try document(page).applying(try delta.decoded(since: page.snapshotID))
        let fresh = try service.feed(viewer: 1, parameters: videosOnly)
        #expect(applied == (try document(fresh)))
        let suggested = try #require(everything.sections.first { $0.kind == .followSuggestions }?.items.first?.id.split(separator: ":").last)
        _ = try service.write { store throws(FeedStoreError) in _ = try store.follow(follower: 1, followee: Int64(suggested)!) }
        let afterFollow = try service.feed(viewer: 1, parameters: videosOnly)
        #expect(afterFollow.sections.flatMap(\.items).allSatisfy { $0.kind == .video })
    }

    @Test("Names the server does not know are ignored; a stacked grid without ads is a plain grid; an empty set gives an empty page")
    func unknownKindsAndLeftOutSections() throws {
        let service = try makeService()
        let newer = try #require(ItemKinds(parameter: "video,ad,user,header,empty,section_title,see_all,sponsored,reel,story"))
        #expect(newer == .all)
        #expect(ItemKinds(parameter: "") == nil)
        #expect(ItemKinds(parameter: ",,") == nil)
        let noAds = try service.feed(
            viewer: 1, parameters: FeedParameters(limit: 200, stackAds: true, kinds: try #require(ItemKinds(parameter: "video,header"))))
        #expect(noAds.sections.allSatisfy { $0.kind == .header || $0.kind == .videoGrid })
        let adsOnly = try service.feed(viewer: 1, parameters: FeedParameters(limit: 200, stackAds: true, kinds: try #require(ItemKinds(parameter: "ad"))))
        #expect(!adsOnly.sections.isEmpty)
        #expect(adsOnly.sections.allSatisfy { $0.kind == .videoGridStacked && $0.items.map(\.kind) == [.ad] })
        let nothing = try service.feed(viewer: 1, parameters: FeedParameters(kinds: try #require(ItemKinds(parameter: "reel"))))
        #expect(nothing.sections.isEmpty)
        #expect(nothing.nextCursor == nil)
    }

    @Test("Pagination counts the sections a client renders: every page is full until the last")
    func pagesCountWhatRemains() throws {
        let service = try makeService()
        let kinds = try #require(ItemKinds(parameter: "video,ad"))
        var cursorOffset = 0
        var seen: [String] = []
        while true {
            let page = try service.feed(viewer: 1, parameters: FeedParameters(limit: 7, offset: cursorOffset, kinds: kinds))
            seen += page.sections.map(\.id)
            guard let next = page.nextCursor else { break }
            #expect(page.sections.count == 7)
            cursorOffset = try #require(FeedParameters.offset(fromCursor: next))
        }
        let whole = try service.feed(viewer: 1, parameters: FeedParameters(limit: 200, kinds: kinds))
        #expect(seen == whole.sections.map(\.id))
    }

    @Test("The carousel has its title above and See all below; an ad standing alone is marked Sponsored")
    func headersAndFooters() throws {
        let service = try makeService()
        let feed = try service.feed(viewer: 1, parameters: FeedParameters(limit: 200))
        let carousel = try #require(feed.sections.first { $0.kind == .followSuggestions })
        #expect(carousel.header?.kind == .sectionTitle)
        #expect(carousel.footer?.kind == .seeAll)
        let doc = try document(feed)
        let carouselDocument = try #require(doc.sections.first { $0.id == "suggestions" })
        #expect(carouselDocument.header?.data["title"] == .string("Suggested for you"))
        #expect(carouselDocument.footer?.data["count"] == .int(Int64(carousel.items.count)))
        let ads = doc.sections.filter { $0.kind == "ad" }
        #expect(!ads.isEmpty)
        for ad in ads {
            #expect(ad.footer?.kind == "sponsored")
            #expect(ad.footer?.data["advertiser"] == ad.items.first?.data["advertiser"])
        }
        // Views hash like items, so a client checks a patched footer the same way.
        for view in doc.sections.flatMap({ [$0.header, $0.footer].compactMap { $0 } }) { #expect(view.computedVersion == view.version) }
    }

    @Test("A changed footer is an update of that footer, not a reload of its section, in all three forms", arguments: DeltaFormat.allCases)
    func aChangedFooterIsAnUpdate(format: DeltaFormat) throws {
        // Few users: the carousel shows every candidate, so a follow shortens it and its count.
        let service = try makeService(users: 8, videos: 120, ads: 2)
        let parameters = FeedParameters(limit: 200, width: 390)
        let before = try service.feed(viewer: 1, parameters: parameters)
        let index = try #require(before.sections.firstIndex { $0.kind == .followSuggestions })
        #expect(before.sections[index].items.count >= 2)
        let suggested = try #require(before.sections[index].items.last?.id.split(separator: ":").last.flatMap { Int64($0) })
        _ = try service.write { store throws(FeedStoreError) in _ = try store.follow(follower: 1, followee: suggested) }
        let after = try service.feed(viewer: 1, parameters: parameters)
        let newIndex = try #require(after.sections.firstIndex { $0.kind == .followSuggestions })
        #expect(after.sections[newIndex].footer?.version != before.sections[index].footer?.version)
        let delta = try #require(try service.delta(viewer: 1, since: before.snapshotID, format: format).changedDocument, "expected a delta")
        let parsed = try delta.decoded(since: before.snapshotID)
        switch parsed {
        case .batch(let batch):
            #expect(!batch.update.sectionReloads.contains(index) && !batch.update.sectionInserts.contains(newIndex))
            let change = try #require(batch.supplementary.first { $0.section == newIndex && $0.element == .footer })
            #expect(change.view?.isPatch == true, "the count travels as a field patch")
            #expect(batch.header.sectionLayouts[newIndex] != nil, "one card less: a narrower carousel")
        case .sequential(let sequential):
            #expect(
                sequential.operations.contains {
                    if case .supplementary(let change, false) = $0 { return change.section == newIndex && change.element == .footer }
                    return false
                })
            #expect(!sequential.operations.contains { if case .sections(.change(_, _), _) = $0 { true } else { false } })
        case .jsonPatch(let patch):
            let paths = patch.operations.map(\.path.description)
            #expect(paths.contains("/sections/\(newIndex)/footer/data/count"))
            #expect(paths.contains("/sections/\(newIndex)/footer/version"))
            #expect(paths.contains("/sections/\(newIndex)/layout"))
            #expect(!paths.contains("/sections/\(newIndex)"))
        }
        #expect(try document(before).applying(parsed) == (try document(after)))
    }

    @Test("Frames never overlap and fit the width, for every width from 320 to 1024 points")
    func framesFitEveryWidth() throws {
        let service = try makeService()
        for stackAds in [false, true] {
            for width in 320...1024 {
                let feed = try service.feed(viewer: 1, parameters: FeedParameters(limit: 200, width: width, stackAds: stackAds))
                for section in feed.sections {
                    let layout = section.sectionLayout(Layout(width: width))
                    #expect(layout.frames.count == section.items.count)
                    // The height the prefetch hint uses, computed without the frames, is the same.
                    #expect(
                        Layout(width: width).height(
                            of: section.kind, itemKinds: section.items.map(\.kind), header: section.header?.kind, footer: section.footer?.kind)
                            == layout.height)
                    var all = layout.frames
                    if let header = layout.header { all.append(header) }
                    if let footer = layout.footer { all.append(footer) }
                    let right = layout.contentWidth ?? width
                    for (position, frame) in all.enumerated() {
                        guard frame.x >= 0, frame.y >= 0, frame.x + frame.width <= right, frame.y + frame.height <= layout.height, frame.width > 0
                        else {
                            Issue.record("width \(width): \(section.id) frame \(frame) outside \(right)×\(layout.height)")
                            return
                        }
                        for other in all[(position + 1)...] where frame.overlaps(other) {
                            Issue.record("width \(width): \(section.id) frames \(frame) and \(other) overlap")
                            return
                        }
                    }
                    if layout.contentWidth == nil {
                        #expect(all.allSatisfy { $0.x + $0.width <= width })
                    } else {
                        #expect(section.kind == .followSuggestions)
                    }
                    // Items carry the size of their frame.
                    for (item, frame) in zip(section.items, layout.frames) {
                        let size = Layout(width: width).size(of: item.kind)
                        #expect(size.width == frame.width && size.height == frame.height)
                    }
                }
            }
        }
    }

    @Test("Two videos share a row, a stacked ad takes its own, and the section's height holds them all")
    func gridLayout() {
        let layout = Layout(width: 390)
        let section = layout.section(kind: .videoGridStacked, itemKinds: [.video, .video, .video, .ad], header: nil, footer: nil)
        #expect(section.frames.map(\.x) == [8, 199, 8, 8])
        #expect(section.frames.map(\.y) == [8, 8, 300, 592])
        #expect(section.frames[3].width == 374)
        #expect(section.height == 592 + 374 * 9 / 16 + 56 + 8)
        let carousel = layout.section(kind: .followSuggestions, itemKinds: [.user, .user, .user], header: .sectionTitle, footer: .seeAll)
        #expect(carousel.frames.map(\.x) == [8, 136, 264])
        #expect(carousel.frames.allSatisfy { $0.y == 52 })
        #expect(carousel.contentWidth == 8 + 3 * 120 + 2 * 8 + 8)
        #expect(carousel.footer == Frame(x: 0, y: 44 + 8 + 168 + 8, width: 390, height: 44))
        #expect(carousel.height == 44 + 8 + 168 + 8 + 44)
        // The README's other sizes: the header item content × 56, the empty state content × 240,
        // a `sponsored` footer 24 high across the whole width.
        let header = layout.section(kind: .header, itemKinds: [.header], header: nil, footer: nil)
        #expect(header.frames == [Frame(x: 8, y: 8, width: 374, height: 56)])
        let empty = layout.section(kind: .empty, itemKinds: [.empty], header: nil, footer: nil)
        #expect(empty.frames == [Frame(x: 8, y: 8, width: 374, height: 240)])
        let ad = layout.section(kind: .ad, itemKinds: [.ad], header: nil, footer: .sponsored)
        #expect(ad.footer == Frame(x: 0, y: 8 + 374 * 9 / 16 + 56 + 8, width: 390, height: 24))
        #expect(ad.height == 8 + 374 * 9 / 16 + 56 + 8 + 24)
    }

    @Test("A page with a next page says when to fetch it: the first section within two viewports of the end")
    func prefetchHint() throws {
        #expect(Layout.prefetchIndex(heights: [100, 100, 100], viewport: 844) == 0)
        #expect(Layout.prefetchIndex(heights: [500, 500, 500, 500, 500], viewport: 500) == 3)
        #expect(Layout.prefetchIndex(heights: [500, 500, 500, 500, 501], viewport: 500) == 4)
        #expect(Layout.prefetchIndex(heights: [], viewport: 500) == nil)
        let service = try makeService()
        let first = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12, width: 390, viewport: 600))
        let hint = try #require(try document(first).prefetch)
        #expect(first.nextCursor != nil)
        let heights = first.sections.map { $0.sectionLayout(Layout(width: 390)).height }
        #expect(hint.index == Layout.prefetchIndex(heights: heights, viewport: 600))
        #expect(hint.section == first.sections[hint.index].id)
        #expect(hint.index > 0 && hint.index < first.sections.count - 1)
        // A taller viewport asks earlier; the last page has no hint.
        let tall = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12, width: 390, viewport: 1200))
        #expect(try #require(try document(tall).prefetch).index < hint.index)
        #expect(tall.snapshotID != first.snapshotID)
        // Without a width, the page's heights are taken at 390 points: at a viewport where 390
        // and 320 points give different hints, the page gives 390's.
        let unsized = FeedParameters(limit: 12)
        let sections = try service.feed(viewer: 1, parameters: unsized).sections
        func index(at width: Int, viewport: Int) -> Int? {
            Layout.prefetchIndex(heights: sections.map { $0.sectionLayout(Layout(width: width)).height }, viewport: viewport)
        }
        let viewport = try #require(stride(from: 100, through: 4000, by: 20).first { index(at: 390, viewport: $0) != index(at: 320, viewport: $0) })
        let page = try service.feed(viewer: 1, parameters: FeedParameters(limit: 12, viewport: viewport))
        #expect(try document(page).prefetch?.index == index(at: 390, viewport: viewport))
        let last = try service.feed(viewer: 1, parameters: FeedParameters(limit: 200, width: 390))
        #expect(last.nextCursor == nil)
        #expect(try document(last).prefetch == nil)
    }
}

@Suite("Feed protocol: the next page")
struct NextPageTests {
    /// The defect: the snapshot id hashed the sections only, so a page that lost its next page
    /// (same sections) kept its id: 304, and the client kept a `next_cursor` and a hint that led
    /// nowhere.
    @Test("A page that loses its next page gets a new snapshot; its delta says next_cursor null and removes the hint", arguments: DeltaFormat.allCases)
    func losingTheNextPage(format: DeltaFormat) throws {
        let service = try makeService(users: 8, videos: 0, ads: 0)
        let parameters = FeedParameters(limit: 1, kinds: try #require(ItemKinds(parameter: "header,user")))
        let before = try service.feed(viewer: 1, parameters: parameters)
        #expect(before.sections.map(\.id) == ["header"])
        #expect(before.nextCursor != nil)
        // Following every suggested user empties the carousel: the second page goes.
        let everyone = try service.feed(viewer: 1, parameters: FeedParameters(limit: 2, kinds: parameters.kinds))
        for item in everyone.sections.last?.items ?? [] {
            let user = try #require(Int64(item.id.split(separator: ":").last ?? ""))
            _ = try service.write { store throws(FeedStoreError) in _ = try store.follow(follower: 1, followee: user) }
        }
        let after = try service.feed(viewer: 1, parameters: parameters)
        #expect(after.sections.map(\.id) == ["header"])
        #expect(after.nextCursor == nil)
        #expect(after.snapshotID != before.snapshotID)
        let delta = try #require(
            try service.delta(viewer: 1, since: before.snapshotID, format: format).changedDocument, "expected a delta, the page lost its next page")
        let applied = try FeedDocument(parsing: before.document.bytes).applying(try delta.decoded(since: before.snapshotID))
        #expect(applied == (try FeedDocument(parsing: after.document.bytes)))
        #expect(applied.nextCursor == nil && applied.prefetch == nil)
        #expect(try jsonObject(delta.bytes).keys.contains("next_cursor"), "the cursor changed: it is sent")
    }

    /// Bytes a client pays on every poll: a like's delta said again what the request said (its
    /// form and the snapshot it starts from) and the cursor that did not change, a quarter of
    /// the delta as sent.
    @Test("A like's delta carries the new snapshot and the change only: no since, format or unchanged next_cursor", arguments: DeltaFormat.allCases)
    func aDeltaSaysNothingTheClientHolds(format: DeltaFormat) throws {
        let service = try makeService()
        let parameters = FeedParameters(limit: 6)
        let before = try service.feed(viewer: 1, parameters: parameters)
        #expect(before.nextCursor != nil)
        let video = try #require(
            before.sections.lazy.flatMap(\.items).first { $0.kind == .video }?.id.split(separator: ":").last.flatMap { Int64($0) })
        _ = try service.write { store throws(FeedStoreError) in try store.updateVideo(id: video, likeCount: 424_242) }
        let delta = try #require(try service.delta(viewer: 1, since: before.snapshotID, format: format).changedDocument, "expected a delta after a like")
        let members = Set(try jsonObject(delta.bytes).keys)
        #expect(members.isDisjoint(with: ["since", "format", "next_cursor"]), "\(members.sorted())")
        #expect(!String(decoding: delta.bytes, as: UTF8.self).contains("/next_cursor"))
        let applied = try FeedDocument(parsing: before.document.bytes).applying(try delta.decoded(since: before.snapshotID))
        let after = try service.feed(viewer: 1, parameters: parameters)
        #expect(applied == (try FeedDocument(parsing: after.document.bytes)))
        #expect(applied.nextCursor == before.nextCursor)
    }
}
