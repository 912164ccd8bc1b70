/// A dictionary that holds at most `capacity` entries; when full, inserting evicts an arbitrary
/// half (cheap, and good enough for caches whose misses are only slower, never wrong).
struct BoundedCache<Key: Hashable, Value> {
    private var storage: [Key: Value] = [:]
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    subscript(key: Key) -> Value? {
        get { storage[key] }
        set {
            if newValue != nil, storage[key] == nil, storage.count >= capacity {
                let victims = storage.keys.prefix(capacity / 2)
                for victim in Array(victims) { storage.removeValue(forKey: victim) }
            }
            storage[key] = newValue
        }
    }

    mutating func removeAll() {
        storage.removeAll()
    }
}
