/// An open-addressing hash table from identifiers to integers: linear
/// probing over a power-of-two number of slots, each slot holding its value
/// and its key side by side, so that a lookup touches one cache line.
///
/// The diff's only hash table: it maps each identifier of the old list to its
/// first old index, and each identifier found only in the new list to an
/// encoding of its first new index (see ``_IdentifierTable/encodeNewOnly(_:)``).
/// It replaces `Dictionary` because the diff spends most of its time here:
/// `Int` identifiers are hashed with one multiplication by a random odd
/// number drawn once per process (multiply-shift hashing, which keeps the top
/// bits) instead of SipHash, and a slot is one contiguous record instead of a
/// key in one array and a value in another. Other identifier types use their
/// `hashValue` (the standard, per-process seeded hasher), multiplied too.
/// Because the multiplier is secret and random, a client that picks the
/// identifiers (the server diffs arrays it receives) cannot aim them at one
/// slot; the diff's result never depends on it.
///
/// Filled once by the diff, then only read: it is shared by value semantics
/// of the enclosing ``IndexDiff`` and never mutated after the diff returns.
/// A random odd multiplier, drawn once per process, for ``_IdentifierTable``.
@usableFromInline
internal let _hashMultiplier: UInt = UInt(truncatingIfNeeded: UInt64.random(in: .min ... .max)) | 1

@usableFromInline
internal struct _IdentifierTable<ID: Hashable> {
    /// The value of an empty slot.
    @inlinable
    internal static var empty: Int { Int.min }

    /// The slots.
    @usableFromInline
    internal var buffer: _IdentifierTableBuffer<ID>

    /// 64 − log2(capacity): multiply-shift hashing keeps the top bits.
    @usableFromInline
    internal var shift: Int

    /// The process's hash multiplier, copied here out of the hot loop.
    @usableFromInline
    internal let multiplier: UInt

    /// The number of occupied slots.
    @usableFromInline
    internal var count: Int

    /// Creates an empty table that holds `minimumCount` keys without growing.
    @inlinable
    internal init(minimumCount: Int) {
        // Keep the load at most 3/4.
        var capacity = 8
        var shift = 61
        while capacity &* 3 < minimumCount &* 4 {
            capacity &<<= 1
            shift &-= 1
        }
        self.shift = shift
        self.multiplier = _hashMultiplier
        self.count = 0
        self.buffer = _IdentifierTableBuffer(capacity: capacity)
    }

    /// The home slot of `key`.
    @inlinable @inline(__always)
    internal func _home(_ key: ID) -> Int {
        let hash: UInt
        if ID.self == Int.self {
            hash = UInt(bitPattern: unsafeBitCast(key, to: Int.self))
        } else {
            hash = UInt(bitPattern: key.hashValue)
        }
        return Int(bitPattern: (hash &* multiplier) &>> UInt(bitPattern: shift))
    }

    /// The slot holding `key`, or the empty slot where it would go.
    @inlinable @inline(__always)
    internal func _find(_ key: ID) -> (slot: Int, found: Bool) {
        let buffer = self.buffer
        let mask = buffer.capacity &- 1
        var slot = _home(key)
        while true {
            if buffer.value(at: slot) == Self.empty { return (slot, false) }
            if buffer.key(at: slot).pointee == key { return (slot, true) }
            slot = (slot &+ 1) & mask
        }
    }

    /// Stores `value` for `key` and returns the previous value, or ``empty``
    /// when the key was absent.
    ///
    /// - Complexity: O(1) expected.
    @inlinable @inline(__always)
    internal mutating func exchange(_ key: ID, with value: Int) -> Int {
        let (slot, found) = _find(key)
        if found {
            let previous = buffer.value(at: slot)
            buffer.setValue(value, at: slot)
            return previous
        }
        _insert(key, value, at: slot)
        return Self.empty
    }

    /// Returns the value for `key`; when absent, stores `value` for it and
    /// returns ``empty``.
    ///
    /// - Complexity: O(1) expected.
    @inlinable @inline(__always)
    internal mutating func valueOrInsert(_ key: ID, _ value: Int) -> Int {
        let (slot, found) = _find(key)
        if found { return buffer.value(at: slot) }
        _insert(key, value, at: slot)
        return Self.empty
    }

