import FeedStore
import Foundation
import StoreOracle
import Testing

/// Text fields are limited in UTF-8 bytes as well as in characters, counted as JSON Schema's
/// `maxLength` counts them (code points, on the text as sent), and text that shows nothing (white
/// space, format and control characters, combining marks without a base) is refused where a
/// person must read the field. Issue 9: a 200-character title of letters each carrying 2,400
/// combining accents (960,200 bytes) was stored and inflated every feed that showed it.
@Suite("Text limits in bytes, and invisible text")
struct TextLimitTests {
    /// `count` letters, each followed by `marks` combining acute accents (U+0301, 2 bytes each):
    /// `count` characters however many bytes.
    static func accented(_ count: Int, marks: Int) -> String {
        String(repeating: "a" + String(repeating: "\u{301}", count: marks), count: count)
    }

    /// One invalid text and the field its error must name.
    struct Case: CustomTestStringConvertible, Sendable {
        let label: String
        let field: String
        let perform: @Sendable (any FeedStorage, _ author: Int64, _ video: Int64, _ ad: Int64) throws -> Void
        var testDescription: String { label }
    }

    static let url = "https://cdn.example/x.jpg"

    static let zalgoTitle = accented(200, marks: 2_400)

    static let oversized: [Case] = [
        Case(label: "issue 9's 960,200-byte title of 200 characters", field: "title") { s, a, _, _ in
            try s.createVideo(authorID: a, title: zalgoTitle, thumbnailURL: url, durationSeconds: 10)
        },
        Case(label: "title of 200 characters, 801 bytes", field: "title") { s, _, v, _ in
            // 199 one-byte letters and one letter with 301 accents: 200 characters, 801 bytes.
            try s.updateVideo(id: v, title: String(repeating: "b", count: 199) + accented(1, marks: 301))
        },
        Case(label: "display name of 60 characters, 241 bytes", field: "display_name") { s, _, _, _ in
            try s.createUser(handle: "zed", displayName: String(repeating: "z", count: 59) + accented(1, marks: 91))
        },
        Case(label: "display name update over its byte cap", field: "display_name") { s, a, _, _ in
            try s.updateUser(id: a, displayName: accented(60, marks: 40))
        },
        Case(label: "advertiser of 100 characters, 401 bytes", field: "advertiser") { s, _, _, _ in
            try s.createAd(advertiser: String(repeating: "c", count: 99) + accented(1, marks: 151), title: "T", imageURL: url, targetURL: url, weight: 1)
        },
        Case(label: "ad title over its byte cap", field: "title") { s, _, _, ad in
            try s.updateAd(id: ad, title: accented(10, marks: 100))
        },
        Case(label: "title of 200 grapheme clusters, 201 code points", field: "title") { s, a, _, _ in
            try s.createVideo(authorID: a, title: String(repeating: "b", count: 199) + "e\u{301}", thumbnailURL: url, durationSeconds: 10)
        },
        Case(label: "title of 200 letters padded with a space (201 as sent, as maxLength counts)", field: "title") { s, _, v, _ in
            try s.updateVideo(id: v, title: " " + String(repeating: "b", count: 200))
        },
        Case(label: "display name of 60 letters padded with NEL", field: "display_name") { s, _, _, _ in
            try s.createUser(handle: "zed", displayName: String(repeating: "z", count: 60) + "\u{85}")
        },
        Case(label: "avatar URL of 2049 bytes", field: "avatar_url") { s, _, _, _ in
            try s.createUser(handle: "zed", displayName: "Zed", avatarURL: "https://a.example/" + String(repeating: "x", count: 2049 - 18))
        },
    ]

    static let invisible: [(label: String, text: String)] = [
        ("zero width space", "\u{200B}"),
        ("word joiner and byte order mark", "\u{2060}\u{FEFF}"),
        ("bidi override", "\u{202E}"),
        ("bidi isolates", "\u{2066}\u{2069}"),
        ("left-to-right and right-to-left marks", "\u{200E}\u{200F}"),
        ("combining marks without a base", "\u{301}\u{302}"),
        ("a space then a combining mark", " \u{301}"),
        ("variation selector", "\u{FE0F}"),
        ("soft hyphen", "\u{AD}"),
        ("Hangul filler", "\u{3164}"),
        ("Braille blank", "\u{2800}"),
        ("no-break and ideographic spaces", "\u{A0}\u{3000}"),
        ("tag characters", "\u{E0041}\u{E007F}"),
    ]

