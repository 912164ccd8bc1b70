import DeltaFeedClient
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
        let query = FeedQuery(limit: 5)
        func page() throws -> (json: JSONValue, document: FeedDocument) { try server.freshFeed(viewer: viewer, query: query) }
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
            let before = try page()
            try scenario.write(before.document)
            let after = try page()
            var deltas: [String: JSONValue] = [:]
            for format in FeedDelta.Format.allCases {
                let response = try server.request("GET", "/v1/users/\(viewer)/feed/delta?since=\(before.document.snapshot)&format=\(format.rawValue)")
                #expect(response.status == 200, "\(scenario.name) \(format.rawValue): \(response.status)")
                deltas[format.rawValue] = try response.json()
            }
            let fixture: JSONValue = [
                "name": .string(scenario.name), "description": .string(scenario.description), "before": before.json, "after": after.json,
                "deltas": .object(deltas),
            ]
            try Data(fixture.serialized() + [0x0A]).write(to: Self.directory.appendingPathComponent("\(scenario.name).json"))
        }
    }
}
