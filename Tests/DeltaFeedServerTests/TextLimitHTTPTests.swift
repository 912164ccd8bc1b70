import DeltaFeedClient
import FeedStore
import Foundation
import StoreOracle
import Testing

/// Issue 9's reproduction over HTTP: a 200-character title of 960,200 bytes fits in a 1 MiB body
/// and was stored; it must be 422 naming the field, and so must text that shows nothing.
@Suite("Text limits over HTTP", .serialized)
struct TextLimitHTTPTests {
    @Test("A 960,200-byte title of 200 characters is 422 invalid_field on title, and nothing is stored")
    func zalgoTitleIs422() throws {
        let server = try TestServer(seed: DemoSeed(users: 3, videos: 3, ads: 1, seed: 2))
        defer { server.stop() }
        let title = String(repeating: "a" + String(repeating: "\u{301}", count: 2_400), count: 200)
        #expect(title.count == 200)
        #expect(title.utf8.count == 960_200)
        let before = try server.store.contentDigest()
        for (method, path, body) in [
            ("PATCH", "/v1/videos/1", ["title": JSONValue.string(title)] as JSONValue),
            ("POST", "/v1/videos", ["author_id": 1, "title": .string(title), "thumbnail_url": "https://x.example/t.jpg", "duration_seconds": 5]),
            ("PATCH", "/v1/ads/1", ["title": .string(title)]),
        ] {
            let response = try server.request(method, path, json: body)
            #expect(response.status == 422, "\(method) \(path)")
            #expect(try response.json()["error"]?["code"] == "invalid_field")
            guard case .string(let message)? = try response.json()["error"]?["message"] else {
                Issue.record("no message")
                continue
            }
            #expect(message.hasPrefix("title: "), "\(message)")
            #expect(message.contains("bytes"), "\(message)")
        }
        #expect(try server.store.contentDigest() == before)
    }

    @Test(
        "Invisible-only text is 422 naming the field",
        arguments: [
            ("PATCH", "/v1/videos/1", "title"), ("PATCH", "/v1/ads/1", "advertiser"), ("PATCH", "/v1/ads/1", "title"),
        ])
    func invisibleTextIs422(method: String, path: String, field: String) throws {
        let server = try TestServer(seed: DemoSeed(users: 3, videos: 3, ads: 1, seed: 2))
        defer { server.stop() }
        for text in ["\u{200B}", "\u{2060}\u{FEFF}", "\u{202E}\u{2066}", "\u{301}\u{301}"] {
            let response = try server.request(method, path, json: [field: .string(text)])
            #expect(response.status == 422, "\(field) \(text.unicodeScalars.map { String($0.value, radix: 16) })")
            guard case .string(let message)? = try response.json()["error"]?["message"] else { continue }
            #expect(message.hasPrefix("\(field): "), "\(message)")
        }
        let user = try server.request("POST", "/v1/users", json: ["handle": "nobody", "display_name": "\u{200B}\u{200F}"])
        #expect(user.status == 422)
        #expect(try user.json()["error"]?["message"]?.description.contains("display_name: ") == true)
    }
}
