import EventHTTP
import FeedIndex
import FeedService
import FeedWire
import Foundation
import Gzip
import JSONBytes
import Synchronization

/// The read side: a viewer's feed and the deltas between its snapshots. Answered on the event
/// loop from memory; a snapshot that is no longer in memory is read from the store on the
/// `storageReads` pool, and a delta whose page must be composed again is computed on `compute`.
/// With viewer tokens configured, each route first checks the request's token against the
/// viewer in its path.
struct FeedRoutes {
    let service: FeedService
    let viewers: ViewerAuthorization
    let storageReads: BlockingPool
    /// How the server compresses, so a page served again is gzipped once.
    let compression: ResponseCompression
    /// Where a large page is gzipped the first time, off the event loop.
    let compute: BlockingPool
    /// Delta requests waiting for their feed to change (`wait=`).
    let longPolls: LongPolls
    /// Holds answers that hand out a new snapshot until it is stored (replicas).
    let handOff: SnapshotHandOff
    /// Pages at least this large are gzipped on `compute` (about 0.1 ms per 10 KB at level 6).
    static let deferredCompressionBytes = 16 << 10
    /// Gzipped pages by snapshot id (which names the viewer, the parameters and the content).
    let gzippedPages = GzippedPages(budget: 16 << 20)
    /// The most sections a posted client snapshot may hold, and items per section.
    static let maxPostedSections = 400
    static let maxPostedItems = 100

