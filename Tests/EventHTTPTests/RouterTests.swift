import EventHTTP
import JSONBytes
import Testing

@Suite("Routing and parsing without sockets")
struct RouterTests {
    func router() -> Router {
        var router = Router()
        router.get("/v1/users/{id}/feed") { _ in .text("feed") }
        router.get("/v1/users/{id}/feed/delta") { _ in .text("delta") }
        router.post("/v1/users/{id}/feed/delta") { _ in .text("post delta") }
        router.get("/v1/users/me/feed") { _ in .text("mine") }
        return router
    }

    func body(_ match: Router.Match) throws -> String {
        guard case .found(let handler, _, _) = match else { return "no match" }
        return String(decoding: try handler(HTTPRequest(method: .get, path: "/")).body, as: UTF8.self)
    }

    @Test("Parameters are captured and decoded") func parametersAreCapturedAndDecoded() throws {
        guard case .found(_, let pattern, let parameters) = router().match(method: .get, path: "/v1/users/a%2Fb/feed") else {
            Issue.record("no match"); return
        }
        #expect(pattern == "/v1/users/{id}/feed")
        #expect(parameters == ["id": "a/b"])
    }

    @Test("Literal segments win over parameters") func literalSegmentsWinOverParameters() throws {
        #expect(try body(router().match(method: .get, path: "/v1/users/me/feed")) == "mine")
        #expect(try body(router().match(method: .get, path: "/v1/users/7/feed")) == "feed")
    }

    @Test("Same length different methods are separated") func sameLengthDifferentMethodsAreSeparated() throws {
        #expect(try body(router().match(method: .post, path: "/v1/users/1/feed/delta")) == "post delta")
        guard case .methodNotAllowed(let allowed) = router().match(method: .put, path: "/v1/users/1/feed/delta") else {
            Issue.record("expected 405"); return
        }
        #expect(allowed == ["GET", "HEAD", "POST"])
    }

    @Test("Unknown paths are not found") func unknownPathsAreNotFound() {
        guard case .notFound = router().match(method: .get, path: "/v1/users/1") else { Issue.record("expected 404"); return }
    }

    @Test("Query parsing decodes plus and percent and keeps order") func queryParsingDecodesPlusAndPercentAndKeepsOrder() {
        let query = QueryParameters("a=1&b=x+y%20z&flag&a=2&bad=%zz")
        #expect(query["a"] == "1")
        #expect(query["b"] == "x y z")
        #expect(query["flag"] == "")
        #expect(query["bad"] == "%zz")
        #expect(query.pairs.count == 5)
    }

    @Test("Query parsing splits on the separator bytes, whatever follows them") func queryParsingSplitsOnTheSeparatorBytes() {
        // A combining mark right after `&` or `=` makes one character with it; the separators
        // are still there (URLSearchParams splits bytes too).
        let query = QueryParameters("a=1&\u{301}b=\u{301}2&c=%4&d=%")
        #expect(query.pairs.map(\.name) == ["a", "\u{301}b", "c", "d"])
        #expect(query["a"] == "1")
        #expect(query["\u{301}b"] == "\u{301}2")
        #expect(query["c"] == "%4")
        #expect(query["d"] == "%")
    }

    @Test("Targets split into path and query") func targetsSplitIntoPathAndQuery() {
        #expect(splitTarget("/a/b?c=d").path == "/a/b")
        #expect(splitTarget("/a/b?c=d").query == "c=d")
        #expect(splitTarget("http://host:80/x?y").path == "/x")
        #expect(splitTarget("/plain").query == "")
    }

    @Test("JSON strings are escaped") func jsonStringsAreEscaped() {
        var writer = JSONWriter()
        writer.string("a\"b\\c\nd\u{01}é")
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #""a\"b\\c\nd\u0001é""#)
    }
}

@Suite("Routing by bytes")
struct RoutingByBytesTests {
    @Test("Paths with more segments than any route, or none, are not found") func pathsWithMoreSegmentsThanAnyRouteAreNotFound() {
        var router = Router()
        router.get("/a/{b}") { _ in .text("ab") }
        guard case .notFound = router.match(method: .get, path: "/a/b/c") else { Issue.record("expected 404"); return }
        guard case .notFound = router.match(method: .get, path: "/") else { Issue.record("expected 404"); return }
        guard case .found(_, _, let parameters) = router.match(method: .get, path: "//a//x%20y/") else { Issue.record("expected a match"); return }
        #expect(parameters == ["b": "x y"])
        #expect(router.allowedMethods(path: "/a/1") == ["GET", "HEAD"])
        #expect(router.allowedMethods(path: "/a/1/2").isEmpty)
        var root = Router()
        root.get("/") { _ in .text("root") }
        guard case .found = root.match(method: .get, path: "/") else { Issue.record("expected the root"); return }
    }

    @Test("Literal segments compare as Strings do: canonically equivalent spellings match") func literalSegmentsCompareAsStringsDo() {
        var router = Router()
        router.get("/caf\u{E9}/K") { _ in .text("x") }
        // A decomposed é, and the Kelvin sign (canonically the letter K).
        guard case .found = router.match(method: .get, path: "/cafe\u{301}/\u{212A}") else { Issue.record("expected a match"); return }
        guard case .notFound = router.match(method: .get, path: "/cafe/K") else { Issue.record("expected 404"); return }
    }
}
