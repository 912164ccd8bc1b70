/// 64-bit FNV-1a over bytes: a hash that is the same in every process, on every run and every
/// machine, unlike Swift's `Hasher`, so item versions, snapshot ids and store digests survive
/// restarts and match across servers. Not a cryptographic hash.
///
/// Its combining methods are inlinable: called from the other modules once per byte or number
/// (a snapshot id folds two numbers per section, a section's hash every item's id and version),
/// each call and its loop cost more than the hashing (callgrind).
public struct StableHasher: Sendable {
    /// The hash so far.
    public var state: UInt64 { _state }

    @usableFromInline
    internal var _state: UInt64

    /// Starts a hash; different `seed`s give independent hashes of the same input.
    @inlinable
    public init(seed: UInt64 = 0) {
        _state = 0xcbf2_9ce4_8422_2325 ^ (seed &* 0x9E37_79B9_7F4A_7C15)
    }

    /// Resumes a hash from a ``state`` it reached earlier: combining the rest gives the same
    /// result as hashing everything in one go.
    @inlinable
    public init(state: UInt64) {
        _state = state
    }

    /// FNV-1a's 64-bit prime.
    @usableFromInline
    static var prime: UInt64 { 0x0000_0100_0000_01B3 }

    @inlinable
    public mutating func combine(_ byte: UInt8) {
        _state = (_state ^ UInt64(byte)) &* StableHasher.prime
    }

    public mutating func combine(bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { combine(bytes: $0) }
        if done == nil {
            for byte in bytes { combine(byte) }
        }
    }

    /// The bytes of an array (an item's data, hashed into its version). Not through the generic
    /// above, which another module calls unspecialised: its witness-table calls were 15 % of
    /// hashing items' data (callgrind).
    public mutating func combine(bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { combine(bytes: $0) }
    }

    /// The bytes in `buffer`.
    public mutating func combine(bytes buffer: UnsafeBufferPointer<UInt8>) {
        var state = _state
        for byte in buffer { state = (state ^ UInt64(byte)) &* StableHasher.prime }
        _state = state
    }

    /// A string followed by a separator byte, so ("ab","c") and ("a","bc") differ.
    @inlinable
    public mutating func combine(_ text: String) {
        withUTF8Bytes(of: text) { combine(bytes: $0) }
        combine(UInt8(0xFF))
    }

    /// `first.combine(text)` then `second.combine(text)`, in one pass over the text's bytes (two
    /// independent hashes of the same input, as a snapshot id takes).
    @inlinable
    public static func combine(_ text: String, into first: inout StableHasher, _ second: inout StableHasher) {
        withUTF8Bytes(of: text) { combine(bytes: $0, into: &first, &second) }
    }

    /// Both hashes over `bytes`, then the separator.
    @inlinable
    static func combine(bytes: UnsafeBufferPointer<UInt8>, into first: inout StableHasher, _ second: inout StableHasher) {
        var (a, b) = (first._state, second._state)
        for byte in bytes {
            a = (a ^ UInt64(byte)) &* prime
            b = (b ^ UInt64(byte)) &* prime
        }
        (first._state, second._state) = (a, b)
        first.combine(UInt8(0xFF))
        second.combine(UInt8(0xFF))
    }

    @inlinable
    public mutating func combine(_ value: Int64) {
        var value = UInt64(bitPattern: value)
        for _ in 0..<8 {
            combine(UInt8(truncatingIfNeeded: value))
            value >>= 8
        }
    }

    @inlinable
    public mutating func combine(_ value: UInt64) {
        combine(Int64(bitPattern: value))
    }
}

/// `body` over `text`'s UTF-8 bytes: in place for a native string (read through the UTF-8 view
/// a byte at a time, a short id cost hundreds of instructions), else a copy's. Inlinable, so
/// callers in other modules get it specialised: called as a generic, it cost each snapshot tag
/// and id check more than it saved (callgrind).
@inlinable
public func withUTF8Bytes<Result>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
    if let result = try text.utf8.withContiguousStorageIfAvailable(body) { return result }
    var copy = text
    return try copy.withUTF8(body)
}
