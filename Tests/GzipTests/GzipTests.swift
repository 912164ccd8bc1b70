import Testing

@testable import Gzip

@Suite("gzip bodies")
struct GzipTests {
    static let page = Array(String(repeating: #"{"id":"video:42","kind":"video","version":"0123456789abcdef"},"#, count: 200).utf8)

    @Test("A body gzipped at every level reads back byte for byte, and JSON shrinks")
    func roundTrips() throws {
        for level in 1...9 {
            let compressed = try #require(Gzip.compress(Self.page, level: level))
            #expect(compressed.count < Self.page.count / 10, "level \(level): \(compressed.count) bytes")
            #expect(compressed.prefix(2) == [0x1F, 0x8B], "a gzip member starts with its magic number")
            #expect(try Gzip.decompress(compressed, limit: Self.page.count) == Self.page)
        }
        #expect(try Gzip.decompress(try #require(Gzip.compress([], level: 6)), limit: 0) == [])
    }

    @Test("A body that would expand past the reader's limit is refused, not read")
    func limitHolds() throws {
        let bomb = try #require(Gzip.compress([UInt8](repeating: 0, count: 10 << 20), level: 9))
        #expect(bomb.count < 20_000)
        #expect(throws: Gzip.DecodingError.tooLarge(limit: 1 << 20)) { try Gzip.decompress(bomb, limit: 1 << 20) }
    }

    @Test("Truncated, corrupted or trailing bytes are refused as malformed")
    func malformedIsRefused() throws {
        let compressed = try #require(Gzip.compress(Self.page, level: 6))
        for broken in [Array(compressed.dropLast(4)), Array(compressed.prefix(10)), Array(compressed) + [1, 2, 3], Array("not gzip".utf8)] {
            #expect {
                _ = try Gzip.decompress(broken, limit: 1 << 20)
            } throws: { error in
                guard case .malformed = error as? Gzip.DecodingError else { return false }
                return true
            }
        }
        var flipped = compressed
        flipped[compressed.count / 2] ^= 0xFF
        #expect(throws: (any Error).self) { try Gzip.decompress(flipped, limit: 1 << 20) }
    }

    @Test("An invalid level is refused")
    func invalidLevel() {
        #expect(Gzip.compress(Self.page, level: 42) == nil)
    }
}

/// The module's own encoder for short bodies (``ShortDeflate``), read back by zlib: every
/// encoding it picks (Huffman codes of its own, the fixed codes, stored), every match length
/// and distance, and codes that must be cut to deflate's length limits.
@Suite("gzip: the short-body encoder")
struct ShortDeflateTests {
    /// A deterministic source of bytes (xorshift64*), so a failure names a case that repeats.
    struct Bytes: RandomNumberGenerator {
        var state: UInt64

        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 0x2545_F491_4F6C_DD1D
        }

        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    static func roundTrip(_ body: [UInt8], _ label: String) throws -> [UInt8] {
        let compressed = body.withUnsafeBufferPointer { ShortDeflate.gzip($0) }
        #expect(Array(compressed.prefix(4)) == [0x1F, 0x8B, 8, 0], "\(label): a gzip member with no optional fields")
        #expect(try Gzip.decompress(compressed, limit: body.count) == body, "\(label)")
        // Never longer than the body stored as it is (5 bytes a block) in a gzip member (18).
        #expect(compressed.count <= body.count + 5 + 18, "\(label): \(compressed.count) bytes for \(body.count)")
        return compressed
    }

    @Test("Edge sizes and shapes read back byte for byte")
    func edges() throws {
        var bytes = Bytes(state: 0x9E37_79B9_7F4A_7C15)
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("one byte", [42]),
            ("three bytes", Array("abc".utf8)),
            ("four equal bytes", [7, 7, 7, 7]),
            ("every byte value", (0...255).map { UInt8($0) }),
            ("32 KB of zeros (matches of 258 at distance 1)", [UInt8](repeating: 0, count: ShortDeflate.largestInput)),
            ("random bytes (stored)", (0..<5_000).map { _ in UInt8(truncatingIfNeeded: bytes.next()) }),
            ("a 259-byte run after a literal", [1] + [UInt8](repeating: 2, count: 259)),
            (
                "a repeat at the farthest distance",
                {
                    let head = (0..<300).map { _ in UInt8(truncatingIfNeeded: bytes.next()) }
                    let middle = (0..<(ShortDeflate.largestInput - 600)).map { _ in UInt8(truncatingIfNeeded: bytes.next()) }
                    return head + middle + head
                }()
            ),
        ]
        for (label, body) in cases { _ = try Self.roundTrip(body, label) }
        let stored = try Self.roundTrip(cases[6].1, "random")
        #expect(stored[10] & 0b111 == 0b001, "random bytes are stored (BFINAL, BTYPE 00)")
        let fixed = try Self.roundTrip(Array("abc".utf8), "short text")
        #expect(fixed[10] & 0b111 == 0b011, "a few bytes take the fixed codes (BFINAL, BTYPE 01)")
        let dynamic = try Self.roundTrip(GzipTests.page, "page")
        #expect(dynamic[10] & 0b111 == 0b101, "JSON takes codes of its own (BFINAL, BTYPE 10)")
        #expect(dynamic.count < GzipTests.page.count / 10)
    }

