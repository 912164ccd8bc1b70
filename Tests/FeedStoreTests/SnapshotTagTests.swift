import FeedStore
import Testing

@Suite("Snapshot tags")
struct SnapshotTagTests {
    /// The definition: up to the first 8 bytes, big-endian.
    func reference(_ id: String) -> UInt64 {
        id.utf8.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    @Test("A tag is the id's first 8 bytes, big-endian, for ids of any length and for a substring's copy")
    func tagIsTheFirstEightBytes() {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        for length in [0, 1, 7, 8, 9, 32] {
            for _ in 0..<50 {
                let id = String((0..<length).map { _ in digits[Int(generator.next() % 16)] })
                #expect(SnapshotTag.of(id) == reference(id), "\(id)")
            }
        }
        #expect(SnapshotTag.of("0123456789abcdef") == 0x3031_3233_3435_3637)
        let part = String("x0123456789abcdefx".dropFirst().dropLast())
        #expect(SnapshotTag.of(part) == 0x3031_3233_3435_3637)
    }
}
