import EventHTTP
import Testing

@Suite("Request head scanner")
struct RequestHeadScannerTests {
    func scan(_ parts: [String], limit: Int = 1000) -> (RequestHeadScanner, [Int]) {
        var scanner = RequestHeadScanner(limit: limit)
        let consumed = parts.map { scanner.scan(Array($0.utf8)) }
        return (scanner, consumed)
    }

    @Test("A clean head ends at the blank line wherever the reads split it") func aCleanHeadEndsAtTheBlankLineWhereverTheReadsSplitIt() {
        let (scanner, consumed) = scan(["GET /a HTTP/1.1\r", "\nHost: x\r\n\r", "\nbody"])
        #expect(!scanner.inHead)
        #expect(consumed == [16, 11, 1])
        #expect(scanner.findings == RequestHeadScanner.Findings(method: Array("GET".utf8)))
    }

    @Test("What libevent parsing hides is found") func whatLibeventParsingHidesIsFound() {
        #expect(scan(["GET / HTTP/1.1\nHost: x\r\n\r\n"]).0.findings.bareLineFeed)
        #expect(scan(["GET / HTTP/1.1\r\nHost: x\r\n\n"]).0.findings.bareLineFeed)
        #expect(scan(["GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n"]).0.findings.bareCarriageReturn)
        #expect(scan(["GET / HTTP/1.1\r\r\nHost: x\r\n\r\n"]).0.findings.bareCarriageReturn)
        #expect(scan(["GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n"]).0.findings.foldedLine)
        #expect(scan(["GET / HTTP/1.1\r\nA: b\u{0}c\r\n\r\n"]).0.findings.nulByte)
        let clean = scan(["POST / HTTP/1.1\r\nA: b\r\n\r\n"]).0
        #expect(!clean.findings.bareLineFeed && !clean.findings.bareCarriageReturn && !clean.findings.foldedLine && !clean.findings.nulByte)
    }

    @Test("The method is kept as spelt") func theMethodIsKeptAsSpelt() {
        #expect(scan(["QUE", "RY /x HTTP/1.1\r\n\r\n"]).0.findings.method == Array("QUERY".utf8))
        let long = String(repeating: "M", count: 40)
        #expect(scan(["\(long) / HTTP/1.1\r\n\r\n"]).0.findings.method.count == 32)
    }

