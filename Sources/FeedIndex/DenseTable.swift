/// Records by id, in an array indexed by the id: ids are the store's AUTOINCREMENT keys, dense
/// from 1, so a lookup is one bounds check and a load, with no hashing. Ids far beyond the
/// number of records (a store whose ids were set by hand) go to a dictionary instead, so
/// memory stays proportional to the records.
package struct DenseTable<Value> {
    private var slots: [Value?] = []
    private var overflow: [Int64: Value] = [:]
    /// The number of records.
    package private(set) var count = 0

    package init() {}

    /// Ids up to this go to the array: twice the records, plus room to grow.
    private var denseLimit: Int64 { Int64(max(1 << 16, 2 * count + 1024)) }

    package subscript(id: Int64) -> Value? {
        get {
            if id > 0, id < Int64(slots.count), let value = slots[Int(id)] { return value }
            return overflow.isEmpty ? nil : overflow[id]
        }
        set {
            // Clear both places (an id stored in the overflow may since lie within the array).
            var existed = false
            if id > 0, id < Int64(slots.count), slots[Int(id)] != nil {
                slots[Int(id)] = nil
                existed = true
            }
            if !overflow.isEmpty, overflow.removeValue(forKey: id) != nil { existed = true }
            if existed { count -= 1 }
            guard let newValue else { return }
            count += 1
            if id > 0, id < denseLimit {
                // Appending grows the array geometrically. (Reserving exactly `id + 1` here made
                // every new record past the capacity reallocate and copy the whole table: on a
                // million-video store, ~100 MB moved per new video with the writer lock held.)
                while slots.count <= Int(id) { slots.append(nil) }
                slots[Int(id)] = newValue
            } else {
                overflow[id] = newValue
            }
        }
    }

    package mutating func removeValue(forKey id: Int64) -> Value? {
        let old = self[id]
        if old != nil { self[id] = nil }
        return old
    }

    package mutating func reserveCapacity(_ capacity: Int) {
        slots.reserveCapacity(capacity + 1)
    }

    /// How many ids the array holds room for before it must grow (for tests).
    package var capacity: Int { slots.capacity }

    /// Every (id, record), by id for the dense part.
    package var entries: [(id: Int64, value: Value)] {
        var result: [(id: Int64, value: Value)] = []
        result.reserveCapacity(count)
        for (index, slot) in slots.enumerated() {
            if let slot { result.append((Int64(index), slot)) }
        }
        for (id, value) in overflow.sorted(by: { $0.key < $1.key }) { result.append((id, value)) }
        return result
    }
}

/// Counts per user id for one composition, with cheap hashing (Fibonacci multiplicative) and
/// open addressing: the suggestions' mutual-followee counts touch hundreds of ids per feed,
/// where a `Dictionary` would spend most of its time in SipHash.
package struct CountingTable {
    private var keys: [Int64]
    private var counts: [Int32]
    private let mask: Int
    private static let empty = Int64.min
    /// A count that marks an id as excluded: ``add(_:)`` leaves it alone.
    package static let excluded: Int32 = -1

    /// A table for about `expected` distinct ids.
    package init(expected: Int) {
        var capacity = 64
        while capacity < expected * 2 { capacity <<= 1 }
        keys = Array(repeating: CountingTable.empty, count: capacity)
        counts = Array(repeating: 0, count: capacity)
        mask = capacity - 1
    }

    private func slot(for id: Int64) -> Int {
        var index = Int(truncatingIfNeeded: (UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
        while keys[index] != id && keys[index] != CountingTable.empty {
            index = (index + 1) & mask
        }
        return index
    }

    /// Marks `id` as excluded from counting.
    package mutating func exclude(_ id: Int64) {
        let index = slot(for: id)
        keys[index] = id
        counts[index] = CountingTable.excluded
    }

    /// Adds one to `id`'s count unless it is excluded; the table must not be full.
    package mutating func add(_ id: Int64) {
        let index = slot(for: id)
        if keys[index] == CountingTable.empty {
            keys[index] = id
            counts[index] = 1
        } else if counts[index] != CountingTable.excluded {
            counts[index] += 1
        }
    }

    /// Every counted (not excluded) id with its count.
    package func forEachCounted(_ body: (Int64, Int32) -> Void) {
        for index in keys.indices where keys[index] != CountingTable.empty && counts[index] > 0 {
            body(keys[index], counts[index])
        }
    }
}