    func register(in router: inout Router) {
        let service = self.service
        let storageReads = self.storageReads
        let viewers = self.viewers
        let compression = self.compression
        let gzippedPages = self.gzippedPages
        let compute = self.compute
        let longPolls = self.longPolls
        let handOff = self.handOff
        /// The answer for `outcome`: a changed delta hands out a new snapshot, so it leaves once
        /// that snapshot is stored.
        @Sendable func answer(_ outcome: DeltaOutcome) -> HTTPResponse {
            guard case .changed = outcome else { return FeedRoutes.response(for: outcome) }
            return handOff.answer(FeedRoutes.response(for: outcome))
        }
        // GET /v1/users/{id}/feed?limit=&cursor=&width=&stack_ads=&kinds=&viewport=
        router.get("/v1/users/{id}/feed") { request in
            let viewer = try request.id("id")
            try viewers.check(request, viewer: viewer)
            let parameters = try request.feedParameters()
            let feed = try translatingErrors { try service.feed(viewer: viewer, parameters: parameters) }
            let etag = "\"\(feed.snapshotID)\""
            if request.ifNoneMatch(feed.snapshotID) {
                return .empty(status: 304, headers: [("ETag", etag)])
            }
            var response = HTTPResponse.json(feed.document.bytes)
            response.headers.append(("ETag", etag))
            response.headers.append(("Cache-Control", "private, no-cache"))
            guard compression.gzips(for: request), response.body.count >= compression.minimumSize else { return handOff.answer(response) }
            if let kept = gzippedPages.kept(feed.snapshotID) {
                response.gzippedBody = kept
            } else if response.body.count >= FeedRoutes.deferredCompressionBytes {
                // A large page not gzipped yet: compressed on the compute pool, the loop serves
                // others. When the pool's queue is full (a burst of first feeds) it is compressed
                // here instead, as smaller pages are: a page is never refused for its compression.
                let page = response
                return .later(from: compute.name) { responder in
                    let compressed: @Sendable () -> HTTPResponse = {
                        var response = page
                        response.gzippedBody = gzippedPages.bytes(for: feed.snapshotID, level: compression.level) { page.body }
                        return response
                    }
                    if !compute.trySubmit({ handOff.respond(responder, with: compressed()) }) { handOff.respond(responder, with: compressed()) }
                    return true
                }
            } else {
                response.gzippedBody = gzippedPages.bytes(for: feed.snapshotID, level: compression.level) { response.body }
            }
            return handOff.answer(response)
        }
        // GET /v1/users/{id}/feed/delta?since=&format=&wait=
        router.get("/v1/users/{id}/feed/delta") { request in
            let viewer = try request.id("id")
            try viewers.check(request, viewer: viewer)
            let since = try request.since()
            let format = try request.deltaFormat()
            let wait = try request.waitSeconds()
            // The page's parameters (kinds and viewport included) are the snapshot's: a delta
            // stays within the capability set its snapshot was asked with. A client may send the
            // same kinds and viewport on every route; they are checked, so it learns of a typo.
            _ = try request.kinds()
            _ = try request.viewport()
            let position = service.index.sequence  // before the look: a later change moves it
            // A page to compose again is composed on the compute pool: milliseconds of CPU the
            // loop spends serving others (a viewer's own follow, a feed that is not full).
            let lookup = try translatingErrors { try service.delta(viewer: viewer, since: since, format: format, composing: false) }
            if wait > 0 {
                // Unless it has changed already, the request waits for its feed to change:
                // parked, off the loop, until a change or the end of the wait (304).
                let unchangedAt: Int64?
                switch lookup {
                case .answered(let outcome):
                    if case .changed = outcome { return answer(outcome) }
                    unchangedAt = position
                case .needsStorage, .needsComposition:
                    // The long-poll thread looks again (reading or composing) before it parks.
                    unchangedAt = nil
                }
                let deadline = Date(timeIntervalSinceNow: Double(wait))
                return .later(from: "long-polls") { responder in
                    longPolls.park(viewer: viewer, since: since, format: format, deadline: deadline, unchangedAt: unchangedAt, responder: responder)
                }
            }
            switch lookup {
            case .answered(let outcome):
                return answer(outcome)
            case .needsComposition:
                return .later(from: compute.name) { responder in
                    @Sendable func composed() {
                        // Composes (and reads the snapshot back if it was evicted meanwhile).
                        let outcome = Result { try translatingErrors { try service.deltaReadingStorage(viewer: viewer, since: since, format: format) } }
                        if case .success(let outcome) = outcome, case .changed = outcome {
                            handOff.respond(responder, with: FeedRoutes.response(for: outcome))
                        } else {
                            responder.respond { FeedRoutes.response(for: try outcome.get()) }
                        }
                    }
                    // With both pools' queues full (a burst), composed here, as it was before (the
                    // snapshot was in memory a moment ago: no read of the store).
                    if !compute.trySubmit(composed) && !storageReads.trySubmit(composed) { composed() }
                    return true
                }
            case .needsStorage:
                return .deferred(to: storageReads) {
                    let outcome = try translatingErrors { try service.deltaReadingStorage(viewer: viewer, since: since, format: format) }
                    // This pool's thread may wait: the new snapshot is stored before the answer.
                    if case .changed = outcome { handOff.waitUntilStored() }
                    return FeedRoutes.response(for: outcome)
                }
            }
        }
        // POST /v1/users/{id}/feed/delta?format=&limit=&cursor=&width=&stack_ads= with the
        // client's feed document (or just its structure) as the body.
        router.post("/v1/users/{id}/feed/delta") { request in
            let viewer = try request.id("id")
            try viewers.check(request, viewer: viewer)
            let format = try request.deltaFormat()
            let parameters = try request.feedParameters()
            let (structure, heldID) = try FeedRoutes.postedStructure(request.body, viewer: viewer, parameters: parameters)
            let outcome = try translatingErrors { try service.delta(viewer: viewer, from: structure, heldID: heldID, format: format) }
            return answer(outcome)
        }
    }

    static func response(for outcome: DeltaOutcome) -> HTTPResponse {
        let etag = "\"\(outcome.snapshotID)\""
        guard case .changed(let delta) = outcome else { return .empty(status: 304, headers: [("ETag", etag)]) }
        var response = HTTPResponse.json(delta.bytes)
        response.headers.append(("ETag", etag))
        return response
    }

