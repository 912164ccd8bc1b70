import Deterministic
import FeedService
import Foundation
import Testing

private func structure(_ sections: [(String, [(String, String)])], viewer: Int64 = 4) -> SnapshotStructure {
    SnapshotStructure(
        viewer: viewer, parameters: FeedParameters(limit: 20, width: 390),
        sections: sections.map { id, items in
            SnapshotStructure.Section(id: id, kind: "video_grid", items: items.map { SnapshotStructure.Item(id: $0.0, versionText: $0.1)! })
        })
}

private let grid = (0..<6).map { ("video:\($0)", String(repeating: "\($0)", count: 16)) }
private let base = structure([("header", [("header", "00000000000000aa")]), ("grid-0", grid), ("grid-1", grid.map { ("x" + $0.0, $0.1) })])

@Suite("Snapshot coding")
struct SnapshotCodingTests {
    @Test("A page patched in place hashes only its changed sections again, to the id hashed from the start")
    func patchedIDsHashOnlyTheChangedSections() {
        let hashes = base.idHashes()
        #expect(hashes.id == base.id)
        for section in base.sections.indices {
            var patched = base
            patched.sections[section].items[0].version = 0x0123456789abcdef
            let resumed = patched.idHashes(reusing: hashes, changed: [section])
            #expect(resumed.id == patched.id && resumed.id != base.id, "section \(section)")
            // And the next patch, of two sections apart, resumes from these.
            var again = patched
            again.sections[0].items[0].version = 0xfedcba9876543210
            again.sections[again.sections.count - 1].items[1].version = 0xfedcba9876543210
            #expect(again.idHashes(reusing: resumed, changed: [0, again.sections.count - 1]).id == again.id)
        }
        #expect(base.idHashes(reusing: hashes, changed: []).id == base.id)
        // Hashes of a page with another section count are not reused.
        var longer = base
        longer.sections.append(longer.sections[1])
        #expect(longer.idHashes(reusing: hashes, changed: []).id == longer.id)
        // Sections that swap places make another id.
        var swapped = base
        swapped.sections.swapAt(1, 2)
        #expect(swapped.id != base.id)
    }

    @Test("A snapshot one version away from its base is a few bytes and decodes back to itself")
    func smallDifferencesAreSmall() throws {
        var liked = base
        liked.sections[1].items[2].version = 0x0123456789abcdef
        let delta = try #require(SnapshotCoding.encode(liked, against: base, baseID: "b1"))
        // 33 bytes or less: the base's id (3 here, 33 in use), the parameters (7), the sections.
        #expect(delta.count <= 33, "\(delta.count) B against \(SnapshotCoding.encode(liked).count) B in full")
        #expect(try SnapshotCoding.baseID(of: delta) == "b1")
        #expect(try SnapshotCoding.decode(delta, base: base) == liked)
        #expect(try SnapshotCoding.baseID(of: SnapshotCoding.encode(liked)) == nil)

        // The same viewer's feed at another width and limit: its own parameters, the base's sections.
        var narrow = liked
        narrow.parameters = FeedParameters(limit: 2, offset: 1, width: 320, stackAds: true)
        narrow.sections.removeLast()
        let narrowDelta = try #require(SnapshotCoding.encode(narrow, against: base, baseID: "b1"))
        #expect(narrowDelta.count <= 33)
        #expect(try SnapshotCoding.decode(narrowDelta, base: base) == narrow)

        // Sections reordered, one replaced, one new: still decodes exactly.
        var moved = base
        moved.sections.swapAt(1, 2)
        moved.sections.append(SnapshotStructure.Section(id: "ad-slot-1", kind: "ad", items: [.init(id: "ad:1", version: 0xffffffffffffffff)]))
        let movedDelta = try #require(SnapshotCoding.encode(moved, against: base, baseID: "b1"))
        #expect(try SnapshotCoding.decode(movedDelta, base: base) == moved)
    }

