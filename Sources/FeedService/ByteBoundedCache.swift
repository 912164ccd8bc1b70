/// A dictionary whose entries' total cost (bytes, as the caller counts them) stays under a
/// budget: inserting past it evicts entries until the total is under three quarters of the
/// budget, least recently used first or, for caches whose entries are rarely read twice, in
/// whatever order is cheapest. A miss is only slower, never wrong.
struct ByteBoundedCache<Key: Hashable, Value> {
    private struct Entry {
        var value: Value
        var cost: Int
        var stamp: UInt64
    }

    private var storage: [Key: Entry] = [:]
    private var clock: UInt64 = 0
    /// The budget in bytes.
    let budget: Int
    /// Which entries go first when the budget is exceeded.
    enum Eviction {
        case leastRecentlyUsed
        /// Dictionary order: no sort, for caches where recency says little.
        case arbitrary
    }
    let eviction: Eviction
    /// The total cost of the entries.
    private(set) var totalCost = 0

    init(budget: Int, eviction: Eviction = .leastRecentlyUsed) {
        self.budget = max(0, budget)
        self.eviction = eviction
    }

    var count: Int { storage.count }

    /// The value for `key`, marking it recently used.
    mutating func value(for key: Key) -> Value? {
        guard let index = storage.index(forKey: key) else { return nil }
        clock &+= 1
        storage.values[index].stamp = clock
        return storage.values[index].value
    }

    /// Stores `value` at `cost` bytes (a value larger than the whole budget is not kept).
    mutating func insert(_ value: Value, for key: Key, cost: Int) {
        if let old = storage.removeValue(forKey: key) { totalCost -= old.cost }
        guard cost <= budget else { return }
        clock &+= 1
        storage[key] = Entry(value: value, cost: cost, stamp: clock)
        totalCost += cost
        if totalCost > budget { evict(downTo: budget / 4 * 3) }
    }

    mutating func removeValue(for key: Key) {
        if let old = storage.removeValue(forKey: key) { totalCost -= old.cost }
    }

    mutating func removeAll() {
        storage.removeAll()
        totalCost = 0
    }

    /// Evicts the least recently used entries until the total is at most `target`. Sorting is
    /// O(n log n) but runs once per quarter of the budget filled, so O(log n) per insert.
    private mutating func evict(downTo target: Int) {
        let victims = eviction == .arbitrary ? Array(storage) : storage.sorted { $0.value.stamp < $1.value.stamp }
        for (key, entry) in victims {
            guard totalCost > target else { break }
            storage.removeValue(forKey: key)
            totalCost -= entry.cost
        }
    }
}