    /// Reads `{"sections":[{"id","kind","items":[{"id","version"}…],"header"?,"footer"?}…],"prefetch"?}`
    /// — a feed document as returned by GET …/feed is accepted as is (other members are ignored
    /// but its `snapshot`, returned as `heldID`).
    static func postedStructure(
        _ body: [UInt8], viewer: Int64, parameters: FeedParameters
    ) throws -> (
        structure: SnapshotStructure, heldID: String?
    ) {
        guard case .object(let document) = try JSONValue.parse(body) else {
            throw HTTPError(status: 400, code: "invalid_json", message: "The body must be a feed document: a JSON object with \"sections\".")
        }
        func invalid(_ message: String) -> HTTPError {
            HTTPError(status: 422, code: "invalid_snapshot", message: message)
        }
        guard case .array(let sections)? = document["sections"] else {
            throw invalid("sections: required, an array of sections.")
        }
        guard sections.count <= maxPostedSections else {
            throw invalid("sections: at most \(maxPostedSections) sections.")
        }
        var shapes: [SnapshotStructure.Section] = []
        shapes.reserveCapacity(sections.count)
        for (sectionIndex, section) in sections.enumerated() {
            guard case .object(let members) = section,
                case .string(let id)? = members["id"], case .string(let kind)? = members["kind"],
                case .array(let items)? = members["items"]
            else {
                throw invalid("sections[\(sectionIndex)]: needs string id, string kind and an items array.")
            }
            guard items.count <= maxPostedItems else {
                throw invalid("sections[\(sectionIndex)].items: at most \(maxPostedItems) items.")
            }
            func shape(_ value: JSONValue, _ place: String) throws -> SnapshotStructure.Item {
                guard case .object(let itemMembers) = value,
                    case .string(let itemID)? = itemMembers["id"], case .string(let version)? = itemMembers["version"],
                    let shape = SnapshotStructure.Item(id: itemID, versionText: version)
                else {
                    throw invalid("sections[\(sectionIndex)].\(place): needs string id and a version of 16 lowercase hex digits.")
                }
                return shape
            }
            func view(_ name: String) throws -> SnapshotStructure.Item? {
                guard let value = members[name], value != .null else { return nil }
                return try shape(value, name)
            }
            shapes.append(
                SnapshotStructure.Section(
                    id: id, kind: kind, items: try items.enumerated().map { try shape($1, "items[\($0)]") }, header: try view("header"),
                    footer: try view("footer")))
        }
        var prefetch: Int?
        if case .object(let hint)? = document["prefetch"], case .int(let index)? = hint["index"], index >= 0, index < shapes.count {
            prefetch = Int(index)
        }
        // The snapshot the document says it is: one an earlier release made does not hash to it.
        var heldID: String?
        if case .string(let id)? = document["snapshot"] { heldID = id }
        return (SnapshotStructure(viewer: viewer, parameters: parameters, sections: shapes, prefetch: prefetch), heldID)
    }
}

/// Feed pages gzipped once and kept by snapshot id: a page served again (another device of the
/// viewer, a client that lost its copy, a viewer whose feed did not change) is not compressed
/// again. Least recently stored first out past a byte budget.
package final class GzippedPages: Sendable {
    private let pages: Mutex<(bytes: [String: [UInt8]], order: [String], total: Int)>
    private let budget: Int

    package init(budget: Int) {
        self.budget = budget
        pages = Mutex(([:], [], 0))
    }

    /// Bytes held now.
    package var total: Int { pages.withLock { $0.total } }

    /// The gzipped page `id` if it is kept.
    package func kept(_ id: String) -> [UInt8]? {
        pages.withLock { $0.bytes[id] }
    }

    /// The gzipped page `id`, compressing `body()` at `level` on a miss; nil when zlib refuses.
    package func bytes(for id: String, level: Int, body: () -> [UInt8]) -> [UInt8]? {
        if let hit = pages.withLock({ $0.bytes[id] }) { return hit }
        guard let compressed = Gzip.compress(body(), level: level) else { return nil }
        pages.withLock { pages in
            guard pages.bytes.updateValue(compressed, forKey: id) == nil else { return }
            pages.order.append(id)
            pages.total += compressed.count
            var dropped = 0
            while pages.total > budget, dropped < pages.order.count {
                if let old = pages.bytes.removeValue(forKey: pages.order[dropped]) { pages.total -= old.count }
                dropped += 1
            }
            pages.order.removeFirst(dropped)
        }
        return compressed
    }
}