    static let invisibleWrites: [Case] = invisible.flatMap { label, text -> [Case] in
        [
            Case(label: "title: \(label)", field: "title") { s, a, _, _ in
                try s.createVideo(authorID: a, title: text, thumbnailURL: url, durationSeconds: 10)
            },
            Case(label: "title update: \(label)", field: "title") { s, _, v, _ in try s.updateVideo(id: v, title: text) },
            Case(label: "display name: \(label)", field: "display_name") { s, _, _, _ in
                try s.createUser(handle: "zed", displayName: text)
            },
            Case(label: "display name update: \(label)", field: "display_name") { s, a, _, _ in
                try s.updateUser(id: a, displayName: text)
            },
            Case(label: "advertiser: \(label)", field: "advertiser") { s, _, _, ad in try s.updateAd(id: ad, advertiser: text) },
            Case(label: "ad title: \(label)", field: "title") { s, _, _, ad in try s.updateAd(id: ad, title: text) },
            Case(label: "handle: \(label)", field: "handle") { s, _, _, _ in try s.createUser(handle: text, displayName: "Zed") },
        ]
    }

    func expectRefused(_ write: Case, on backend: Backend) throws {
        let store = try makeStore(backend)
        let author = try store.createUser(handle: "author", displayName: "Author").id
        let video = try makeVideo(store, author: author).id
        let ad = try store.createAd(advertiser: "Acme", title: "Buy", imageURL: TextLimitTests.url, targetURL: TextLimitTests.url, weight: 5).id
        let digest = try store.contentDigest()
        let version = store.changeVersion
        #expect {
            try write.perform(store, author, video, ad)
        } throws: { error in
            guard case let .invalid(field, reason) = error as? FeedStoreError else { return false }
            return field == write.field && !reason.isEmpty
        }
        #expect(try store.contentDigest() == digest, "a refused write changes nothing")
        #expect(store.changeVersion == version)
    }

    @Test("Text over its byte cap is refused naming the field, whatever its character count", arguments: Backend.all, oversized)
    func textOverItsByteCapIsRefused(_ backend: Backend, _ write: Case) throws {
        try expectRefused(write, on: backend)
    }

    @Test("Text that shows nothing is refused naming the field", arguments: Backend.all, invisibleWrites)
    func invisibleOnlyTextIsRefused(_ backend: Backend, _ write: Case) throws {
        try expectRefused(write, on: backend)
    }

    @Test("Text at the caps is accepted: 200 code points of 4 bytes, combining sequences counted per code point", arguments: Backend.all)
    func textAtTheCapsIsAccepted(_ backend: Backend) throws {
        let store = try makeStore(backend)
        // 200 characters of 4-byte emoji: exactly 800 bytes.
        let emoji = String(repeating: "🎬", count: 200)
        let user = try store.createUser(handle: "zed", displayName: String(repeating: "😀", count: 60))
        let video = try store.createVideo(authorID: user.id, title: emoji, thumbnailURL: TextLimitTests.url, durationSeconds: 10)
        #expect(video.title == emoji)
        // 200 code points, 150 characters, with accents: fine.
        let accented = String(repeating: "b", count: 100) + TextLimitTests.accented(50, marks: 1)
        #expect(try store.updateVideo(id: video.id, title: accented).title == accented)
        // 198 letters and two white-space code points: 200 as sent, stored trimmed.
        #expect(try store.updateVideo(id: video.id, title: "\t" + String(repeating: "c", count: 198) + "\u{85}").title == String(repeating: "c", count: 198))
        let ad = try store.createAd(
            advertiser: String(repeating: "é", count: 100), title: "T", imageURL: TextLimitTests.url, targetURL: TextLimitTests.url, weight: 1)
        #expect(ad.advertiser.utf8.count == 200)
    }

    @Test("Visible text that also holds invisible characters is kept as sent (after trimming)", arguments: Backend.all)
    func visibleTextWithInvisibleCharactersIsAccepted(_ backend: Backend) throws {
        let store = try makeStore(backend)
        let user = try store.createUser(handle: "zed", displayName: "\u{200B}Zed\u{200D}")
        #expect(user.displayName == "\u{200B}Zed\u{200D}")
        for title in ["e\u{301}", "👩‍👩‍👧", "שלום\u{200F}", "a\u{2060}b", "\u{200E}x", "·"] {
            let video = try store.createVideo(authorID: user.id, title: title, thumbnailURL: TextLimitTests.url, durationSeconds: 10)
            #expect(video.title == title)
        }
    }
}

@Suite("URLs are checked byte by byte")
struct URLValidationTests {
    @Test(
        "A URL whose host starts with an extending code point still starts with http:// (issue 9's contract run)",
        arguments: [
            "http://\u{1F3FB}\u{A9}", "https://\u{E013F}x.example", "http://\u{301}.example/a", "https://\u{200D}a",
        ])
    func extendingCodePointAfterTheScheme(url: String) throws {
        let store = try makeStore(.sqlite)
        let user = try store.createUser(handle: "zed", displayName: "Zed", avatarURL: url)
        #expect(user.avatarURL == url)
    }

    @Test("Scheme and host rules still hold", arguments: ["http:/", "https://", "http:///x", "HTTP://x", "ftp://x", "http://a b"])
    func malformedURLsAreRefused(url: String) throws {
        let store = try makeStore(.sqlite)
        #expect(throws: FeedStoreError.self) { try store.createUser(handle: "zed", displayName: "Zed", avatarURL: url) }
    }
}
