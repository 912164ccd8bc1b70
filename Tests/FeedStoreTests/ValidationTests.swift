import FeedStore
import Foundation
import StoreOracle
import Testing

/// One invalid write and the field its error must name.
struct InvalidWrite: CustomTestStringConvertible, Sendable {
    let label: String
    let field: String
    let perform: @Sendable (any FeedStorage, _ author: Int64, _ video: Int64, _ ad: Int64) throws -> Void

    var testDescription: String { label }
}

private let url = "https://cdn.example/x.jpg"

let invalidWrites: [InvalidWrite] = [
    InvalidWrite(label: "empty handle", field: "handle") { s, _, _, _ in try s.createUser(handle: "", displayName: "X") },
    InvalidWrite(label: "upper-case handle", field: "handle") { s, _, _, _ in try s.createUser(handle: "Alice", displayName: "X") },
    InvalidWrite(label: "31-char handle", field: "handle") { s, _, _, _ in
        try s.createUser(handle: String(repeating: "a", count: 31), displayName: "X")
    },
    InvalidWrite(label: "handle with a dash", field: "handle") { s, _, _, _ in try s.createUser(handle: "a-b", displayName: "X") },
    InvalidWrite(label: "blank display name", field: "display_name") { s, _, _, _ in try s.createUser(handle: "ok", displayName: "  ") },
    InvalidWrite(label: "ftp avatar", field: "avatar_url") { s, _, _, _ in
        try s.createUser(handle: "ok", displayName: "X", avatarURL: "ftp://x/y.jpg")
    },
    InvalidWrite(label: "empty title", field: "title") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "", thumbnailURL: url, durationSeconds: 10)
    },
    InvalidWrite(label: "201-char title", field: "title") { s, a, _, _ in
        try s.createVideo(authorID: a, title: String(repeating: "é", count: 201), thumbnailURL: url, durationSeconds: 10)
    },
    InvalidWrite(label: "title with a newline", field: "title") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "two\nlines", thumbnailURL: url, durationSeconds: 10)
    },
    InvalidWrite(label: "relative thumbnail", field: "thumbnail_url") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "T", thumbnailURL: "/thumbs/1.jpg", durationSeconds: 10)
    },
    InvalidWrite(label: "thumbnail with a space", field: "thumbnail_url") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "T", thumbnailURL: "https://cdn.example/a b.jpg", durationSeconds: 10)
    },
    InvalidWrite(label: "scheme-only thumbnail", field: "thumbnail_url") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "T", thumbnailURL: "https://", durationSeconds: 10)
    },
    InvalidWrite(label: "zero duration", field: "duration_seconds") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "T", thumbnailURL: url, durationSeconds: 0)
    },
    InvalidWrite(label: "duration over 10 h", field: "duration_seconds") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "T", thumbnailURL: url, durationSeconds: 36_001)
    },
    InvalidWrite(label: "negative likes at creation", field: "like_count") { s, a, _, _ in
        try s.createVideo(authorID: a, title: "T", thumbnailURL: url, durationSeconds: 10, likeCount: -1)
    },
    InvalidWrite(label: "unknown author", field: "author_id") { s, _, _, _ in
        try s.createVideo(authorID: 999, title: "T", thumbnailURL: url, durationSeconds: 10)
    },
    InvalidWrite(label: "update: blank title", field: "title") { s, _, v, _ in try s.updateVideo(id: v, title: " \t") },
    InvalidWrite(label: "update: negative views", field: "view_count") { s, _, v, _ in try s.updateVideo(id: v, viewCount: -5) },
    InvalidWrite(label: "update: negative likes", field: "like_count") { s, _, v, _ in
        try s.updateVideo(id: v, title: "Fine title", likeCount: -1)
    },
    InvalidWrite(label: "update: bad thumbnail", field: "thumbnail_url") { s, _, v, _ in
        try s.updateVideo(id: v, thumbnailURL: "javascript:alert(1)")
    },
    InvalidWrite(label: "update: long duration", field: "duration_seconds") { s, _, v, _ in
        try s.updateVideo(id: v, durationSeconds: 99_999)
    },
    InvalidWrite(label: "counts going negative", field: "like_count") { s, _, v, _ in
        try s.addToVideoCounts(id: v, likes: -1_000)
    },
    InvalidWrite(label: "ad weight 0", field: "weight") { s, _, _, _ in
        try s.createAd(advertiser: "A", title: "T", imageURL: url, targetURL: url, weight: 0)
    },
    InvalidWrite(label: "ad weight 1001", field: "weight") { s, _, _, _ in
        try s.createAd(advertiser: "A", title: "T", imageURL: url, targetURL: url, weight: 1001)
    },
    InvalidWrite(label: "ad without advertiser", field: "advertiser") { s, _, _, _ in
        try s.createAd(advertiser: "", title: "T", imageURL: url, targetURL: url, weight: 1)
    },
    InvalidWrite(label: "ad bad image", field: "image_url") { s, _, _, _ in
        try s.createAd(advertiser: "A", title: "T", imageURL: "img.png", targetURL: url, weight: 1)
    },
    InvalidWrite(label: "ad bad target", field: "target_url") { s, _, _, _ in
        try s.createAd(advertiser: "A", title: "T", imageURL: url, targetURL: "mailto:x@y", weight: 1)
    },
    InvalidWrite(label: "ad update: empty title", field: "title") { s, _, _, ad in try s.updateAd(id: ad, title: "") },
    InvalidWrite(label: "ad update: weight", field: "weight") { s, _, _, ad in try s.updateAd(id: ad, weight: -3, active: false) },
    InvalidWrite(label: "self-follow", field: "followee_id") { s, a, _, _ in try s.follow(follower: a, followee: a) },
    InvalidWrite(label: "user update: blank name", field: "display_name") { s, a, _, _ in try s.updateUser(id: a, displayName: "") },
    InvalidWrite(label: "snapshot id with spaces", field: "id") { s, a, _, _ in
        try s.saveSnapshot(id: "a b", viewer: a, structure: Data())
    },
]