    @Test("Headers and footers cost nothing in a difference until one changes, and decode back")
    func viewsAgainstTheBase() throws {
        var withViews = base
        withViews.sections[2].header = .init(id: "title", version: 0x00000000000000e1)
        withViews.sections[2].footer = .init(id: "see_all", version: 0x00000000000000f1)
        withViews.prefetch = 2
        var liked = withViews
        liked.sections[1].items[2].version = 0x0123456789abcdef
        let plain = try #require(SnapshotCoding.encode(liked, against: withViews, baseID: "b1"))
        var likedWithoutViews = base
        likedWithoutViews.sections[1].items[2].version = 0x0123456789abcdef
        likedWithoutViews.prefetch = 2
        let reference = try #require(SnapshotCoding.encode(likedWithoutViews, against: base, baseID: "b1"))
        #expect(plain.count == reference.count, "views the base has cost no byte")
        #expect(try SnapshotCoding.decode(plain, base: withViews) == liked)

        var counted = liked
        counted.sections[2].footer = .init(id: "see_all", version: 0x00000000000000f2)
        counted.sections[0].header = .init(id: "title", version: 0x00000000000000e1)
        let changed = try #require(SnapshotCoding.encode(counted, against: withViews, baseID: "b1"))
        #expect(try SnapshotCoding.decode(changed, base: withViews) == counted)
        #expect(try SnapshotCoding.decode(SnapshotCoding.encode(counted)) == counted)
    }

    @Test("A new item at the top, which moves one item of every section into the next, costs a byte or two per item")
    func shiftedItemsAreReferenced() throws {
        let sections = (0..<14).map { index in ("grid-\(index)", (0..<6).map { ("video:\(index * 6 + $0)", String(format: "%016x", index * 6 + $0)) }) }
        let old = structure(sections)
        let all = [("video:new", "00000000000000ff")] + sections.flatMap(\.1)
        var shifted = old
        for index in shifted.sections.indices {
            shifted.sections[index].items = all[index * 6..<index * 6 + 6].map { SnapshotStructure.Item(id: $0.0, versionText: $0.1)! }
        }
        shifted.sections[3].items[2].version = 0x0123456789abcdef  // and a like
        let delta = try #require(SnapshotCoding.encode(shifted, against: old, baseID: "b1"))
        #expect(delta.count < SnapshotCoding.encode(shifted).count / 4, "\(delta.count) B against \(SnapshotCoding.encode(shifted).count) B")
        #expect(try SnapshotCoding.decode(delta, base: old) == shifted)
    }

    @Test("A page whose every item was liked since its base is still stored against it: the difference levels off at about half the full form")
    func everyVersionChangedStaysADifference() throws {
        let sections = (0..<14).map { index in ("grid-\(index)", (0..<6).map { ("video:\(index * 6 + $0)", String(format: "%016x", index * 6 + $0)) }) }
        let old = structure(sections)
        var liked = old
        for section in liked.sections.indices {
            for item in liked.sections[section].items.indices { liked.sections[section].items[item].version &+= 0x1000_0000_0000 }
        }
        let delta = try #require(SnapshotCoding.encode(liked, against: old, baseID: "b1"), "a new base for version changes alone")
        #expect(delta.count * 3 > SnapshotCoding.encode(liked).count, "\(delta.count) B: over a third of the full form")
        #expect(try SnapshotCoding.decode(delta, base: old) == liked)
    }

    @Test("A snapshot mostly unlike its base, or of another feed, is not stored against it")
    func largeDifferencesAreFull() {
        var shifted = base
        shifted.sections[1].items = grid.map { SnapshotStructure.Item(id: "video:new-\($0.0)", versionText: $0.1)! }
        shifted.sections[2].items = grid.map { SnapshotStructure.Item(id: "y" + $0.0, versionText: $0.1)! }
        #expect(SnapshotCoding.encode(shifted, against: base, baseID: "b1") == nil)
        #expect(SnapshotCoding.encode(structure([("header", [])], viewer: 5), against: base, baseID: "b1") == nil)
    }

    @Test("A delta form naming sections or items its base lacks, or cut short, is refused")
    func malformedDeltasAreRefused() throws {
        var liked = base
        liked.sections[2].items[5].version = 0x0123456789abcdef
        let delta = try #require(SnapshotCoding.encode(liked, against: base, baseID: "b1"))
        let smaller = structure([("header", [("header", "00000000000000aa")])])
        #expect(throws: (any Error).self) { try SnapshotCoding.decode(delta, base: smaller) }
        #expect(throws: (any Error).self) { try SnapshotCoding.decode(Array(delta.dropLast()), base: base) }
        #expect(throws: (any Error).self) { try SnapshotCoding.decode(delta + [0], base: base) }
    }

