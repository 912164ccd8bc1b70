/// 64-bit FNV-1a over bytes: a hash that is the same in every process, on every run and every
/// machine, unlike Swift's `Hasher`, so item versions, snapshot ids and store digests survive
/// restarts and match across servers. Not a cryptographic hash.
public struct StableHasher: Sendable {
    /// The hash so far.
    public private(set) var state: UInt64

    /// Starts a hash; different `seed`s give independent hashes of the same input.
    public init(seed: UInt64 = 0) {
        state = 0xcbf2_9ce4_8422_2325 ^ (seed &* 0x9E37_79B9_7F4A_7C15)
    }

    /// Goes on from `state`, for a caller that ran the byte loop itself (several hashes of the
    /// same bytes in one pass), each byte as `state = (state ^ byte) &* prime`.
    public init(state: UInt64) {
        self.state = state
    }

    /// FNV-1a's 64-bit prime.
    public static let prime: UInt64 = 0x0000_0100_0000_01B3

    public mutating func combine(_ byte: UInt8) {
        state = (state ^ UInt64(byte)) &* StableHasher.prime
    }

    public mutating func combine(bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            var state = self.state
            for byte in buffer { state = (state ^ UInt64(byte)) &* StableHasher.prime }
            self.state = state
        }
        if done == nil {
            for byte in bytes { combine(byte) }
        }
    }

    /// A string followed by a separator byte, so ("ab","c") and ("a","bc") differ.
    public mutating func combine(_ text: String) {
        var text = text
        text.withUTF8 { combine(bytes: $0) }
        combine(UInt8(0xFF))
    }

    public mutating func combine(_ value: Int64) {
        var value = UInt64(bitPattern: value)
        for _ in 0..<8 {
            combine(UInt8(truncatingIfNeeded: value))
            value >>= 8
        }
    }

    public mutating func combine(_ value: UInt64) {
        combine(Int64(bitPattern: value))
    }
}
