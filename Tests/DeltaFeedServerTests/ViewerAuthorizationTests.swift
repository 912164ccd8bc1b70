import DeltaFeedClient
import DeltaFeedServer
import Foundation
import JSONBytes
import JWTKit
import Testing

/// Viewer authentication (issue 9): with `--viewer-secret`, a viewer's feed, deltas and profile
/// need a token issued for that viewer, or the admin token. Without it, nothing changes.
@Suite("Viewer tokens", .serialized)
struct ViewerAuthorizationTests {
    static let secret = "a viewer secret long enough for HS256 and for HS384 too"

    /// The four routes that read as a viewer, for viewer `id`.
    static func viewerRoutes(_ id: Int64) -> [(method: String, path: String, body: String?)] {
        [
            ("GET", "/v1/users/\(id)/feed?limit=5", nil),
            ("GET", "/v1/users/\(id)/feed/delta?since=00000000000000000000000000000000", nil),
            ("POST", "/v1/users/\(id)/feed/delta", #"{"sections":[]}"#),
            ("GET", "/v1/users/\(id)", nil),
        ]
    }

    func withServer(_ body: (TestServer, ViewerTokens) throws -> Void) async throws {
        let tokens = try await ViewerTokens(secret: ViewerAuthorizationTests.secret)
        let server = try TestServer(viewerTokens: tokens)
        defer { server.stop() }
        try body(server, tokens)
    }

    func token(_ tokens: ViewerTokens, viewer: Int64, expiresIn seconds: TimeInterval = 3600) async throws -> String {
        try await tokens.token(viewer: viewer, expiresAt: Date(timeIntervalSinceNow: seconds))
    }

    @Test("Without a token every viewer route is 401 with WWW-Authenticate: Bearer")
    func missingTokenIs401() async throws {
        try await withServer { server, _ in
            for route in ViewerAuthorizationTests.viewerRoutes(1) {
                let response = try server.request(route.method, route.path, raw: route.body, token: nil)
                #expect(response.status == 401, "\(route.method) \(route.path)")
                #expect(try response.errorCode() == "unauthorized")
                #expect(response.header("WWW-Authenticate") == "Bearer")
            }
        }
    }

    @Test("The viewer's own token reads their feed, deltas and profile; another viewer's is 403")
    func ownTokenReadsOthersAre403() async throws {
        let tokens = try await ViewerTokens(secret: ViewerAuthorizationTests.secret)
        let one = try await token(tokens, viewer: 1)
        let server = try TestServer(viewerTokens: tokens)
        defer { server.stop() }
        for route in ViewerAuthorizationTests.viewerRoutes(1) {
            let response = try server.request(route.method, route.path, raw: route.body, token: one)
            // A `since` never issued is 410 once the token has been accepted.
            #expect(
                [200, 410].contains(response.status), "\(route.method) \(route.path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        for route in ViewerAuthorizationTests.viewerRoutes(2) {
            let response = try server.request(route.method, route.path, raw: route.body, token: one)
            #expect(response.status == 403, "\(route.method) \(route.path)")
            #expect(try response.errorCode() == "forbidden")
            #expect(String(decoding: response.body, as: UTF8.self).contains("for viewer 1, not 2"))
        }
    }

    @Test("The admin token reads any viewer")
    func adminTokenReadsAnyViewer() async throws {
        try await withServer { server, _ in
            for viewer: Int64 in [1, 2, 3] {
                let response = try server.request("GET", "/v1/users/\(viewer)/feed?limit=5", token: TestServer.adminToken)
                #expect(response.status == 200)
            }
        }
    }

    @Test("Expired, forged, re-signed, unsigned and tampered tokens are 401 invalid_token")
    func refusedTokens() async throws {
        let tokens = try await ViewerTokens(secret: ViewerAuthorizationTests.secret)
        let valid = try await token(tokens, viewer: 1)
        let expired = try await token(tokens, viewer: 1, expiresIn: -5)
        let otherSecret = try await ViewerTokens(secret: String(repeating: "x", count: 40))
        let forged = try await token(otherSecret, viewer: 1)
        // The same secret under HS384: the algorithm is the server's choice, not the token's.
        let hs384 = try await JWTKeyCollection()
            .add(hmac: HMACKey(from: ViewerAuthorizationTests.secret), digestAlgorithm: .sha384)
            .sign(ViewerClaims(sub: "1", exp: ExpirationClaim(value: Date(timeIntervalSinceNow: 3600)), iat: nil))
        let parts = valid.split(separator: ".").map(String.init)
        let unsigned = base64URL(#"{"alg":"none","typ":"JWT"}"#) + "." + parts[1] + "."
        // Viewer 2's claims under viewer 1's signature.
        let payload2 = base64URL(#"{"sub":"2","exp":\#(Int(Date().timeIntervalSince1970) + 3600)}"#)
        let tampered = parts[0] + "." + payload2 + "." + parts[2]
        let noExpiry = try await JWTKeyCollection()
            .add(hmac: HMACKey(from: ViewerAuthorizationTests.secret), digestAlgorithm: .sha256)
            .sign(SubjectOnly(sub: "1"))
        let server = try TestServer(viewerTokens: tokens)
        defer { server.stop() }
        let cases = [
            ("expired", expired, "expired"), ("another secret", forged, "signature"), ("HS384", hs384, "HS256"),
            ("alg none", unsigned, "HS256"), ("tampered payload", tampered, "signature"), ("no exp", noExpiry, "not a JWT"),
            ("garbage", "not.a.token", "not a JWT"),
        ]
        for (name, token, reason) in cases {
            let response = try server.request("GET", "/v1/users/2/feed?limit=5", token: token)
            #expect(response.status == 401, "\(name)")
            #expect(try response.errorCode() == "invalid_token", "\(name)")
            #expect(response.header("WWW-Authenticate") == #"Bearer error="invalid_token""#, "\(name)")
            #expect(String(decoding: response.body, as: UTF8.self).contains(reason), "\(name): \(String(decoding: response.body, as: UTF8.self))")
        }
        #expect(try server.request("GET", "/v1/users/1/feed?limit=5", token: valid).status == 200)
    }

    @Test("Writes still take the admin token only, and videos stay public")
    func writesAndVideosUnchanged() async throws {
        let tokens = try await ViewerTokens(secret: ViewerAuthorizationTests.secret)
        let one = try await token(tokens, viewer: 1)
        let server = try TestServer(viewerTokens: tokens)
        defer { server.stop() }
        let write = try server.request("PATCH", "/v1/videos/1", json: .object(["like_count": .int(3)]), token: one)
        #expect(write.status == 403)
        #expect(try server.request("PATCH", "/v1/videos/1", json: .object(["like_count": .int(3)])).status == 200)
        #expect(try server.request("GET", "/v1/videos/1", token: nil).status == 200)
    }

    @Test("With a viewer secret, POST /v1/diff, GET /healthz and GET /metrics still answer without a token")
    func diffHealthAndMetricsStayPublic() async throws {
        try await withServer { server, _ in
            let diff = try server.request("POST", "/v1/diff", json: ["old": [1, 2, 3], "new": [3, 1, 2]], token: nil)
            #expect(diff.status == 200, "\(String(decoding: diff.body, as: UTF8.self))")
            #expect(try diff.json()["moves"] != nil)
            let health = try server.request("GET", "/healthz", token: nil)
            #expect(health.status == 200)
            #expect(try health.json() == ["status": "ok"])
            let metrics = try server.request("GET", "/metrics", token: nil)
            #expect(metrics.status == 200)
            #expect(String(decoding: metrics.body, as: UTF8.self).contains("http_requests_total"))
        }
    }

    @Test("The reference client sends its token: fetch and deltas work end to end")
    func clientWithToken() async throws {
        let tokens = try await ViewerTokens(secret: ViewerAuthorizationTests.secret)
        let viewerToken = try await token(tokens, viewer: 3)
        let server = try TestServer(viewerTokens: tokens)
        defer { server.stop() }
        let client = server.client(viewer: 3, format: .jsonpatch, bearerToken: viewerToken)
        let document = try client.fetch()
        let item = try #require(document.sections.lazy.flatMap(\.items).first { $0.kind == "video" })
        let video = try #require(item.id.split(separator: ":").last.flatMap { Int64($0) })
        try server.request("PATCH", "/v1/videos/\(video)", json: .object(["title": .string("Seen through a token")]))
        let outcome = try client.refresh()
        #expect(outcome != DeltaFeedClient.RefreshOutcome.refetched)
        let anonymous = server.client(viewer: 3, format: .jsonpatch)
        #expect(throws: DeltaFeedClientError.self) { try anonymous.fetch() }
    }

    @Test("Without a viewer secret the viewer routes stay public")
    func publicWithoutSecret() throws {
        let server = try TestServer()
        defer { server.stop() }
        for route in ViewerAuthorizationTests.viewerRoutes(1) {
            let response = try server.request(route.method, route.path, raw: route.body, token: nil)
            #expect(
                [200, 410].contains(response.status), "\(route.method) \(route.path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    @Test("A secret under 32 bytes is refused; a token round-trips to its viewer")
    func secretLengthAndRoundTrip() async throws {
        await #expect(throws: ViewerTokenError.secretTooShort(bytes: 31)) { try await ViewerTokens(secret: String(repeating: "s", count: 31)) }
        let tokens = try await ViewerTokens(secret: ViewerAuthorizationTests.secret)
        let token = try await tokens.token(viewer: 42, expiresAt: Date(timeIntervalSinceNow: 60))
        #expect(try tokens.viewer(of: Array(token.utf8)) == 42)
        #expect(throws: ViewerTokenRefusal.self) { try tokens.viewer(of: Array(token.utf8), at: Date(timeIntervalSinceNow: 61)) }
    }
}

/// Claims with a subject and no expiry, which viewer tokens must not accept.
private struct SubjectOnly: JWTPayload {
    var sub: SubjectClaim
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

private func base64URL(_ text: String) -> String {
    Data(text.utf8).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

extension FeedHTTPResponse {
    /// The `code` of a JSON error body.
    func errorCode() throws -> String? {
        guard case .object(let members) = try JSONValue(parsing: body), case .object(let error)? = members["error"],
            case .string(let code)? = error["code"]
        else { return nil }
        return code
    }
}
