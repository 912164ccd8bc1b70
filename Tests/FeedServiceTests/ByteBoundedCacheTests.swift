import Testing

// @testable: `ByteBoundedCache` is internal to the service (its caches' storage), and these tests
// check its accounting directly.
@testable import FeedService

@Suite("A cache bounded in bytes")
struct ByteBoundedCacheTests {
    @Test("A value replacing another takes its cost; one over the budget leaves the key empty unless it is pinned")
    func replacingKeepsTheCostsRight() {
        var cache = ByteBoundedCache<Int, String>(budget: 100)
        cache.insert("a", for: 1, cost: 40)
        cache.insert("b", for: 1, cost: 30)
        #expect(cache.value(for: 1) == "b" && cache.totalCost == 30)
        cache.insert("too big", for: 1, cost: 101)
        #expect(cache.value(for: 1) == nil && cache.totalCost == 0)
        cache.pin(2)
        cache.insert("pinned", for: 2, cost: 150)
        cache.insert("pinned again", for: 2, cost: 120)
        #expect(cache.value(for: 2) == "pinned again" && cache.pinnedCost == 120 && cache.totalCost == 0)
        cache.unpin(2)
        #expect(cache.value(for: 2) == nil && cache.pinnedCost == 0, "unpinned and over the budget: dropped")
    }

    @Test("A value is not stored over one the caller says stays")
    func keepsCurrentValues() {
        var cache = ByteBoundedCache<Int, Int>(budget: 100)
        cache.insert(5, for: 1, cost: 10)
        cache.insert(3, for: 1, cost: 20, unless: { $0 > 3 })
        #expect(cache.value(for: 1) == 5 && cache.totalCost == 10)
        cache.insert(7, for: 1, cost: 20, unless: { $0 > 7 })
        #expect(cache.value(for: 1) == 7 && cache.totalCost == 20)
    }

    @Test("An insert past the budget evicts down to seven eighths of it, never a pinned entry")
    func evictsPastTheBudget() {
        var cache = ByteBoundedCache<Int, Int>(budget: 80)
        cache.pin(0)
        cache.insert(0, for: 0, cost: 50)
        for key in 1...9 { cache.insert(key, for: key, cost: 10) }
        #expect(cache.totalCost <= 80 && cache.value(for: 0) == 0 && cache.pinnedCost == 50)
    }
}
