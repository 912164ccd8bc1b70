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

    @Test(
        "WordHasher: a string is its byte count then its bytes as little-endian words, the last padded; the values a reference implementation gives",
        arguments: [
            ("", 0xc3d6_a242_8796_9a66 as UInt64, 0x69c6_68b7_77ad_910a as UInt64), ("a", 0xe713_2b55_bde5_e9a5, 0x2c25_85b0_e041_e355),
            ("video:50001", 0xe02d_daf1_e2f6_8e53, 0x10a7_0440_59d5_30d9), ("12345678", 0x39f2_083f_0d98_ff0b, 0xbd4d_02a7_0360_ebdf),
            ("123456789abcdefghi", 0x1744_ab1a_bb2f_b4de, 0xca8a_3282_4ef0_8ca1), ("é✓", 0x475b_d37d_787a_d676, 0xc892_a260_c5b4_9c31),
        ])
    func wordHasherMatchesItsReference(text: String, first: UInt64, second: UInt64) {
        // The reference: scripts/word_hasher_reference.py, written from the definition alone.
        var one = WordHasher(seed: 0)
        one.combine(text)
        #expect(one.value == first)
        var other = WordHasher(seed: 7, multiplier: WordHasher.secondMultiplier)
        other.combine(text)
        #expect(other.value == second)
        var (pairFirst, pairSecond) = (WordHasher(seed: 0), WordHasher(seed: 7, multiplier: WordHasher.secondMultiplier))
        WordHasher.combine(text, into: &pairFirst, &pairSecond)
        #expect(pairFirst.value == first && pairSecond.value == second)
        var words = WordHasher(seed: 1)
        words.combine(0 as UInt64)
        words.combine(UInt64.max)
        #expect(words.value == 0x042c_67eb_7a1c_10f4)
    }

    @Test("WordHasher: strings that run together differ, a resumed hash equals one made in one go, one changed word always changes the hash")
    func wordHasherSeparatesAndResumes() {
        var joined = WordHasher(seed: 0)
        joined.combine("ab")
        joined.combine("c")
        var split = WordHasher(seed: 0)
        split.combine("a")
        split.combine("bc")
        #expect(joined.value != split.value)
        var resumed = WordHasher(state: WordHasher(seed: 0).state, multiplier: WordHasher.firstMultiplier)
        resumed.combine("ab")
        resumed.combine("c")
        #expect(resumed.value == joined.value)
        // A step is one-to-one in its word: 10,000 sequences differing only in their middle word
        // give 10,000 hashes.
        var random = SplitMix64(seed: 40)
        let (before, after) = (random.next(), random.next())
        var seen = Set<UInt64>()
        for _ in 0..<10_000 {
            var hasher = WordHasher(seed: 3)
            hasher.combine(before)
            hasher.combine(random.next())
            hasher.combine(after)
            seen.insert(hasher.value)
        }
        #expect(seen.count == 10_000)
    }

    @Test("SplitMix64 gives the reference sequence for seed 0")
    func splitMixMatchesTheReference() {
        var random = SplitMix64(seed: 0)
        #expect([random.next(), random.next(), random.next()] == [0xe220_a839_7b1d_cdaf, 0x6e78_9e6a_a1b9_65f4, 0x06c4_5d18_8009_454f])
    }
}
