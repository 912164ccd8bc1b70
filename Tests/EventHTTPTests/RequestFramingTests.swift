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

/// The scanner as it was first written, one byte at a time with no shortcut: the fast paths of
/// ``RequestHeadScanner`` must find exactly what it finds.
private struct ReferenceScanner {
    var bareLineFeed = false
    var bareCarriageReturn = false
    var foldedLine = false
    var nulByte = false
    var overlong = false
    var method: [UInt8] = []
    var inHead = true
    let limit: Int
    var lineIndex = 0
    var lineLength = 0
    var afterCR = false
    var scanned = 0

    mutating func scan(_ bytes: [UInt8]) -> Int {
        guard inHead else { return 0 }
        for (index, byte) in bytes.enumerated() {
            scanned += 1
            if byte == 0x0A {
                if !afterCR { bareLineFeed = true }
                afterCR = false
                if lineLength == 0 {
                    inHead = false
                    return index + 1
                }
                lineIndex += 1
                lineLength = 0
                continue
            }
            if afterCR {
                bareCarriageReturn = true
                afterCR = false
                lineLength += 1
            }
            if byte == 0x0D {
                afterCR = true
            } else {
                if byte == 0 { nulByte = true }
                if lineLength == 0 && lineIndex > 0 && (byte == 0x20 || byte == 0x09) { foldedLine = true }
                if lineIndex == 0 && lineLength == method.count && byte != 0x20 && method.count < 32 { method.append(byte) }
                lineLength += 1
            }
            if scanned > limit {
                overlong = true
                inHead = false
                return index + 1
            }
        }
        return bytes.count
    }

    var findings: RequestHeadScanner.Findings {
        RequestHeadScanner.Findings(
            bareLineFeed: bareLineFeed, bareCarriageReturn: bareCarriageReturn, foldedLine: foldedLine, nulByte: nulByte,
            overlong: overlong, method: method)
    }
}

@Suite("Request head scanner against the byte-by-byte reference")
struct RequestHeadScannerReferenceTests {
    @Test("Random heads, split at random, find the same") func randomHeadsSplitAtRandomFindTheSame() {
        var random = SystemRandomNumberGenerator()
        // Mostly ordinary header bytes, with every byte the rules look at.
        let alphabet: [UInt8] =
            Array("GET /abcdefghijklmnop:HTTP/1.1 xyz-0123456789".utf8) + [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x09, 0x20, 0x0E, 0x0C, 0x7F, 0x80, 0xFF]
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...200, using: &random)
            var bytes = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            if Bool.random(using: &random) {
                bytes = Array("GET /a/long/path/with/many/bytes HTTP/1.1\r\nHost: example.com\r\nX: ".utf8) + bytes
            }
            let limit = Int.random(in: 1...300, using: &random)
            var scanner = RequestHeadScanner(limit: limit)
            var reference = ReferenceScanner(limit: limit)
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 1...40, using: &random))
                let part = Array(bytes[start..<end])
                #expect(scanner.scan(part) == reference.scan(part), "\(bytes) limit \(limit)")
                start = end
            }
            #expect(scanner.findings == reference.findings, "\(bytes) limit \(limit)")
            #expect(scanner.inHead == reference.inHead)
            #expect(scanner.scanned == reference.scanned)
        }
    }
}
