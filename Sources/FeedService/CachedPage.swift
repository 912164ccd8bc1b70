import FeedIndex
import FeedWire
import Synchronization

/// A page in the cache, with the index position it is known to be current at.
///
/// A class: an entry is read from the cache for every poll and every live event, and a copy
/// of the struct it was retained each of its dozen arrays and strings.
final class CachedPage: Sendable {
    let page: RenderedFeed
    /// The index position the page is known current at: only raised, by whoever revalidates it.
    private let validated: Atomic<Int64>
    let dependencies: FeedDependencies
    /// For each section of the page, for each item, the video it shows (nil for other items).
    let videoRefs: SectionVideos
    /// Which composition this is (patches keep it): what a page shows changes only with a new
    /// composition, or with its last popular video's rank.
    let composition: UInt64
    /// The hashes of the page's snapshot id at its section boundaries (for the next patch).
    let idHashes: SnapshotStructure.IDHashes
    /// The region's videos in feed order, the grid index of each page section (nil: not a
    /// grid) and how many videos the feed holds: what a new video at the top shifts.
    let regionOrder: [VideoRef]
    let gridIndices: [Int?]
    let feedCount: Int

    init(
        page: RenderedFeed, validatedAt: Int64, dependencies: FeedDependencies, videoRefs: SectionVideos, composition: UInt64,
        idHashes: SnapshotStructure.IDHashes, regionOrder: [VideoRef], gridIndices: [Int?], feedCount: Int
    ) {
        self.page = page
        self.validated = Atomic(validatedAt)
        self.dependencies = dependencies
        self.videoRefs = videoRefs
        self.composition = composition
        self.idHashes = idHashes
        self.regionOrder = regionOrder
        self.gridIndices = gridIndices
        self.feedCount = feedCount
    }

    /// The index position the page is known current at.
    var validatedAt: Int64 { validated.load(ordering: .acquiring) }

    /// Records that the page is current at `sequence` too (no change since touched it).
    func raiseValidatedAt(to sequence: Int64) {
        validated.max(sequence, ordering: .acquiringAndReleasing)
    }

    /// Reads a word of each of the page's arrays at once, before a patch copies the page.
    ///
    /// A change touches pages nobody asked for since their last change (a like on a popular
    /// video: thousands of them, one after another), so their arrays are out of the processor's
    /// caches. A copy counts up each array's references with an atomic instruction, and those do
    /// not overlap: each waited for its own miss, about thirty in a row per page. Plain reads,
    /// all issued together, fetch the lines side by side first.
    func fetchArrays() {
        var words = dependencies.feedVideos.count &+ dependencies.regionVideos.count &+ dependencies.watchedVideos.count
        words &+= dependencies.regionPopular.count
        words &+= dependencies.shownUsers.count &+ dependencies.suggestionOrder.count &+ dependencies.followees.count
        words &+= regionOrder.count &+ gridIndices.count &+ videoRefs.sectionCount
        let sections = page.structure.sections.count
        for index in 0..<min(sections, page.sections.count) {
            words &+= page.sections[index].items.count &+ page.structure.sections[index].items.count
        }
        // Never true (counts are not negative): it keeps the reads from being optimised away.
        if words == Int.min { preconditionFailure("negative counts") }
    }

    /// What ``PageInterests`` of this page depend on.
    var interestStamp: PageInterests.Stamp {
        PageInterests.Stamp(dependencies, composition: composition)
    }

    /// An estimate of the memory it holds beyond the shared item bytes, its registration for
    /// notes included (``PageMarks``: its ``PageInterests`` and a slot in a list per id they
    /// name, about 20 bytes an id; about 5 KB for a page of a 240-video feed, measured as RSS).
    var cost: Int {
        var itemCount = 0
        for section in page.sections { itemCount += section.items.count }
        let interestIDs = dependencies.feedVideos.count + dependencies.shownUsers.count + dependencies.followees.count * 2
        return 512 + itemCount * 160 + page.sections.count * 120 + regionOrder.count * 16
            + (dependencies.feedVideos.count + dependencies.regionVideos.count + dependencies.watchedVideos.count + dependencies.shownUsers.count
                + dependencies.followees.count * 3 + dependencies.regionPopular.count * 3) * 8 + interestIDs * 20
    }
}

struct PageKey: Hashable {
    let viewer: Int64
    let parameters: FeedParameters

    /// Two words instead of seven fields: a key is hashed several times per poll and per live
    /// event (the cache, the notes, the held pages). Equal keys still compare field by field.
    func hash(into hasher: inout Hasher) {
        hasher.combine(viewer)
        var word = UInt64(truncatingIfNeeded: parameters.limit)
        word = word &* 31 &+ UInt64(truncatingIfNeeded: parameters.offset)
        word = word &* 4_099 &+ UInt64(truncatingIfNeeded: parameters.width ?? -1)
        word = word &* 4_099 &+ UInt64(truncatingIfNeeded: parameters.viewport ?? -1)
        word = word &* 1_021 &+ UInt64(truncatingIfNeeded: parameters.kinds.rawValue)
        word = word &* 3 &+ (parameters.stackAds ? 1 : 0)
        hasher.combine(word)
    }
}
