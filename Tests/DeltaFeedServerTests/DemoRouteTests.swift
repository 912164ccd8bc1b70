import DeltaFeedClient
import FeedStore
import Foundation
import Testing

/// `GET /demo` and the files the page loads: content types, caching, 404s, no way out of the
/// table of compiled-in files.
@Suite("Demo page routes", .serialized)
struct DemoRouteTests {
    @Test("GET /demo answers the page as HTML with a CSP, a strong ETag and no-cache; If-None-Match of it answers 304")
    func pageIsHTMLWithETag() throws {
        let server = try TestServer(seed: .init(users: 5, videos: 10, ads: 1, seed: 1))
        defer { server.stop() }
        let identity = ["Accept-Encoding": "identity"]
        let page = try server.request("GET", "/demo", token: nil, headers: identity)
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Cache-Control") == "no-cache")
        #expect(page.header("X-Content-Type-Options") == "nosniff")
        // Only this server's scripts, styles and requests: no inline script, no eval.
        let policy = try #require(page.header("Content-Security-Policy"))
        var directives: [String: String] = [:]
        for directive in policy.split(separator: ";") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            directives[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        #expect(directives["default-src"] == "'none'", "\(policy)")
        for source in ["script-src", "style-src", "connect-src"] { #expect(directives[source] == "'self'", "\(source): \(policy)") }
        #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "\(policy)")
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(html.contains("<script type=\"module\" src=\"demo/demo.js\">"))
        let scripts = html.ranges(of: "<script").map { html[$0.lowerBound...].prefix { $0 != ">" } }
        #expect(!scripts.isEmpty && scripts.allSatisfy { $0.contains(" src=") }, "every script is a file: \(scripts)")
        let etag = try #require(page.header("ETag"))
        #expect(etag.wholeMatch(of: /"[0-9a-f]{16}"/) != nil)

        let again = try server.request("GET", "/demo", token: nil, headers: ["If-None-Match": etag, "Accept-Encoding": "identity"])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == etag)
        let stale = try server.request("GET", "/demo", token: nil, headers: ["If-None-Match": "\"0000000000000000\""])
        #expect(stale.status == 200)
        #expect(stale.body == page.body)
        // Gzipped (the client asks for gzip unless told otherwise): the same page and ETag.
        #expect(stale.header("Content-Encoding") == "gzip")
        #expect(stale.header("ETag") == etag)
        #expect(stale.header("Vary") == "Accept-Encoding")

        let head = try server.request("HEAD", "/demo", token: nil, headers: identity)
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("ETag") == etag)
    }

    @Test("Every file the page and its modules refer to is served, with the content type of its extension")
    func everyReferencedFileIsServed() throws {
        let server = try TestServer(seed: .init(users: 5, videos: 10, ads: 1, seed: 1))
        defer { server.stop() }
        let page = String(decoding: try server.request("GET", "/demo", token: nil).body, as: UTF8.self)
        var pending = page.matches(of: /(?:href|src)="demo\/([^"]+)"/).map { String($0.1) }
        #expect(pending.sorted() == ["demo.css", "demo.js"])
        var served: Set<String> = []
        while let name = pending.popLast() {
            guard served.insert(name).inserted else { continue }
            let response = try server.request("GET", "/demo/\(name)", token: nil)
            #expect(response.status == 200, "\(name)")
            let type = response.header("Content-Type")
            if name.hasSuffix(".js") {
                #expect(type == "text/javascript; charset=utf-8", "\(name)")
                // Modules import their siblings as ./name.js.
                pending += String(decoding: response.body, as: UTF8.self).matches(of: /from '\.\/([^']+)'/).map { String($0.1) }
            } else {
                #expect(type == "text/css; charset=utf-8", "\(name)")
            }
            #expect(response.header("ETag") != nil)
            #expect(response.header("Content-Security-Policy") == nil)
        }
        #expect(served == ["demo.css", "demo.js", "feed-client.js", "feed-view.js"])
    }

    @Test("Unknown names, encoded path traversal and deeper paths under /demo answer 404 not_found")
    func unknownAssetsAre404() throws {
        let server = try TestServer(seed: .init(users: 5, videos: 10, ads: 1, seed: 1))
        defer { server.stop() }
        for path in [
            "/demo/missing.js", "/demo/..%2FPackage.swift", "/demo/%2e%2e", "/demo/..%2f..%2fetc%2fpasswd",
            "/demo/DemoAssets.swift", "/demo/feed-client.js/extra", "/demo/FEED-CLIENT.JS", "/demo/feed-client.js%00",
        ] {
            let response = try server.request("GET", path, token: nil)
            #expect(response.status == 404, "\(path)")
            #expect(response.header("Content-Type") == "application/json", "\(path)")
            #expect(try response.json()["error"]?["code"] == "not_found", "\(path)")
        }
        let post = try server.request("POST", "/demo/demo.js", raw: "{}")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
    }

    @Test("With the demo turned off, /demo and its files answer 404")
    func demoOffIs404() throws {
        let server = try TestServer(seed: .init(users: 5, videos: 10, ads: 1, seed: 1), demo: false)
        defer { server.stop() }
        #expect(try server.request("GET", "/demo", token: nil).status == 404)
        #expect(try server.request("GET", "/demo/feed-client.js", token: nil).status == 404)
    }
}
