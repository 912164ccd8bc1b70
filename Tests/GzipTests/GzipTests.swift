import Gzip
import Testing

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
