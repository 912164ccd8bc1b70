/// The live feed page's static files, compiled into the binary.
///
/// The files live in `Sources/DeltaFeedServer/Demo/` and reach the code through SwiftPM's
/// `embedInCode` resource rule, which turns each file into a `[UInt8]` constant of the
/// generated `PackageResources` type at build time: no Foundation `Bundle`, no files to ship
/// beside the binary (the Dockerfile and `scripts/run` need nothing), and no build plugin. The
/// table below is the only list of what `/demo/{asset}` serves, so a name not in it is a 404
/// and no request path ever reaches the file system.
struct DemoAsset: Sendable {
    /// The file name as requested under `/demo/`.
    let name: String
    /// `Content-Type` sent with it.
    let contentType: String
    /// The file's bytes.
    let body: [UInt8]
    /// A strong ETag: a 64-bit FNV-1a hash of the bytes, quoted.
    let etag: String

    init(name: String, contentType: String, body: [UInt8]) {
        self.name = name
        self.contentType = contentType
        self.body = body
        self.etag = "\"\(DemoAsset.fingerprint(body))\""
    }

    /// The page itself, served at `/demo`.
    static let page = DemoAsset(name: "index.html", contentType: "text/html; charset=utf-8", body: PackageResources.index_html)

    /// Everything the page loads, by name.
    static let files: [String: DemoAsset] = {
        let javaScript = "text/javascript; charset=utf-8"
        let assets = [
            page,
            DemoAsset(name: "demo.css", contentType: "text/css; charset=utf-8", body: PackageResources.demo_css),
            DemoAsset(name: "demo.js", contentType: javaScript, body: PackageResources.demo_js),
            DemoAsset(name: "feed-client.js", contentType: javaScript, body: PackageResources.feed_client_js),
            DemoAsset(name: "feed-view.js", contentType: javaScript, body: PackageResources.feed_view_js),
        ]
        return Dictionary(uniqueKeysWithValues: assets.map { ($0.name, $0) })
    }()

    /// 16 lowercase hex digits of the FNV-1a hash of `bytes`.
    static func fingerprint(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
