import EventHTTP

/// `GET /demo` and `GET /demo/{asset}`: the live feed page and the files it loads (see
/// ``DemoAsset``). Read-only and served from memory on the event loop.
///
/// Every answer carries a strong `ETag` (`If-None-Match` → 304) and `Cache-Control: no-cache`,
/// so a browser revalidates and a new build is seen at once. The page's
/// `Content-Security-Policy` allows only this server's own scripts, styles and requests: the
/// page runs no inline script and loads nothing from elsewhere.
struct DemoRoutes {
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    func register(in router: inout Router) {
        router.get("/demo") { request in
            DemoRoutes.response(for: DemoAsset.page, request: request)
        }
        router.get("/demo/{asset}") { request in
            let name = request.pathParameters["asset"] ?? ""
            guard let asset = DemoAsset.files[name] else {
                throw HTTPError.notFound("No demo file named \"\(name.prefix(80))\"; the page is at /demo.")
            }
            return DemoRoutes.response(for: asset, request: request)
        }
    }

    static func response(for asset: DemoAsset, request: HTTPRequest) -> HTTPResponse {
        var headers = [("ETag", asset.etag), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff")]
        if asset.contentType.hasPrefix("text/html") {
            headers.append(("Content-Security-Policy", contentSecurityPolicy))
        }
        if request.ifNoneMatch(String(asset.etag.dropFirst().dropLast())) {
            return .empty(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, contentType: asset.contentType, body: asset.body, headers: headers)
    }
}
