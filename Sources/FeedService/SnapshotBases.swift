/// The base each feed's snapshots are stored against (see ``FeedService/persistSnapshots()``): by
/// viewer and feed parameters, the id and structure of a snapshot kept in full among the store's
/// snapshot bases. Bounded in bytes; a feed whose base was dropped takes a new one.
struct SnapshotBases {
    /// One feed: a viewer and how it asked.
    struct Key: Hashable {
        let viewer: Int64
        let parameters: FeedParameters
    }

    /// A base the store holds.
    struct Base {
        let id: String
        let structure: SnapshotStructure
        /// When it was stored (the service's clock, Unix milliseconds).
        let createdAt: Int64
        /// An estimate of the memory it holds.
        let cost: Int
    }

    private var cache: ByteBoundedCache<Key, Base>

    init(budget: Int) {
        cache = ByteBoundedCache(budget: budget)
    }

    func base(for key: Key) -> Base? {
        cache.value(for: key)
    }

    mutating func insert(_ base: Base, for key: Key) {
        cache.insert(base, for: key, cost: base.cost)
    }
}
