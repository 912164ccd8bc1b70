import DeltaFeedServer
import EventHTTP
import HTTPTestSupport
import JSONBytes
import Testing

/// What a replica answers while it loads its index: a balancer and clients must be told to
/// wait, on every path and method, not refused or served.
@Suite("Starting server")
struct StartingServerTests {
    @Test("While loading: /healthz is 503 starting; every other request 503 starting with Retry-After")
    func everythingWaits() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = 1
        let server = try StartingServer.start(configuration: configuration)
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        let health = try client.request("GET", "/healthz")
        #expect(health.status == 503)
        #expect(try JSONValue(parsing: health.body)["status"] == "starting")
        for (method, path) in [("GET", "/v1/users/1/feed"), ("GET", "/v1/users/1/feed/delta?since=x"), ("POST", "/v1/videos"), ("DELETE", "/v1/ads/3")] {
            let response = try client.request(method, path, body: method == "POST" ? Array("{}".utf8) : [])
            #expect(response.status == 503, "\(method) \(path)")
            #expect(response.header("Retry-After") == "1", "\(method) \(path)")
            #expect(try JSONValue(parsing: response.body)["error"]?["code"] == "starting", "\(method) \(path)")
        }
    }
}
