/// A 64-bit hash that takes eight bytes a step: what section versions and snapshot ids are made
/// of, where ``StableHasher`` (FNV-1a, a byte a step) cost a shifted page 55,000 instructions a
/// poll, its 14 grid sections hashed again (callgrind, BENCHMARKS session 40). Like
/// ``StableHasher`` it is the same in every process, on every run and every machine (words are
/// read little-endian whatever the CPU), so replicas of one release agree; unlike item versions,
/// which clients check and so stay FNV-1a, nothing outside the server computes these.
///
/// A step is `state = mix((state ^ word) × multiplier)`, where `mix` folds the high half into
/// the low one: multiplying by an odd number and the fold are both one-to-one, so a step is a
/// one-to-one function of the word for any state, and of the state for any word: two inputs of
/// the same shape that differ in one word never collide. ``value`` puts the state through
/// MurmurHash3's finaliser, so every input bit reaches every output bit. Not a cryptographic
/// hash.
///
/// A string is its UTF-8 byte count, then its bytes eight at a time, the last word padded with
/// zeros: knowing the count first, no two sequences of strings and numbers of one shape give the
/// same words.
public struct WordHasher: Sendable {
    /// The state so far (not finalised): resume with ``init(state:multiplier:)``.
    public var state: UInt64 { _state }
    @usableFromInline var _state: UInt64
    @usableFromInline let multiplier: UInt64

    /// The multiplier of the first of two independent hashes (2^64 divided by the golden ratio).
    public static let firstMultiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
    /// The multiplier of the second (MurmurHash3's second finaliser constant, odd).
    public static let secondMultiplier: UInt64 = 0xC4CE_B9FE_1A85_EC53

    /// Starts a hash; different seeds (or multipliers) give independent hashes of one input.
    @inlinable
    public init(seed: UInt64, multiplier: UInt64 = WordHasher.firstMultiplier) {
        self._state = (seed &* 0xFF51_AFD7_ED55_8CCD) ^ 0x2545_F491_4F6C_DD1D
        self.multiplier = multiplier | 1
    }

    /// Resumes a hash from a ``state`` it reached with the same multiplier.
    @inlinable
    public init(state: UInt64, multiplier: UInt64) {
        self._state = state
        self.multiplier = multiplier | 1
    }

    /// The hash of everything combined so far.
    @inlinable
    public var value: UInt64 {
        var hash = _state
        hash ^= hash >> 33
        hash &*= 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash &*= 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        return hash
    }

    @inlinable
    public mutating func combine(_ word: UInt64) {
        let product = (_state ^ word) &* multiplier
        _state = product ^ (product >> 32)
    }

    @inlinable
    public mutating func combine(_ value: Int64) {
        combine(UInt64(bitPattern: value))
    }

    /// A string: its UTF-8 byte count, then its bytes eight at a time.
    @inlinable
    public mutating func combine(_ text: String) {
        withUTF8Bytes(of: text) { bytes in
            combine(UInt64(bytes.count))
            WordHasher.forEachWord(of: bytes) { combine($0) }
        }
    }

    /// `first.combine(text)` then `second.combine(text)`, reading the text once.
    @inlinable
    public static func combine(_ text: String, into first: inout WordHasher, _ second: inout WordHasher) {
        withUTF8Bytes(of: text) { bytes in
            first.combine(UInt64(bytes.count))
            second.combine(UInt64(bytes.count))
            forEachWord(of: bytes) { word in
                first.combine(word)
                second.combine(word)
            }
        }
    }

    /// `first.combine(word)` then `second.combine(word)`.
    @inlinable
    public static func combine(_ word: UInt64, into first: inout WordHasher, _ second: inout WordHasher) {
        first.combine(word)
        second.combine(word)
    }

    /// The hash of `text` alone: what section versions and snapshot ids fold for an item's id,
    /// made once when the item is rendered (hashing the id's bytes in every section it is shown
    /// in cost a shifted page about 16,000 instructions a poll).
    @inlinable
    public static func hash(_ text: String) -> UInt64 {
        var hasher = WordHasher(seed: 0x1D)
        hasher.combine(text)
        return hasher.value
    }

    /// `bytes` as little-endian words, the last one padded with zero bytes.
    @inlinable
    static func forEachWord(of bytes: UnsafeBufferPointer<UInt8>, _ body: (UInt64) -> Void) {
        guard let base = bytes.baseAddress else { return }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        while offset + 8 <= bytes.count {
            body(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        guard offset < bytes.count else { return }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        body(tail)
    }
}