    @Test("Sections that share their items with the base encode as equal copies do, and a changed view still counts")
    func sharedSectionsEncodeAsCopies() throws {
        // `liked` shares the items of sections 0 and 2 with `base` (a page patched in place
        // does); `copied` holds equal sections in storage of its own.
        var liked = base
        liked.sections[1].items[2].version = 0x0123456789abcdef
        var copied = liked
        for index in copied.sections.indices { copied.sections[index].items = copied.sections[index].items.map { $0 } }
        let shared = try #require(SnapshotCoding.encode(liked, against: base, baseID: "b1"))
        #expect(shared == SnapshotCoding.encode(copied, against: base, baseID: "b1"))
        #expect(try SnapshotCoding.decode(shared, base: base) == liked)

        // Items shared, footer new: the section is not the base's.
        var footed = liked
        footed.sections[2].footer = .init(id: "see_all", version: 0x00000000000000f1)
        let withFooter = try #require(SnapshotCoding.encode(footed, against: base, baseID: "b1"))
        #expect(try SnapshotCoding.decode(withFooter, base: base) == footed)
        // Items shared, kind changed: replaced, not referenced.
        var rekinded = liked
        rekinded.sections[0].kind = "carousel"
        let withKind = try #require(SnapshotCoding.encode(rekinded, against: base, baseID: "b1"))
        #expect(try SnapshotCoding.decode(withKind, base: base) == rekinded)
    }

    @Test("Any page made from its base by shifts, moves, likes, new and repeated items decodes back to itself")
    func randomDifferencesDecodeBack() throws {
        var random = SplitMix64(seed: 18)
        for round in 0..<400 {
            let sectionCount = random.next(in: 1...8)
            let old = structure(
                (0..<sectionCount).map { section in
                    (
                        "s\(section)",
                        (0..<random.next(in: 0...7)).map { _ in ("i\(random.next(in: 0...30))", String(format: "%016x", random.next(below: 1 << 40))) }
                    )
                })
            var items: [SnapshotStructure.Item] = old.sections.flatMap(\.items)
            // New items at random places, some repeating an id the page has; a few likes; a few
            // items moved elsewhere.
            for _ in 0..<random.next(in: 0...3) {
                let id = random.chance(percent: 30) && !items.isEmpty ? random.pick(items).id : "new\(random.next(below: 1000))"
                items.insert(
                    SnapshotStructure.Item(id: id, version: UInt64(random.next(below: 1 << 40))), at: random.next(in: 0...items.count))
            }
            for _ in 0..<random.next(in: 0...3) where !items.isEmpty {
                items[random.next(in: 0...items.count - 1)].version = UInt64(random.next(below: 1 << 40))
            }
            for _ in 0..<random.next(in: 0...2) where items.count > 1 {
                let moved = items.remove(at: random.next(in: 0...items.count - 1))
                items.insert(moved, at: random.next(in: 0...items.count))
            }
            // Cut into sections again (as many, some of them renamed, a section maybe dropped).
            var page = old
            var rest = items[...]
            for index in page.sections.indices {
                let count = index == page.sections.count - 1 ? rest.count : min(rest.count, random.next(in: 0...7))
                page.sections[index].items = Array(rest.prefix(count))
                rest = rest.dropFirst(count)
                if random.chance(percent: 10) { page.sections[index].id = "renamed\(index)" }
            }
            if page.sections.count > 1, random.chance(percent: 20) { page.sections.remove(at: random.next(in: 0...page.sections.count - 1)) }
            guard let delta = SnapshotCoding.encode(page, against: old, baseID: "b\(round)") else { continue }
            #expect(try SnapshotCoding.decode(delta, base: old) == page, "round \(round)")
            #expect(try SnapshotCoding.decode(delta, base: old) == SnapshotCoding.decode(SnapshotCoding.encode(page)), "round \(round)")
        }
    }
}