    @Test("Codes deeper than a limit are cut to it and stay complete; others are Huffman's")
    func codeLengths() {
        // Kraft's sum of a code's lengths, in units of 2^-15: a complete code sums to 2^15.
        func kraft(_ lengths: [UInt8]) -> Int { lengths.reduce(0) { $0 + ($1 == 0 ? 0 : 1 << (15 - Int($1))) } }
        var fibonacci = [1, 1]
        while fibonacci.count < 30 { fibonacci.append(fibonacci[fibonacci.count - 1] + fibonacci[fibonacci.count - 2]) }
        for limit in [7, 15] {
            let lengths = ShortDeflate.Workspace.lengths(for: fibonacci, limit: limit)
            #expect(lengths.allSatisfy { (1...limit).contains(Int($0)) }, "limit \(limit): \(lengths)")
            #expect(kraft(lengths) == 1 << 15, "limit \(limit): \(lengths)")
            // The most frequent symbols keep the shortest codes.
            #expect(lengths.last == 1 && zip(lengths, lengths.dropFirst()).allSatisfy { $0 >= $1 }, "\(lengths)")
        }
        // Unlimited by the limit: Huffman's lengths (symbols 0...3 with counts 1, 1, 2, 4).
        #expect(ShortDeflate.Workspace.lengths(for: [1, 1, 2, 4, 0], limit: 15) == [3, 3, 2, 1, 0])
        // One symbol used, or none: two codes of one bit (a complete code inflaters accept).
        #expect(ShortDeflate.Workspace.lengths(for: [0, 0, 9], limit: 15) == [1, 0, 1])
        #expect(ShortDeflate.Workspace.lengths(for: [0, 0, 0], limit: 7) == [1, 1, 0])
        var bytes = Bytes(state: 11)
        for round in 0..<200 {
            let counts = (0..<(2 + bytes.below(286))).map { _ in bytes.below(3) == 0 ? 0 : 1 << bytes.below(14) }
            let lengths = ShortDeflate.Workspace.lengths(for: counts, limit: 15)
            #expect(kraft(lengths) == 1 << 15, "round \(round)")
            #expect(zip(counts, lengths).allSatisfy { ($0 > 0) == ($1 > 0) || counts.filter { $0 > 0 }.count < 2 }, "round \(round)")
        }
    }

    @Test("Bodies of very skewed byte counts read back (their codes cut to the limits)")
    func skewedBodies() throws {
        // Fibonacci counts: an unlimited Huffman code would be as deep as there are symbols.
        var counts = [1, 1]
        while counts.count < 22 { counts.append(counts[counts.count - 1] + counts[counts.count - 2]) }
        var body: [UInt8] = []
        for (index, count) in counts.enumerated() where body.count + count <= ShortDeflate.largestInput {
            // Bytes spread out so that they stay literals (no 4-byte repeats to match).
            body.append(contentsOf: [UInt8](repeating: UInt8(index * 11), count: count))
        }
        var bytes = Bytes(state: 7)
        body.shuffle(using: &bytes)
        _ = try Self.roundTrip(body, "Fibonacci literal counts, \(body.count) bytes")
        // Code lengths of many different values: the code-length code (7 bits at most) skewed.
        let skewed: [UInt8] = (0..<4_000).map { (index: Int) -> UInt8 in
            if index % 251 == 0 { return UInt8(index % 256) }
            return (index * 7) % 23 == 0 ? 200 : 65
        }
        _ = try Self.roundTrip(skewed, "a skewed body")
    }

    @Test("Random JSON-like bodies of every size read back, no larger than libdeflate's level 2 writes")
    func randomBodies() throws {
        var bytes = Bytes(state: 0xD1B5_4A32_D192_ED03)
        let words = [#"{"id":"video:"#, #"","kind":"video","version":""#, #"","like_count":"#, #"},"#, "[", "]", #""op":"replace","path":"/sections/"#]
        for round in 0..<300 {
            let size = round < 100 ? bytes.below(300) : round < 250 ? bytes.below(4_000) : bytes.below(ShortDeflate.largestInput)
            var body: [UInt8] = []
            while body.count < size {
                switch bytes.below(4) {
                case 0: body.append(contentsOf: Array(words[bytes.below(words.count)].utf8))
                case 1: body.append(contentsOf: (0..<bytes.below(33)).map { _ in Array("0123456789abcdef".utf8)[bytes.below(16)] })
                case 2 where body.count > 10:
                    // A copy of an earlier stretch, at any distance the body allows.
                    let start = bytes.below(body.count - 4)
                    body.append(contentsOf: body[start..<min(body.count, start + 4 + bytes.below(300))])
                default: body.append(UInt8(truncatingIfNeeded: bytes.next()))
                }
            }
            body = Array(body.prefix(size))
            let compressed = try Self.roundTrip(body, "round \(round), \(body.count) bytes")
            if body.count > 200 {
                let libdeflate = try #require(Gzip.compress(body, level: 2))
                #expect(compressed.count <= libdeflate.count + libdeflate.count / 20 + 8, "round \(round): \(compressed.count) against \(libdeflate.count)")
            }
        }
    }

    @Test("Level 1 takes the short encoder up to its limit, and libdeflate past it")
    func routing() throws {
        for size in [Gzip.shortBodyLimit, Gzip.shortBodyLimit + 1] {
            let body = Array(GzipTests.page.prefix(size))
            let compressed = try #require(Gzip.compress(body, level: 1))
            #expect(try Gzip.decompress(compressed, limit: size) == body)
            let short = body.withUnsafeBufferPointer { ShortDeflate.gzip($0) }
            #expect((compressed == short) == (size <= Gzip.shortBodyLimit), "\(size) bytes")
        }
    }
}
