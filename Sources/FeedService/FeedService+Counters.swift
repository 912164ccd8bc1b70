import Synchronization

/// What the service did and holds, for metrics, benchmarks and tests.
extension FeedService {
    /// How many new snapshots were not stored because their client moved on from them before
    /// the maintenance thread's pass (``storeEverySnapshot()``), since the start.
    package var supersededSnapshots: UInt64 { book.withLock { $0.superseded } }

    /// How many pages were composed from the index, patched in place (items re-rendered) and
    /// shifted for new videos at the top (grids shown again) since the start.
    package var pageWork: (composed: UInt64, patched: UInt64, shifted: UInt64) { pages.work }

    /// How many delta documents were built from the items a patch rendered again (a client one
    /// write behind a page patched in place), from the edits of the sections a shift changed
    /// (one new video behind), and by diffing the two structures, since the start. Answers
    /// served from the delta cache are not counted again.
    package var deltaWork: (patched: UInt64, edited: UInt64, diffed: UInt64) {
        (deltasPatched.load(ordering: .relaxed), deltasEdited.load(ordering: .relaxed), deltasDiffed.load(ordering: .relaxed))
    }

    /// How many carousels were ranked again for pages kept current (a followee's follow that
    /// could reorder them) since the start.
    package var carouselsRanked: UInt64 { pages.carouselsRanked }

    /// How many index changes polls judged against their cached pages so far: those noted on
    /// the page (``PageMarks``), not every change applied since.
    package var changesJudged: UInt64 { pages.changesJudged }

    /// Every change the index applied up to this sequence is noted on the cached pages.
    package var changesNotedThrough: Int64 { pages.notedThrough }

    /// How many pages are cached, and how many are registered for notes (``PageMarks``): every
    /// cached page, no other.
    package var pageRegistration: (cached: Int, registered: Int) { pages.registration }

    /// Bytes held by each cache now (for metrics and the memory benchmark).
    public var cacheBytes: (pages: Int, items: Int, deltas: Int, snapshots: Int) {
        (pages.bytes, items.bytes, deltas.withLock { $0.totalCost }, book.withLock { $0.bytes })
    }
}