    /// The value for `key`, or ``empty``.
    ///
    /// - Complexity: O(1) expected.
    @inlinable
    internal func value(for key: ID) -> Int {
        let (slot, found) = _find(key)
        return found ? buffer.value(at: slot) : Self.empty
    }

    @inlinable @inline(__always)
    internal mutating func _insert(_ key: ID, _ value: Int, at slot: Int) {
        buffer.key(at: slot).initialize(to: key)
        buffer.setValue(value, at: slot)
        count &+= 1
        if count &* 4 > buffer.capacity &* 3 { _grow() }
    }

    /// Doubles the capacity, moving every key to its new slot.
    @usableFromInline
    internal mutating func _grow() {
        let old = buffer
        buffer = _IdentifierTableBuffer(capacity: old.capacity &* 2)
        shift &-= 1
        let mask = buffer.capacity &- 1
        for slot in 0..<old.capacity {
            let value = old.value(at: slot)
            if value == Self.empty { continue }
            let key = old.key(at: slot).move()
            old.setValue(Self.empty, at: slot)
            var target = _home(key)
            while buffer.value(at: target) != Self.empty { target = (target &+ 1) & mask }
            buffer.key(at: target).initialize(to: key)
            buffer.setValue(value, at: target)
        }
    }

    /// The value stored for an identifier found only in the new list, whose
    /// first occurrence is at `newIndex`: negative, and never ``empty``.
    @inlinable @inline(__always)
    internal static func encodeNewOnly(_ newIndex: Int) -> Int {
        -2 &- newIndex
    }

    /// The first new index stored by ``encodeNewOnly(_:)``.
    @inlinable @inline(__always)
    internal static func decodeNewOnly(_ value: Int) -> Int {
        -2 &- value
    }
}

/// The slots of an ``_IdentifierTable``: per slot, an `Int` value at offset 0
/// and, when the value is not `Int.min` (empty), an initialized key after it.
/// Owns the memory and deinitializes the keys it still holds.
@usableFromInline
internal final class _IdentifierTableBuffer<ID: Hashable> {
    @usableFromInline
    internal let storage: UnsafeMutableRawPointer

    /// The number of slots, a power of two.
    @usableFromInline
    internal let capacity: Int

    @inlinable @inline(__always)
    internal static var keyOffset: Int {
        let alignment = MemoryLayout<ID>.alignment
        return (MemoryLayout<Int>.size &+ alignment &- 1) / alignment &* alignment
    }

    @inlinable @inline(__always)
    internal static var alignment: Int {
        max(MemoryLayout<Int>.alignment, MemoryLayout<ID>.alignment)
    }

    @inlinable @inline(__always)
    internal static var stride: Int {
        let end = keyOffset &+ MemoryLayout<ID>.size
        return (end &+ alignment &- 1) / alignment &* alignment
    }

    /// Allocates `capacity` empty slots.
    @inlinable
    internal init(capacity: Int) {
        let stride = Self.stride
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity &* stride, alignment: Self.alignment)
        self.capacity = capacity
        for slot in 0..<capacity {
            storage.storeBytes(of: Int.min, toByteOffset: slot &* stride, as: Int.self)
        }
    }

    deinit {
        if !_isPOD(ID.self) {
            for slot in 0..<capacity where value(at: slot) != Int.min {
                key(at: slot).deinitialize(count: 1)
            }
        }
        storage.deallocate()
    }

    /// The value at `slot`.
    @inlinable @inline(__always)
    internal func value(at slot: Int) -> Int {
        storage.load(fromByteOffset: slot &* Self.stride, as: Int.self)
    }

    /// Sets the value at `slot`.
    @inlinable @inline(__always)
    internal func setValue(_ value: Int, at slot: Int) {
        storage.storeBytes(of: value, toByteOffset: slot &* Self.stride, as: Int.self)
    }

    /// The key of `slot`; initialized only when the slot's value is not empty.
    @inlinable @inline(__always)
    internal func key(at slot: Int) -> UnsafeMutablePointer<ID> {
        (storage + (slot &* Self.stride &+ Self.keyOffset)).assumingMemoryBound(to: ID.self)
    }
}

// Written only while the diff runs; read-only once wrapped in an `IndexDiff`,
// so sharing it across threads is safe.
extension _IdentifierTableBuffer: @unchecked Sendable where ID: Sendable {}
extension _IdentifierTable: Sendable where ID: Sendable {}