    @Test("A head past the limit stops the scan") func aHeadPastTheLimitStopsTheScan() {
        let (scanner, consumed) = scan(["GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 100)], limit: 50)
        #expect(scanner.findings.overlong)
        #expect(!scanner.inHead)
        #expect(consumed == [51])
    }

    @Test("The next head starts clean") func theNextHeadStartsClean() {
        var (scanner, _) = scan(["GET / HTTP/1.1\nA: b\r\n\r\n"])
        #expect(scanner.scan(Array("ignored\n".utf8)) == 0)
        scanner.startNextHead()
        #expect(scanner.inHead)
        #expect(scanner.findings == RequestHeadScanner.Findings())
        scanner.scan(Array("PUT / HTTP/1.1\r\n\r\n".utf8))
        #expect(scanner.findings.method == Array("PUT".utf8))
        #expect(!scanner.findings.bareLineFeed)
    }
}

@Suite("Framing checks")
struct CheckFramingTests {
    func check(_ pairs: [(String, String)], findings: RequestHeadScanner.Findings = .init(), max: Int = 1000) -> Result<BodyFraming, HTTPError> {
        checkFraming(HTTPHeaders(pairs), findings: findings, maxBodySize: max)
    }

    func refusal(_ pairs: [(String, String)], findings: RequestHeadScanner.Findings = .init()) -> HTTPError? {
        if case .failure(let error) = check(pairs, findings: findings) { return error }
        return nil
    }

    @Test("Well framed requests pass") func wellFramedRequestsPass() throws {
        #expect(try check([("Host", "x")]).get() == .none)
        #expect(try check([("content-length", "0")]).get() == .length(0))
        #expect(try check([("Content-Length", "1000")]).get() == .length(1000))
        #expect(try check([("Transfer-Encoding", "CHUNKED")]).get() == .chunked)
        #expect(try check([("Expect", "100-Continue"), ("Content-Length", "3")]).get() == .length(3))
    }

    @Test(
        "Ambiguous or malformed heads are 400",
        arguments: [
            [("Content-Length", "5"), ("Content-Length", "6")],
            [("Content-Length", "5"), ("content-length", "5")],
            [("Content-Length", "5, 5")],
            [("Content-Length", "+5")],
            [("Content-Length", "-5")],
            [("Content-Length", "0x10")],
            [("Content-Length", "")],
            [("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
            [("Transfer-Encoding", "gzip, chunked")],
            [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")],
            [("Transfer-Encoding ", "chunked")],
            [("Bad Name", "x")],
            [("X", "a\u{1}b")],
        ])
    func ambiguousOrMalformedHeadsAre400(_ pairs: [(String, String)]) {
        let error = refusal(pairs)
        #expect(error?.status == 400, "\(pairs)")
        #expect(error?.code == "malformed_request")
    }

    @Test("Raw findings are 400") func rawFindingsAre400() {
        for findings in [
            RequestHeadScanner.Findings(bareLineFeed: true), RequestHeadScanner.Findings(bareCarriageReturn: true),
            RequestHeadScanner.Findings(foldedLine: true), RequestHeadScanner.Findings(nulByte: true),
        ] {
            #expect(refusal([("Host", "x")], findings: findings)?.status == 400)
        }
        #expect(refusal([], findings: RequestHeadScanner.Findings(overlong: true))?.status == 431)
    }

    @Test("Limits and expectations") func limitsAndExpectations() {
        #expect(refusal([("Content-Length", "1001")])?.code == "body_too_large")
        #expect(refusal([("Content-Length", "99999999999999999999999")])?.status == 413)
        #expect(refusal([("Expect", "something")])?.status == 417)
    }

    @Test("Control characters are escaped for logs") func controlCharactersAreEscapedForLogs() {
        #expect(escapedForLog("/plain/path?q=1") == "/plain/path?q=1")
        #expect(escapedForLog("/x\u{1B}[2J") == #"/x\x1b[2J"#)
        #expect(escapedForLog("a\r\nb\tc\u{7F}") == #"a\x0d\x0ab\x09c\x7f"#)
        #expect(escapedForLog("\u{9B}é\\") == #"\u{9b}é\\"#)
    }
}

@Suite("Server-wide limit counters")
struct ServerLimitsTests {
    @Test("Reservations never pass the limit") func reservationsNeverPassTheLimit() {
        let limits = ServerLimits(maxConnections: 2, maxBufferedBodyBytes: 100)
        #expect(limits.admitConnection())
        #expect(limits.admitConnection())
        #expect(!limits.admitConnection())
        limits.releaseConnection()
        #expect(limits.admitConnection())
        #expect(limits.reserveBody(60))
        #expect(!limits.reserveBody(41))
        #expect(limits.reserveBody(40))
        #expect(!limits.reserveBody(1))
        limits.releaseBody(60)
        #expect(limits.bufferedBodyBytes == 40)
        #expect(!limits.reserveBody(101), "larger than the whole limit")
        #expect(!limits.reserveBody(Int.max))
    }

    @Test("Concurrent reservations stay under the limit") func concurrentReservationsStayUnderTheLimit() {
        let limits = ServerLimits(maxConnections: 10, maxBufferedBodyBytes: 1000)
        let threads = (0..<8).map { _ in
            WorkerThread {
                for _ in 0..<10_000 {
                    if limits.reserveBody(7) {
                        precondition(limits.bufferedBodyBytes <= 1000)
                        limits.releaseBody(7)
                    }
                }
            }
        }
        for thread in threads { thread.join() }
        #expect(limits.bufferedBodyBytes == 0)
    }
}
