import FeedStore
import Foundation
import JSONBytes
import Synchronization

/// Composes viewers' feeds, remembers the snapshots it hands out, and answers deltas.
///
/// Thread-safe: called from every HTTP worker at once. Composed feeds are cached per viewer and
/// parameters and thrown away when the store's change version moves (any write); rendered
/// deltas are cached by (viewer, since, format) the same way, so repeated polls of an unchanged
/// feed cost a dictionary lookup.
public final class FeedService: Sendable {
    /// The store everything comes from.
    public let store: FeedStore
    private let pages = Mutex(BoundedCache<PageKey, RenderedFeed>(capacity: 4096))
    private let deltas = Mutex(BoundedCache<DeltaKey, DeltaOutcome>(capacity: 8192))
    /// Snapshots saved so far, per viewer: the store keeps only the newest few per viewer, so a
    /// cached page whose snapshot was saved that many saves ago may have been pruned. Bounded:
    /// a forgotten count reads as 0, which only causes a harmless extra save.
    private let saveCounts = Mutex(BoundedCache<Int64, UInt64>(capacity: 65536))

    /// Creates a service over `store`.
    public init(store: FeedStore) {
        self.store = store
    }

    // MARK: - Feed

    /// The feed page for `viewer` asked for with `parameters`, rendered as JSON, and its
    /// snapshot remembered for later deltas.
    ///
    /// - Throws: ``FeedError``.
    public func feed(viewer: Int64, parameters: FeedParameters) throws(FeedError) -> RenderedFeed {
        let version = store.changeVersion
        let key = PageKey(viewer: viewer, parameters: parameters)
        if let cached = pages.withLock({ $0[key] }), cached.changeVersion == version {
            guard mayHaveBeenPruned(cached.saved, viewer: viewer) else { return cached }
            // Serving this page again promises its snapshot works for the next delta: store it
            // anew, since retention may have pruned it while the page sat in the cache.
            var refreshed = cached
            refreshed.saved = try remember(cached.structure, id: cached.snapshotID)
            pages.withLock { $0[key] = refreshed }
            return refreshed
        }
        var rendered = try compose(viewer: viewer, parameters: parameters, changeVersion: version)
        rendered.saved = try remember(rendered.structure, id: rendered.snapshotID)
        pages.withLock { $0[key] = rendered }
        return rendered
    }

    /// Whether the store's retention (count per viewer, age) may have removed a snapshot saved
    /// as `saved`. Errs towards yes: saving again is an idempotent upsert.
    private func mayHaveBeenPruned(_ saved: SnapshotSave, viewer: Int64) -> Bool {
        let retention = store.options.snapshotRetention
        let savesSince = (saveCounts.withLock { $0[viewer] } ?? 0) &- saved.count
        let age = store.options.clock() - saved.at
        return savesSince >= UInt64(retention.maxPerViewer) || age >= retention.maxAgeMilliseconds / 2
    }

    // MARK: - Deltas

    /// The delta from snapshot `since` (issued earlier to this viewer) to the feed now.
    ///
    /// - Throws: ``FeedError/snapshotUnknown(_:)`` when `since` was never issued to `viewer`,
    ///   or has expired; ``FeedError/invalidParameter(name:reason:)`` when it is malformed.
    public func delta(viewer: Int64, since: String, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        guard SnapshotStructure.isWellFormedID(since) else {
            throw .invalidParameter(name: "since", reason: "must be a snapshot id: 32 lowercase hex digits")
        }
        let version = store.changeVersion
        let key = DeltaKey(viewer: viewer, since: since, format: format)
        if let cached = deltas.withLock({ $0[key] }), cached.changeVersion == version {
            return cached
        }
        guard let old = try snapshot(id: since, viewer: viewer) else { throw .snapshotUnknown(since) }
        let outcome = try delta(from: old, oldID: since, format: format, changeVersion: version)
        deltas.withLock { $0[key] = outcome }
        return outcome
    }

    /// The delta from a snapshot the client sends itself (for servers that forgot it, or that
    /// never saw it: another replica) to the feed now, asked for with `parameters`.
    ///
    /// - Throws: ``FeedError``.
    public func delta(viewer: Int64, from client: SnapshotStructure, format: DeltaFormat) throws(FeedError) -> DeltaOutcome {
        var client = client
        client.viewer = viewer
        return try delta(from: client, oldID: client.id, format: format, changeVersion: store.changeVersion)
    }