@Suite("Validation")
struct ValidationTests {
    @Test("Each invalid write names its field and leaves the database unchanged", arguments: Backend.all, invalidWrites)
    func invalidWriteNamesFieldAndChangesNothing(_ backend: Backend, _ write: InvalidWrite) throws {
        let store = try makeStore(backend)
        let author = try store.createUser(handle: "author", displayName: "Author").id
        let video = try makeVideo(store, author: author, likes: 3).id
        let ad = try store.createAd(advertiser: "Acme", title: "Buy", imageURL: url, targetURL: url, weight: 5).id
        try store.saveSnapshot(id: "s1", viewer: author, structure: Data([1, 2, 3]))
        let digest = try store.contentDigest()
        let version = store.changeVersion
        let counts = try store.counts()

        #expect {
            try write.perform(store, author, video, ad)
        } throws: { error in
            guard case let .invalid(field, reason) = error as? FeedStoreError else { return false }
            return field == write.field && !reason.isEmpty
        }
        #expect(try store.contentDigest() == digest)
        #expect(store.changeVersion == version)
        #expect(try store.storedChangeVersion() == version)
        #expect(try store.counts() == counts)
    }

    @Test("A taken handle is a conflict on handle", arguments: Backend.all)
    func duplicateHandleIsConflict(_ backend: Backend) throws {
        let store = try makeStore(backend)
        try store.createUser(handle: "alice", displayName: "Alice")
        let version = store.changeVersion
        #expect(throws: FeedStoreError.conflict(field: "handle", reason: "handle alice is already taken")) {
            try store.createUser(handle: "alice", displayName: "Other Alice")
        }
        #expect(store.changeVersion == version)
        #expect(try store.counts().users == 1)
    }

    @Test("Following twice is a conflict and following a missing user is not found", arguments: Backend.all)
    func followConflictsAndMissingUsers(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let ids = try makeUsers(2, in: store)
        try store.follow(follower: ids[0], followee: ids[1])
        #expect(throws: FeedStoreError.conflict(field: "followee_id", reason: "user 1 already follows user 2")) {
            try store.follow(follower: ids[0], followee: ids[1])
        }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "77")) {
            try store.follow(follower: ids[0], followee: 77)
        }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "78")) {
            try store.follow(follower: 78, followee: ids[0])
        }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "78")) {  // the follower is checked first
            try store.follow(follower: 78, followee: 79)
        }
        #expect(throws: FeedStoreError.notFound(entity: .follow, id: "2->1")) {
            try store.unfollow(follower: ids[1], followee: ids[0])
        }
        #expect(try store.read { try $0.user(id: ids[1]) }?.followerCount == 1)
    }

    @Test("A video by a missing author is invalid on author_id and stores nothing", arguments: Backend.all)
    func videoOfAMissingAuthor(_ backend: Backend) throws {
        let store = try makeStore(backend)
        try makeUsers(1, in: store)
        let version = store.changeVersion
        #expect(throws: FeedStoreError.invalid(field: "author_id", reason: "no user with id 42")) {
            try store.createVideo(authorID: 42, title: "T", thumbnailURL: "https://cdn.example/t.jpg", durationSeconds: 10)
        }
        #expect(store.changeVersion == version)
        #expect(try store.counts().videos == 0)
        _ = try makeVideo(store, author: 1)  // and the next one by a real author is stored
        #expect(try store.counts().videos == 1)
    }

    @Test("Updating or deleting a missing row is not found", arguments: Backend.all)
    func missingRowsAreNotFound(_ backend: Backend) throws {
        let store = try makeStore(backend)
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "5")) { try store.updateVideo(id: 5, likeCount: 1) }
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "5")) { try store.updateVideo(id: 5) }
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "5")) { try store.deleteVideo(id: 5) }
        #expect(throws: FeedStoreError.notFound(entity: .video, id: "5")) { try store.addToVideoCounts(id: 5, likes: 1) }
        #expect(throws: FeedStoreError.notFound(entity: .ad, id: "6")) { try store.updateAd(id: 6, weight: 3) }
        #expect(throws: FeedStoreError.notFound(entity: .ad, id: "6")) { try store.deleteAd(id: 6) }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "7")) { try store.updateUser(id: 7, displayName: "X") }
        #expect(throws: FeedStoreError.notFound(entity: .user, id: "7")) { try store.deleteUser(id: 7) }
        #expect(store.changeVersion == 0)
    }

    @Test("Valid edge values are accepted and text is trimmed", arguments: Backend.all)
    func edgeValuesAreAccepted(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let user = try store.createUser(
            handle: String(repeating: "z", count: 30), displayName: "  Zed  ", avatarURL: "http://a.example/z.png")
        #expect(user.displayName == "Zed")
        // 200 code points as sent (the limit counts what JSON Schema's maxLength counts), trimmed.
        let video = try store.createVideo(
            authorID: user.id, title: " " + String(repeating: "界", count: 198) + "\n",
            thumbnailURL: "http://h", durationSeconds: 36_000)
        #expect(video.title.count == 198)
        #expect(video.durationSeconds == 36_000)
        let ad = try store.createAd(advertiser: "A", title: "T", imageURL: url, targetURL: url, weight: 1000, active: false)
        #expect(ad.weight == 1000)
        #expect(!ad.active)
    }

    @Test("Error descriptions are readable")
    func errorDescriptions() {
        #expect(FeedStoreError.invalid(field: "title", reason: "must not be empty").description == "invalid title: must not be empty")
        #expect(FeedStoreError.notFound(entity: .video, id: "3").description == "video 3 not found")
    }

    @Test("A snapshot id is 1 to 128 printable ASCII bytes without spaces; a long one is refused for its length")
    func snapshotIDs() throws {
        func reason(_ id: String) -> String? {
            do {
                _ = try Validate.snapshotID(id)
                return nil
            } catch {
                guard case .invalid(field: "id", let reason) = error else { return "\(error)" }
                return reason
            }
        }
        #expect(reason("0123456789abcdef0123456789abcdef") == nil)
        #expect(reason(String(repeating: "~", count: 128)) == nil)
        #expect(reason("") == "must be 1 to 128 characters")
        #expect(reason(String(repeating: "a", count: 129)) == "must be 1 to 128 characters")
        // Length first: a long id with a space is refused for its length.
        #expect(reason(String(repeating: "a", count: 200) + " ") == "must be 1 to 128 characters")
        for id in ["a b", "a\tb", "a\u{7F}", "é", "a\nb"] {
            #expect(reason(id) == "must be printable ASCII without spaces", "\(id.debugDescription)")
        }
    }
}
