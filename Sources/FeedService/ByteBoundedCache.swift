/// A dictionary whose entries' total cost (bytes, as the caller counts them) stays under a
/// budget: an insert past it evicts entries until the total is under seven eighths of the
/// budget. Eviction takes entries in the dictionary's own order, which has nothing to do with
/// when they were used: no sort and no bookkeeping per lookup, so an eviction costs only the
/// entries it removes and never stalls the event loop the way sorting a large cache would.
/// A miss is only slower, never wrong.
struct ByteBoundedCache<Key: Hashable, Value> {
    private struct Entry {
        var value: Value
        var cost: Int
    }

    private var storage: [Key: Entry] = [:]
    /// The budget in bytes.
    let budget: Int
    /// The total cost of the entries.
    private(set) var totalCost = 0

    init(budget: Int) {
        self.budget = max(0, budget)
    }

    /// The value for `key`.
    func value(for key: Key) -> Value? {
        storage[key]?.value
    }

    /// Stores `value` at `cost` bytes (a value larger than the whole budget is not kept).
    mutating func insert(_ value: Value, for key: Key, cost: Int) {
        if let old = storage.removeValue(forKey: key) { totalCost -= old.cost }
        guard cost <= budget else { return }
        storage[key] = Entry(value: value, cost: cost)
        totalCost += cost
        if totalCost > budget { evict(downTo: budget / 8 * 7) }
    }

    private mutating func evict(downTo target: Int) {
        var victims: [Key] = []
        var freed = 0
        for (key, entry) in storage {
            guard totalCost - freed > target else { break }
            victims.append(key)
            freed += entry.cost
        }
        for key in victims { storage.removeValue(forKey: key) }
        totalCost -= freed
    }
}
