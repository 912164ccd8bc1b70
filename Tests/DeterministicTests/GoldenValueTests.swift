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

    @Test("SplitMix64 gives the reference sequence for seed 0")
    func splitMixMatchesTheReference() {
        var random = SplitMix64(seed: 0)
        #expect([random.next(), random.next(), random.next()] == [0xe220_a839_7b1d_cdaf, 0x6e78_9e6a_a1b9_65f4, 0x06c4_5d18_8009_454f])
    }
}
