import DeltaFeedClient
import Testing

/// The request metrics EventHTTP keeps per route (handles made on a route's first request) as
/// Prometheus shows them.
@Suite("Request metrics on /metrics")
struct RequestMetricsTests {
    @Test("Requests are counted by route, method and status, and timed by route")
    func requestsAreCountedByRouteMethodAndStatus() throws {
        let server = try TestServer()
        defer { server.stop() }
        for _ in 0..<3 { #expect(try server.request("GET", "/healthz", token: nil).status == 200) }
        #expect(try server.request("HEAD", "/healthz", token: nil).status == 200)
        #expect(try server.request("GET", "/no/such/path", token: nil).status == 404)
        #expect(try server.request("DELETE", "/healthz", token: nil).status == 405)
        #expect(try server.request("GET", "/v1/users/4/feed", token: nil).status == 200)
        #expect(try server.request("GET", "/v1/users/999999/feed", token: nil).status == 404)
        let text = String(decoding: try server.request("GET", "/metrics", token: nil).body, as: UTF8.self)
        func value(_ line: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap { Double($0.dropFirst(line.count + 1)) }
        }
        #expect(value(#"http_requests_total{route="/healthz",method="GET",status="200"}"#) == 3, "\(text)")
        #expect(value(#"http_requests_total{route="/healthz",method="HEAD",status="200"}"#) == 1)
        #expect(value(#"http_requests_total{route="unmatched",method="GET",status="404"}"#) == 1)
        #expect(value(#"http_requests_total{route="unmatched",method="DELETE",status="405"}"#) == 1)
        #expect(value(#"http_requests_total{route="/v1/users/{id}/feed",method="GET",status="200"}"#) == 1)
        #expect(value(#"http_requests_total{route="/v1/users/{id}/feed",method="GET",status="404"}"#) == 1)
        #expect(value(#"http_request_duration_seconds_count{route="/healthz"}"#) == 4)
        #expect(value(#"http_request_duration_seconds_count{route="/v1/users/{id}/feed"}"#) == 2)
        #expect(value(#"http_request_duration_seconds_count{route="unmatched"}"#) == 2)
    }
}
