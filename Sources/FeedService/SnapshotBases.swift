/// The base each viewer's snapshots are stored against (see ``FeedService/persistSnapshots()``):
/// the id and structure of a snapshot kept in full among the store's snapshot bases. One per
/// viewer, whatever width or limit its feeds are asked with: they show the same sections. Bounded
/// in bytes; a viewer whose base was dropped takes a new one.
struct SnapshotBases {
    /// Whose snapshots.
    struct Key: Hashable {
        let viewer: Int64
    }

    /// A base the store holds.
    struct Base {
        let id: String
        let structure: SnapshotStructure
        /// When it was stored (the service's clock, Unix milliseconds).
        let createdAt: Int64
        /// An estimate of the memory it holds.
        let cost: Int
        /// Its sections and items by id, for encoding against it.
        let lookup: SnapshotCoding.BaseLookup

        init(id: String, structure: SnapshotStructure, createdAt: Int64, cost: Int) {
            self.id = id
            self.structure = structure
            self.createdAt = createdAt
            self.cost = cost
            lookup = SnapshotCoding.BaseLookup(structure)
        }
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

    /// Forgets every base (the store may have lost them): each viewer's next stored snapshot
    /// becomes its new base.
    mutating func removeAll() {
        cache = ByteBoundedCache(budget: cache.budget)
    }
}
