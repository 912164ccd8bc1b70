import DeltaFeedClient
import Foundation
import Testing

@Suite("HTTP transports")
struct TransportTests {
    @Test("Both transports get the same feed, ETag and 304 from a real server")
    func transportsAgree() throws {
        let server = try TestServer()
        defer { server.stop() }
        let transports: [any FeedHTTPTransport] = [SocketTransport(), URLSessionTransport()]
        var bodies: [[UInt8]] = []
        for transport in transports {
            let url = URL(string: server.baseURL.absoluteString + "/v1/users/2/feed?limit=5")!
            let response = try transport.send(FeedHTTPRequest(method: "GET", url: url))
            #expect(response.status == 200)
            let etag = try #require(response.header("ETag"))
            bodies.append(response.body)
            let again = try transport.send(FeedHTTPRequest(method: "GET", url: url, headers: ["If-None-Match": etag]))
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            let deleted = try transport.send(
                FeedHTTPRequest(
                    method: "DELETE", url: URL(string: server.baseURL.absoluteString + "/v1/videos/999999")!,
                    headers: ["Authorization": "Bearer \(TestServer.adminToken)"]))
            #expect(deleted.status == 404)
        }
        #expect(bodies[0] == bodies[1])
    }
}
