import Deterministic
import Testing

/// Item versions, snapshot ids, ad positions and the demo store all derive from these two: a
/// change to either changes every id a client holds, so their outputs are pinned to the
/// published reference values of the algorithms.
@Suite("Deterministic hashing and random numbers")
struct GoldenValueTests {
    @Test(
        "StableHasher is 64-bit FNV-1a: the published test vectors",
        arguments: [
            ("", 0xcbf2_9ce4_8422_2325 as UInt64), ("a", 0xaf63_dc4c_8601_ec8c), ("foobar", 0x8594_4171_f739_67e8),
        ])
    func stableHasherMatchesFNV1a(text: String, expected: UInt64) {
        var hasher = StableHasher()
        hasher.combine(bytes: Array(text.utf8))
        #expect(hasher.state == expected)
    }

    @Test("A string is its UTF-8 bytes then 0xFF, so adjacent strings cannot run together")
    func stringsAreTerminated() {
        var joined = StableHasher()
        joined.combine("ab")
        joined.combine("c")
        var split = StableHasher()
        split.combine("a")
        split.combine("bc")
        #expect(joined.state != split.state)
        var bytes = StableHasher()
        bytes.combine(bytes: Array("ab".utf8) + [0xFF])
        var text = StableHasher()
        text.combine("ab")
        #expect(bytes.state == text.state)
    }

    @Test("A number's 16 hex digits hash as that text does (snapshot ids keep their values)")
    func hexDigitsHashAsTheirText() {
        var random = SplitMix64(seed: 16)
        for value in [0, 1, 0x0123_4567_89ab_cdef, .max] + (0..<100).map({ _ in random.next() }) as [UInt64] {
            var (first, second) = (StableHasher(seed: 1), StableHasher(seed: 2))
            StableHasher.combineHex16(value, into: &first, &second)
            let text = String(value, radix: 16)
            var (firstText, secondText) = (StableHasher(seed: 1), StableHasher(seed: 2))
            StableHasher.combine(String(repeating: "0", count: 16 - text.count) + text, into: &firstText, &secondText)
            #expect(first.state == firstText.state && second.state == secondText.state, "\(value)")
        }
    }

    @Test("SplitMix64 gives the reference sequence for seed 0")
    func splitMixMatchesTheReference() {
        var random = SplitMix64(seed: 0)
        #expect([random.next(), random.next(), random.next()] == [0xe220_a839_7b1d_cdaf, 0x6e78_9e6a_a1b9_65f4, 0x06c4_5d18_8009_454f])
    }
}
