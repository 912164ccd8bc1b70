import FeedWire
import JSONBytes
import ListDiff
import Testing

private struct Author: UserFields {
    var id: Int64 = 7
    var handle = "quiet_owl"
    var displayName = "Ann \"Quotes\" Lee\u{8}\u{C}\u{1}"
    var avatarURL: String? = nil
}

private struct Clip: VideoFields {
    var id: Int64 = 42
    var title = "Café 🎉 line\nbreak\ttab \\ slash"
    var thumbnailURL = "https://cdn.example/42.jpg"
    var durationSeconds: Int64 = 61
    var likeCount: Int64 = 3
    var viewCount: Int64 = 90
    var createdAt: Int64 = 1_735_685_499_253
}

private func rendered(_ clip: Clip, author: Author? = Author()) -> FeedItem {
    FeedItem(id: "video:\(clip.id)", kind: .video, capacity: 400) { $0.videoData(clip, author: author) }
}

/// The item as a client holds it after reading the server's bytes.
private func received(_ item: FeedItem) throws -> FeedDocument.Item {
    try FeedDocument.Item(json: try JSONValue(parsing: item.json))
}

@Suite("Item patches")
struct ItemPatchTests {
    @Test("A client re-serializing an item's data gets the server's version, whatever the strings hold")
    func computedVersionMatchesTheServer() throws {
        for item in [rendered(Clip()), rendered(Clip(title: "plain"), author: nil), rendered(Clip(), author: Author(avatarURL: "https://a/7.jpg"))] {
            let client = try received(item)
            #expect(client.computedVersion == item.versionText)
            #expect(client.version == item.versionText)
        }
    }

    @Test("A like is a one-field patch; two counts are two fields")
    func changedFieldsArePatched() throws {
        let old = rendered(Clip())
        let liked = try #require(ItemPatch(from: old, to: rendered(Clip(likeCount: 4))))
        #expect(liked.changes == [ItemPatch.Change(path: ["video", "like_count"], value: 4)])
        #expect(liked.mergePatch.jsonText == #"{"video":{"like_count":4}}"#)
        #expect(liked.version == rendered(Clip(likeCount: 4)).versionText)

        let counted = try #require(ItemPatch(from: old, to: rendered(Clip(likeCount: 5, viewCount: 91))))
        #expect(counted.changes.map(\.path) == [["video", "like_count"], ["video", "view_count"]])
        // The bytes every delta writes are made once, and are the merge patch's, however the
        // patch was made.
        #expect(counted.mergePatchJSON == Array(#"{"video":{"like_count":5,"view_count":91}}"#.utf8))
        #expect(ItemPatch(version: counted.version, mergePatch: counted.mergePatch)?.mergePatchJSON == counted.mergePatchJSON)

        let avatar = try #require(ItemPatch(from: old, to: rendered(Clip(), author: Author(avatarURL: "https://a/7.jpg"))))
        #expect(avatar.changes == [ItemPatch.Change(path: ["author", "avatar_url"], value: "https://a/7.jpg")])
    }

