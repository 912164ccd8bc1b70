import EventHTTP
import Gzip
import HTTPTestSupport
import Testing

private let document = Array(("[" + (0..<60).map { #"{"id":"video:\#($0)","kind":"video","version":"0123456789abcdef"}"# }.joined(separator: ",") + "]").utf8)

private func withCompressingServer(
    _ compression: ResponseCompression = ResponseCompression(), _ body: (RawHTTPClient) throws -> Void
) throws {
    try withTestServer(
        configure: { $0.compression = compression },
        routes: { router in
            router.get("/doc") { _ in
                var response = HTTPResponse.json(document)
                response.headers.append(("ETag", "\"v1\""))
                return response
            }
            router.get("/small") { _ in .json(Array(#"{"ok":true}"#.utf8)) }
            router.get("/image") { _ in HTTPResponse(contentType: "image/png", body: document) }
            router.get("/kept") { _ in
                var response = HTTPResponse.json(document)
                response.gzippedBody = Gzip.compress(Array(#"["the kept bytes"]"#.utf8), level: 1)
                return response
            }
        }
    ) { server in
        try body(try RawHTTPClient(port: server.port))
    }
}

@Suite("Response compression")
struct CompressionTests {
    @Test(
        "Accept-Encoding is read with its q-values: gzip only when acceptable",
        arguments: [
            ("gzip", true), ("GZIP", true), ("x-gzip", true), ("deflate, gzip;q=0.5", true), ("*", true), ("br;q=1, *;q=0.1", true),
            ("gzip;q=0", false), ("gzip;q=0.000, *", false), ("*;q=0", false), ("identity", false), ("br, zstd", false), ("", false),
            ("gzip;q=2", false), ("gzip;q=abc", false), (";;,,", false), ("gzip;level=9", false),
            (" GZip ;\tQ = 0.5 ", true), ("x-gzip;q=0, gzip", true), ("gzip, gzip;q=0", true), ("gzip;q=0.5;q=0", false),
            ("gzíp, *;q=0", false), ("x-gzip;q=0, *", false),
        ])
    func negotiation(header: String, gzipped: Bool) throws {
        try withCompressingServer { client in
            let response = try client.request("GET", "/doc", headers: [("Accept-Encoding", header)])
            #expect(response.status == 200)
            #expect(response.header("Vary") == "Accept-Encoding")
            if gzipped {
                #expect(response.header("Content-Encoding") == "gzip")
                #expect(response.body.count < document.count / 4)
                #expect(try Gzip.decompress(response.body, limit: 1 << 20) == document)
                #expect(response.header("ETag") == "\"v1\"", "the validator names the state, in either coding")
            } else {
                #expect(response.header("Content-Encoding") == nil)
                #expect(response.body == document)
                #expect(response.header("ETag") == "\"v1\"")
            }
        }
    }

    @Test("Without Accept-Encoding, under the size threshold, for an image, or with compression off, the body goes as it is")
    func rawBodies() throws {
        try withCompressingServer { client in
            #expect(try client.request("GET", "/doc").header("Content-Encoding") == nil)
            let small = try client.request("GET", "/small", headers: [("Accept-Encoding", "gzip")])
            #expect(small.header("Content-Encoding") == nil && small.bodyText == #"{"ok":true}"#)
            #expect(small.header("Vary") == "Accept-Encoding")
            let image = try client.request("GET", "/image", headers: [("Accept-Encoding", "gzip")])
            #expect(image.header("Content-Encoding") == nil && image.body == document && image.header("Vary") == nil)
        }
        try withCompressingServer(ResponseCompression(level: 0)) { client in
            let response = try client.request("GET", "/doc", headers: [("Accept-Encoding", "gzip")])
            #expect(response.header("Content-Encoding") == nil && response.body == document && response.header("Vary") == nil)
        }
        try withCompressingServer(ResponseCompression(level: 6, minimumSize: 1 << 20)) { client in
            let response = try client.request("GET", "/doc", headers: [("Accept-Encoding", "gzip")])
            #expect(response.header("Content-Encoding") == nil)
        }
    }

    @Test("HEAD answers the headers a GET would get, Content-Length of the gzipped body included")
    func headMatchesGet() throws {
        try withCompressingServer { client in
            let get = try client.request("GET", "/doc", headers: [("Accept-Encoding", "gzip")])
            let head = try client.request("HEAD", "/doc", headers: [("Accept-Encoding", "gzip")])
            #expect(head.header("Content-Encoding") == "gzip")
            #expect(head.header("Content-Length") == String(get.body.count))
            #expect(head.body.isEmpty)
        }
    }

    @Test("A body compressed for one answer takes the answer level; answer level 0 sends it as it is and kept bytes still go gzipped")
    func answerLevel() throws {
        // libdeflate marks its gzip members: XFL (byte 8) 4 for its fastest level, 0 for the
        // middle levels.
        for (level, flags) in [(1, 4), (6, 0)] as [(Int, UInt8)] {
            try withCompressingServer(ResponseCompression(level: 6, answerLevel: level)) { client in
                let response = try client.request("GET", "/doc", headers: [("Accept-Encoding", "gzip")])
                #expect(response.header("Content-Encoding") == "gzip")
                #expect(response.body.count > 8 && response.body[8] == flags, "answer level \(level)")
                #expect(try Gzip.decompress(response.body, limit: 1 << 20) == document)
            }
        }
        try withCompressingServer(ResponseCompression(level: 6, answerLevel: 0)) { client in
            let response = try client.request("GET", "/doc", headers: [("Accept-Encoding", "gzip")])
            #expect(response.header("Content-Encoding") == nil && response.body == document)
            #expect(response.header("Vary") == "Accept-Encoding")
            let kept = try client.request("GET", "/kept", headers: [("Accept-Encoding", "gzip")])
            #expect(kept.header("Content-Encoding") == "gzip")
        }
    }

    @Test("Bytes a handler gzipped already are sent as they are, not compressed again")
    func keptBytesAreSent() throws {
        try withCompressingServer { client in
            let response = try client.request("GET", "/kept", headers: [("Accept-Encoding", "gzip")])
            #expect(response.header("Content-Encoding") == "gzip")
            #expect(try Gzip.decompress(response.body, limit: 1 << 20) == Array(#"["the kept bytes"]"#.utf8))
        }
    }
}

@Suite("Which content types are compressed")
struct CompressibleTypeTests {
    @Test("Text, JSON, YAML, JavaScript and SVG are; images, binaries and a missing type are not; case, spaces and parameters do not matter")
    func compressibleTypes() {
        for type in [
            "application/json", "Application/JSON", " application/json ; charset=utf-8", "text/html", "TEXT/plain;charset=utf-8",
            "application/problem+json", "application/vnd.api+JSON", "application/javascript", "application/yaml", "application/x-yaml",
            "image/svg+xml",
        ] {
            #expect(ResponseCompression.isCompressible(contentType: type), "\(type)")
        }
        for type in [nil, "", "image/png", "application/octet-stream", "application/gzip", "json", "application/jsonx", "textual/x"] {
            #expect(!ResponseCompression.isCompressible(contentType: type), "\(type ?? "nil")")
        }
    }
}
