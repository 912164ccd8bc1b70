import DeltaFeedClient
import FeedStore
import Foundation
import Testing

/// Writes `Tests/Fixtures/deltas/*.json`: the golden delta fixtures that every apply
/// implementation must pass (FeedWire's and ListDiff's in their test targets, the web client's in
/// `scripts/apply-fixtures.mjs`). Each is a page before a write, the page after it, and the delta
/// between them in all three forms, exactly as this server sends them.
///
/// Regenerate after a change to the wire format: `DELTAFEED_WRITE_FIXTURES=1 swift test --filter
/// GoldenDeltaFixtureWriter`. Without the variable it does nothing.
@Suite("Golden delta fixtures")
struct GoldenDeltaFixtureWriter {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/deltas")

    @Test(
        "The golden delta fixtures are written from what the server sends",
        .enabled(if: ProcessInfo.processInfo.environment["DELTAFEED_WRITE_FIXTURES"] == "1", "set DELTAFEED_WRITE_FIXTURES=1 to write them"))
    func writeFixtures() throws {
        let server = try TestServer()
        defer { server.stop() }
        let viewer: Int64 = 3
        // With a width, so every section carries its layout (frames) and the page its prefetch hint.
        let query = FeedQuery(limit: 5, width: 390)
        func ok(_ response: FeedHTTPResponse) throws -> JSONValue {
            guard (200...299).contains(response.status) else { throw TestFailure("\(response.status): \(String(decoding: response.body, as: UTF8.self))") }
            return response.body.isEmpty ? .null : try response.json()
        }
        func videos(_ document: FeedDocument) -> [Int64] {
            document.sections.flatMap(\.items).compactMap { $0.kind == "video" ? $0.data["video"]?["id"]?.int64Value : nil }
        }
        func firstGridAuthor(_ document: FeedDocument) -> Int64? {
            document.sections.first { $0.kind.hasPrefix("video_grid") }?.items.first?.data["author"]?["id"]?.int64Value
        }
        let scenarios: [(name: String, description: String, write: (FeedDocument) throws -> Void)] = [
            (
                "like", "a like count changes: one item updated in place",
                { document in
                    _ = try ok(try server.request("PATCH", "/v1/videos/\(videos(document)[0])", json: ["like_count": 4321]))
                }
            ),
            (
                "counts", "a like count and a view count change on one video: two fields of one item",
                { document in
                    _ = try ok(try server.request("PATCH", "/v1/videos/\(videos(document)[1])", json: ["like_count": 7, "view_count": 12_345]))
                }
            ),
            (
                "ad-title", "an ad shown on the page is retitled: one full-width item updated in place",
                { document in
                    let shown = document.sections.flatMap(\.items).first { $0.kind == "ad" }?.data["id"]?.int64Value
                    let ad = try #require(shown, "no ad on the page")
                    _ = try ok(try server.request("PATCH", "/v1/ads/\(ad)", json: ["title": "Now 20 % off"]))
                }
            ),
            (
                "title", "a title changes: one item updated in place",
                { document in
                    _ = try ok(try server.request("PATCH", "/v1/videos/\(videos(document)[1])", json: ["title": "A new \"title\" — café 🎉"]))
                }
            ),
            (
                "new-video", "a followed author posts: an item inserted at the top, the grid's items shift across sections",
                { document in
                    let author = try #require(firstGridAuthor(document))
                    _ = try ok(
                        try server.request(
                            "POST", "/v1/videos",
                            json: ["author_id": .int(author), "title": "Fresh", "thumbnail_url": "https://cdn.example/fresh.jpg", "duration_seconds": 42]))
                }
            ),
            (
                "delete-video", "a shown video is deleted: an item removed, the rest shift up",
                { document in
                    _ = try ok(try server.request("DELETE", "/v1/videos/\(videos(document)[2])"))
                }
            ),
            (
                "unfollow", "the viewer unfollows the newest author: the grid is rebuilt, sections deleted and inserted",
                { document in
                    let author = try #require(firstGridAuthor(document))
                    _ = try ok(try server.request("DELETE", "/v1/users/\(viewer)/follows/\(author)"))
                }
            ),
            (
                "follow", "the viewer follows a suggested user: suggestions change, grid sections move",
                { document in
                    let suggested = document.sections.first { $0.kind == "follow_suggestions" }?.items.first?.data["user"]?["id"]?.int64Value
                    let user = try #require(suggested, "no suggestion on the page")
                    _ = try ok(try server.request("PUT", "/v1/users/\(viewer)/follows/\(user)"))
                }
            ),
            (
                "ads-off", "every ad is switched off: ad sections deleted, sections below move up and new ones enter",
                { _ in
                    for ad in 1...40 { _ = try? server.request("PATCH", "/v1/ads/\(ad)", json: ["active": false]) }
                }
            ),
            (
                "ads-on", "the ads come back: sections inserted between the grid sections",
                { _ in
                    for ad in 1...40 { _ = try? server.request("PATCH", "/v1/ads/\(ad)", json: ["active": true]) }
                }
            ),
            (
                "mixed", "a like, a title and a new video at once",
                { document in
                    let shown = videos(document)
                    _ = try ok(try server.request("PATCH", "/v1/videos/\(shown[3])", json: ["like_count": 99_999]))
                    _ = try ok(try server.request("PATCH", "/v1/videos/\(shown[0])", json: ["title": "Retitled"]))
                    let author = try #require(firstGridAuthor(document))
                    _ = try ok(
                        try server.request(
                            "POST", "/v1/videos",
                            json: ["author_id": .int(author), "title": "Also new", "thumbnail_url": "https://cdn.example/new.jpg", "duration_seconds": 7]))
                }
            ),
        ]
        try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
        for scenario in scenarios {
            try write(scenario.name, scenario.description, server: server, viewer: viewer, query: query, change: scenario.write)
        }
        // A footer that changes: on a small store the carousel shows every candidate, so a new
        // user is one card more and "See all" counts one more (a field patch of the footer, a
        // wider carousel: a new layout), while the grid stays as it is.
        let small = try TestServer(seed: DemoSeed(users: 8, videos: 120, ads: 2, seed: 3))
        defer { small.stop() }
        try write(
            "see-all", "a user joins: one card more in the carousel, the See all footer's count patched, the carousel's layout replaced",
            server: small, viewer: 1, query: FeedQuery(limit: 200, width: 390)
        ) { _ in
            let response = try small.request(
                "POST", "/v1/users", json: ["handle": "new_face", "display_name": "New Face", "avatar_url": "https://cdn.example/new.jpg"])
            guard (200...299).contains(response.status) else { throw TestFailure("POST /v1/users answered \(response.status)") }
        }
    }

    /// Writes one fixture: the page, `change`, the page again and the delta in every form.
    private func write(
        _ name: String, _ description: String, server: TestServer, viewer: Int64, query: FeedQuery, change: (FeedDocument) throws -> Void
    ) throws {
        let before = try server.freshFeed(viewer: viewer, query: query)
        try change(before.document)
        let after = try server.freshFeed(viewer: viewer, query: query)
        var deltas: [String: JSONValue] = [:]
        for format in FeedDelta.Format.allCases {
            let response = try server.request("GET", "/v1/users/\(viewer)/feed/delta?since=\(before.document.snapshot)&format=\(format.rawValue)")
            #expect(response.status == 200, "\(name) \(format.rawValue): \(response.status)")
            deltas[format.rawValue] = try response.json()
        }
        let fixture: JSONValue = [
            "name": .string(name), "description": .string(description), "before": before.json, "after": after.json, "deltas": .object(deltas),
        ]
        try Data(fixture.serialized() + [0x0A]).write(to: Self.directory.appendingPathComponent("\(name).json"))
    }
}
