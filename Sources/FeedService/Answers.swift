public import FeedWire
import ListDiff

/// A composed page.
///
/// A class with only constant properties, so it behaves as a value: each poll and each live
/// event takes the page out of the cache, and a copy of a struct retained each of its arrays and
/// strings.
public final class RenderedFeed: Sendable {
    /// Its snapshot id (also the HTTP ETag).
    public let snapshotID: String
    /// The sections of the page.
    public let sections: [FeedSection]
    /// The cursor of the next page, if any.
    public let nextCursor: String?
    /// The page's structure, as remembered for deltas.
    public let structure: SnapshotStructure
    /// When the page is an earlier page with items rendered again in place (a write changed
    /// what they show), or with only some sections' items changed (a new video slid the grids
    /// on): that page's snapshot and what changed. A client holding that snapshot is sent the
    /// change without a diff.
    let patchedFrom: Patched?

    init(snapshotID: String, sections: [FeedSection], nextCursor: String?, structure: SnapshotStructure, patchedFrom: Patched? = nil) {
        self.snapshotID = snapshotID
        self.sections = sections
        self.nextCursor = nextCursor
        self.structure = structure
        self.patchedFrom = patchedFrom
    }

    /// An earlier page and what changed since.
    struct Patched: Sendable {
        /// The snapshot of the page patched.
        let snapshotID: String
        /// What changed.
        let change: Change

        enum Change: Sendable {
            /// Items' versions changed at these paths, ascending, each item in its place;
            /// nothing else did.
            case itemsUpdated([ItemPath])
            /// Only these sections (ascending) changed, in their items, headers or footers;
            /// every other section, and the list of sections, is as it was. (A changed
            /// section's items in another order, or its id or kind, are diffed.)
            case sectionsChanged([Int])
        }
    }

    /// Sizes items for the screen width the page was asked with, if one was.
    public var layout: Layout? { structure.parameters.width.map(Layout.init(width:)) }

    /// The page as FeedWire writes it.
    public var document: FeedPage {
        FeedPage(
            snapshot: snapshotID, viewer: structure.viewer, sections: sections, nextCursor: nextCursor, layout: layout,
            prefetch: structure.prefetchHint)
    }
}

/// What ``FeedService/delta(viewer:since:format:)`` found, without touching storage.
public enum DeltaLookup: Sendable {
    /// The snapshot was in memory: here is the answer.
    case answered(DeltaOutcome)
    /// The snapshot is not in memory (evicted for memory, or handed out before a restart): ask
    /// ``FeedService/deltaReadingStorage(viewer:since:format:)``, off the event loop.
    case needsStorage
    /// The snapshot is in memory, but its page must be composed again (milliseconds of CPU):
    /// ask ``FeedService/deltaReadingStorage(viewer:since:format:)`` off the event loop (it
    /// composes, and reads the snapshot back if it was evicted meanwhile). Only answered when
    /// asked not to compose.
    case needsComposition
}

/// The answer to a delta request.
public enum DeltaOutcome: Sendable {
    /// The client holds the feed as it is now (HTTP 304).
    case unchanged(snapshotID: String)
    /// The delta from the client's snapshot to the feed now, in the form asked for.
    case changed(DeltaDocument)

    /// The snapshot id of the feed now (the ETag).
    public var snapshotID: String {
        switch self {
        case .unchanged(let id): return id
        case .changed(let delta): return delta.snapshot
        }
    }

    /// The delta, or nil when nothing changed.
    public var delta: DeltaDocument? {
        if case .changed(let delta) = self { return delta }
        return nil
    }
}

/// The question a delta answers (viewer, the snapshot it is asked since, the form): the key of
/// the service's cache of computed deltas.
struct DeltaKey: Hashable {
    let viewer: Int64
    let since: String
    let format: DeltaFormat
}
