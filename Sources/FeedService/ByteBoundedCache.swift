/// A dictionary whose entries' total cost (bytes, as the caller counts them) stays under a
/// budget: an insert past it evicts entries until the total is under seven eighths of the
/// budget. Eviction takes entries in the dictionary's own order, which has nothing to do with
/// when they were used: no sort and no bookkeeping per lookup, so an eviction costs only the
/// entries it removes and never stalls the event loop the way sorting a large cache would.
/// A miss is only slower, never wrong.
///
/// A key can be pinned (``pin(_:)``): its entry is then never evicted and its cost is counted
/// apart (``pinnedCost``), outside the budget: whoever pins bounds how many keys they pin.
struct ByteBoundedCache<Key: Hashable, Value> {
    private struct Entry {
        var value: Value
        var cost: Int
    }

    private var storage: [Key: Entry] = [:]
    /// How many times each pinned key is pinned.
    private var pins: [Key: Int] = [:]
    /// The budget in bytes.
    let budget: Int
    /// The total cost of the entries that are not pinned.
    private(set) var totalCost = 0
    /// The total cost of the pinned entries.
    private(set) var pinnedCost = 0

    init(budget: Int) {
        self.budget = max(0, budget)
    }

    /// How many entries it holds, pinned or not.
    var count: Int { storage.count }

    /// The value for `key`.
    func value(for key: Key) -> Value? {
        storage[key]?.value
    }

    /// Whether `key` has a value (without copying it).
    func contains(_ key: Key) -> Bool {
        storage[key] != nil
    }

    /// What an ``insert(_:for:cost:unless:)`` did.
    struct Insertion {
        /// Whether the value was stored.
        var stored: Bool
        /// The keys whose entries left the cache: evicted to make room, or the key itself when
        /// its new value was too large to keep.
        var removed: [Key]
    }

    /// Stores `value` at `cost` bytes (a value larger than the whole budget is not kept, unless
    /// its key is pinned), unless `keepsCurrent` says the value stored for `key` stays.
    ///
    /// A value replacing another takes its slot: the key is hashed once (a page patched by a
    /// write replaces itself, once per page the write reaches).
    @discardableResult
    mutating func insert(_ value: Value, for key: Key, cost: Int, unless keepsCurrent: (Value) -> Bool = { _ in false }) -> Insertion {
        let pinned = !pins.isEmpty && pins[key] != nil
        let slot = storage.index(forKey: key)
        if let slot {
            let old = storage.values[slot]
            if keepsCurrent(old.value) { return Insertion(stored: false, removed: []) }
            if pinned { pinnedCost -= old.cost } else { totalCost -= old.cost }
        }
        guard pinned || cost <= budget else {
            if let slot {
                storage.remove(at: slot)
                return Insertion(stored: false, removed: [key])
            }
            return Insertion(stored: false, removed: [])
        }
        let entry = Entry(value: value, cost: cost)
        if let slot { storage.values[slot] = entry } else { storage[key] = entry }
        if pinned {
            pinnedCost += cost
            return Insertion(stored: true, removed: [])
        }
        totalCost += cost
        return Insertion(stored: true, removed: totalCost > budget ? evict(downTo: budget / 8 * 7) : [])
    }

    /// Keeps the entry of `key` (present or inserted later) until as many ``unpin(_:)`` calls.
    mutating func pin(_ key: Key) {
        let count = pins[key, default: 0]
        pins[key] = count + 1
        if count == 0, let entry = storage[key] {
            totalCost -= entry.cost
            pinnedCost += entry.cost
        }
    }

    /// Undoes one ``pin(_:)``: after the last, the entry counts against the budget again.
    /// Returns the keys whose entries left the cache (this one, if it is too large to keep
    /// unpinned, or others evicted to make room).
    @discardableResult
    mutating func unpin(_ key: Key) -> [Key] {
        guard let count = pins[key] else { return [] }
        guard count == 1 else {
            pins[key] = count - 1
            return []
        }
        pins[key] = nil
        guard let entry = storage[key] else { return [] }
        pinnedCost -= entry.cost
        guard entry.cost <= budget else {
            storage[key] = nil
            return [key]
        }
        totalCost += entry.cost
        return totalCost > budget ? evict(downTo: budget / 8 * 7) : []
    }

    /// Evicts unpinned entries until their total cost is at most `target`; returns their keys.
    private mutating func evict(downTo target: Int) -> [Key] {
        var victims: [Key] = []
        var freed = 0
        for (key, entry) in storage where pins.isEmpty || pins[key] == nil {
            guard totalCost - freed > target else { break }
            victims.append(key)
            freed += entry.cost
        }
        for key in victims { storage.removeValue(forKey: key) }
        totalCost -= freed
        return victims
    }
}