    @Test("A value set to null, an object appearing, another item or no change at all send the whole item")
    func unpatchableChangesAreWhole() {
        let withAvatar = rendered(Clip(), author: Author(avatarURL: "https://a/7.jpg"))
        #expect(ItemPatch(from: withAvatar, to: rendered(Clip())) == nil, "avatar_url back to null")
        #expect(ItemPatch(from: rendered(Clip(), author: nil), to: rendered(Clip())) == nil, "author null → object")
        #expect(ItemPatch(from: rendered(Clip()), to: rendered(Clip(id: 43, likeCount: 4))) == nil, "another item")
        #expect(ItemPatch(from: rendered(Clip()), to: rendered(Clip())) == nil, "nothing changed")
        let ad = FeedItem(id: "video:42", kind: .ad, capacity: 100) { $0.raw(#"{"video":{"like_count":4}}"#) }
        #expect(ItemPatch(from: rendered(Clip()), to: ad) == nil, "another kind")
    }

    @Test("A merge patch with a null or an empty object is refused when read")
    func readingRefusesWhatPatchesNeverSay() {
        #expect(ItemPatch(version: "1", mergePatch: ["video": ["title": .null]]) == nil)
        #expect(ItemPatch(version: "1", mergePatch: ["video": [:]]) == nil)
        #expect(ItemPatch(version: "1", mergePatch: [:]) == nil)
        #expect(ItemPatch(version: "1", mergePatch: 3) == nil)
        #expect(ItemPatch(version: "1", mergePatch: ["video": ["title": "x"]])?.changes == [ItemPatch.Change(path: ["video", "title"], value: "x")])
    }
}

@Suite("Applying item patches")
struct ItemPatchApplyTests {
    let before = rendered(Clip())
    let after = rendered(Clip(likeCount: 4))

    func document() throws -> FeedDocument {
        let section = FeedDocument.Section(id: "grid-0", kind: "video_grid", version: "s1", columns: 2, items: [try received(before)])
        return FeedDocument(snapshot: "old", viewer: 1, sections: [section], nextCursor: nil)
    }

    func expected() throws -> FeedDocument {
        var document = try document()
        document.snapshot = "new"
        document.sections[0].version = "s2"
        document.sections[0].items[0] = try received(after)
        return document
    }

    var header: FeedDelta.Header { FeedDelta.Header(since: "old", snapshot: "new", sectionVersions: [0: "s2"], changeCount: 1) }

    func patch(version: String? = nil) throws -> ItemPatch {
        var patch = try #require(ItemPatch(from: before, to: after))
        if let version { patch.version = version }
        return patch
    }

    func batch(_ patch: ItemPatch) -> FeedDelta {
        .batch(
            FeedDelta.Batch(
                header: header, update: SectionedBatchUpdate(itemReloads: [ItemPath(section: 0, item: 0)]),
                reloadedItems: [FeedDelta.ItemReload(oldPosition: ItemPath(section: 0, item: 0), position: ItemPath(section: 0, item: 0), value: .patch(patch))]
            ))
    }

    func sequential(_ patch: ItemPatch) -> FeedDelta {
        .sequential(FeedDelta.Sequential(header: header, operations: [.items(section: 0, .change(at: 0, count: 1), values: [.patch(patch)])]))
    }

    func jsonPatch(version: String, replacingVersion: Bool = true) -> FeedDelta {
        var operations = [PatchOperation(op: .replace, path: "/sections/0/items/0/data/video/like_count", value: 4)]
        if replacingVersion { operations.append(PatchOperation(op: .replace, path: "/sections/0/items/0/version", value: .string(version))) }
        operations += [
            PatchOperation(op: .replace, path: "/sections/0/version", value: "s2"), PatchOperation(op: .replace, path: "/snapshot", value: "new"),
        ]
        var header = header
        header.sectionVersions = [:]
        return .jsonPatch(FeedDelta.JSONPatch(header: header, operations: operations))
    }

    @Test("A patch applies in every form and gives the item the server rendered, and survives the wire")
    func patchesApplyInEveryForm() throws {
        for delta in [batch(try patch()), sequential(try patch()), jsonPatch(version: after.versionText)] {
            #expect(try document().applying(delta) == expected(), "\(delta.format)")
            #expect(try FeedDelta(parsing: delta.json.serialized(), format: delta.format, since: delta.header.since) == delta, "\(delta.format)")
        }
    }

    @Test("A patch that does not reach the version it announces is refused in every form")
    func wrongVersionsAreRefused() throws {
        let wrong = "0000000000000bad"
        let mismatch = DeltaApplyError.itemVersionMismatch(item: "video:42", announced: wrong, computed: after.versionText)
        for delta in [batch(try patch(version: wrong)), sequential(try patch(version: wrong)), jsonPatch(version: wrong)] {
            #expect(throws: mismatch, "\(delta.format)") { try document().applying(delta) }
        }
        #expect(throws: DeltaApplyError.resultMismatch("/sections/0/items/0 had fields replaced but not its version")) {
            try document().applying(jsonPatch(version: after.versionText, replacingVersion: false))
        }
    }

    @Test("A patch of a field the item does not have, or where nothing is replaced, is refused")
    func misplacedPatchesAreRefused() throws {
        let stray = ItemPatch(version: "1", changes: [ItemPatch.Change(path: ["video", "stars"], value: 5)])
        #expect(throws: DeltaApplyError.payloadMismatch("reloaded_items[0] patches a field that item video:42 does not have as a value")) {
            try document().applying(batch(stray))
        }
        let insert = FeedDelta.sequential(
            FeedDelta.Sequential(header: header, operations: [.items(section: 0, .insert(at: 0, count: 1), values: [.patch(try patch())])]))
        #expect(throws: DeltaApplyError.payloadMismatch("operations[0] carries a patch for no item it replaces (insert(at: 0, count: 1), value 0)")) {
            try document().applying(insert)
        }
    }
}