    private func delta(from old: SnapshotStructure, oldID: String, format: DeltaFormat, changeVersion: Int64) throws(FeedError) -> DeltaOutcome {
        let current = try feed(viewer: old.viewer, parameters: old.parameters)
        if current.snapshotID == oldID {
            return DeltaOutcome(changeVersion: changeVersion, snapshotID: oldID, body: nil)
        }
        let renderer = DeltaRenderer(old: old, oldID: oldID, page: current.sections, new: current.structure, newID: current.snapshotID, nextCursor: current.nextCursor)
        return DeltaOutcome(changeVersion: changeVersion, snapshotID: current.snapshotID, body: renderer.render(format))
    }

    // MARK: - Composition

    private func compose(viewer: Int64, parameters: FeedParameters, changeVersion: Int64) throws(FeedError) -> RenderedFeed {
        let composer = FeedComposer(stackAds: parameters.stackAds, renderer: ItemRenderer(layout: parameters.width.map(Layout.init(width:))))
        let all: [FeedSection]
        do {
            all = try store.read { reader in try composer.compose(viewer: viewer, reader: reader) }
        } catch let error as FeedError {
            throw error
        } catch let error as FeedStoreError {
            throw .storage(error)
        } catch {
            throw .storage(.storage(code: -1, message: "\(error)"))
        }
        let start = min(parameters.offset, all.count)
        let end = min(start + parameters.limit, all.count)
        let page = Array(all[start..<end])
        let nextCursor = end < all.count ? FeedCursor.encode(offset: end) : nil
        let structure = SnapshotStructure(viewer: viewer, parameters: parameters, page: page)
        let snapshotID = structure.id
        var json = JSONWriter(capacity: 1024 + page.count * 2048)
        json.raw("{\"snapshot\":\"\(snapshotID)\",\"viewer\":\(viewer),\"sections\":[")
        for (index, section) in page.enumerated() {
            if index > 0 { json.raw(",") }
            section.write(to: &json)
        }
        json.raw("],\"next_cursor\":")
        json.optionalString(nextCursor)
        json.raw("}")
        return RenderedFeed(changeVersion: changeVersion, snapshotID: snapshotID, sections: page, nextCursor: nextCursor, structure: structure, body: json.bytes)
    }

    // MARK: - Snapshots

    /// Stores a snapshot each time a page is composed (only after a write or for new
    /// parameters: cached pages are not stored again), so polling an unchanged feed writes nothing.
    private func remember(_ structure: SnapshotStructure, id: String) throws(FeedError) -> SnapshotSave {
        do {
            _ = try store.saveSnapshot(id: id, viewer: structure.viewer, structure: try structure.encoded())
        } catch let error as FeedStoreError {
            throw .storage(error)
        } catch {
            throw .storage(.storage(code: -1, message: "cannot encode snapshot: \(error)"))
        }
        let count = saveCounts.withLock { counts in
            let next = (counts[structure.viewer] ?? 0) &+ 1
            counts[structure.viewer] = next
            return next
        }
        return SnapshotSave(count: count, at: store.options.clock())
    }

    private func snapshot(id: String, viewer: Int64) throws(FeedError) -> SnapshotStructure? {
        // Always the table: it is the authority on expiry (the in-memory set only spares
        // re-saving). Reached only when the delta cache misses, i.e. after a write.
        let stored: StoredSnapshot?
        do {
            stored = try store.snapshot(id: id, viewer: viewer)
        } catch {
            throw .storage(error)
        }
        guard let stored, let structure = try? SnapshotStructure.decode(stored.structure), structure.viewer == viewer else {
            return nil
        }
        return structure
    }
}

/// A composed, rendered feed page.
public struct RenderedFeed: Sendable {
    /// The store's change version it was composed at.
    public let changeVersion: Int64
    /// Its snapshot id (also the HTTP ETag).
    public let snapshotID: String
    /// The sections of the page.
    public let sections: [FeedSection]
    /// The cursor of the next page, if any.
    public let nextCursor: String?
    /// The page's structure, as stored for deltas.
    public let structure: SnapshotStructure
    /// The JSON document: `{"snapshot","viewer","sections","next_cursor"}`.
    public let body: [UInt8]
    /// When its snapshot was last stored.
    var saved = SnapshotSave(count: 0, at: 0)
}

/// When a snapshot was stored: the viewer's save count after it, and the store clock.
struct SnapshotSave: Sendable {
    let count: UInt64
    let at: Int64
}

/// The answer to a delta request.
public struct DeltaOutcome: Sendable {
    /// The store's change version it was computed at.
    public let changeVersion: Int64
    /// The snapshot id of the feed now.
    public let snapshotID: String
    /// The rendered delta, or nil when nothing changed (HTTP 304).
    public let body: [UInt8]?
}

struct PageKey: Hashable {
    let viewer: Int64
    let parameters: FeedParameters
}

struct DeltaKey: Hashable {
    let viewer: Int64
    let since: String
    let format: DeltaFormat
}
