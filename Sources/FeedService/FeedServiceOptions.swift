extension FeedService {
    /// Memory budgets of the caches, in bytes.
    public struct Options: Sendable {
        /// Composed pages (structure, dependencies; their items are shared). Default 128 MiB.
        public var pageCacheBytes: Int
        /// Rendered items. Default 64 MiB.
        public var itemCacheBytes: Int
        /// Computed deltas, for clients that ask the same question again. Default 0: none. In
        /// the polling mix (2,000 viewers, each with its own snapshots) 150,000 changed polls
        /// found none, since a client asks from the snapshot of its last answer; keeping them
        /// cost CPU and memory (BENCHMARKS, session 23).
        public var deltaCacheBytes: Int
        /// Snapshot structures kept in memory; past it the least recently served viewers'
        /// snapshots are read back from the store when asked for. Default 128 MiB.
        public var snapshotBytes: Int
        /// How many changes are noted on a cached page before it reads them from the index's
        /// log instead (``PageMarks``). Tests lower it to take that path.
        package var notesPerPage = PageMarks.defaultMaxNotes

        /// Options with every default.
        public init(
            pageCacheBytes: Int = 128 << 20, itemCacheBytes: Int = 64 << 20,
            deltaCacheBytes: Int = 0, snapshotBytes: Int = 128 << 20
        ) {
            self.pageCacheBytes = pageCacheBytes
            self.itemCacheBytes = itemCacheBytes
            self.deltaCacheBytes = deltaCacheBytes
            self.snapshotBytes = snapshotBytes
        }
    }
}
