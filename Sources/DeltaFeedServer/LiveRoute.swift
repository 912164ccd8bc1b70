import EventHTTP
import FeedIndex
import FeedService
import FeedWire

/// `GET /v1/users/{id}/feed/live?since=&format=&limit=&cursor=&width=&stack_ads=`: the viewer's
/// feed as Server-Sent Events (``LiveStreams``). The loop checks the request and hands the
/// stream over; it computes nothing.
///
/// - `since` (or the `Last-Event-ID` header, which wins: EventSource sends it when it
///   reconnects) names the snapshot the client holds; the first event is the delta since it,
///   or none when nothing changed. Without one, or with one the server does not know (expired,
///   or a snapshot of another page), the first event is `reset` with the whole page.
/// - Viewer tokens: `Authorization: Bearer`, or the `deltafeed_token` cookie for browsers.
struct LiveRoute {
    let service: FeedService
    let viewers: ViewerAuthorization
    let live: LiveStreams

    static let headers = [
        ("Content-Type", "text/event-stream; charset=utf-8"),
        // no-transform: a proxy must not compress or otherwise hold back the events.
        ("Cache-Control", "no-cache, no-transform"),
        // nginx: pass each event on as it comes instead of buffering the answer.
        ("X-Accel-Buffering", "no"),
    ]

    func register(in router: inout Router) {
        let service = self.service
        let viewers = self.viewers
        let live = self.live
        router.get("/v1/users/{id}/feed/live") { request in
            let viewer = try request.id("id")
            try viewers.check(request, viewer: viewer, allowingCookie: true)
            let format = try request.deltaFormat()
            let parameters = try request.feedParameters()
            var resumeFrom: String? = nil
            if request.query["since"] != nil { resumeFrom = try request.since() }
            // EventSource resends the id of the last event it received; an id that is no
            // snapshot id (a proxy's, an old client's) is ignored and the stream starts afresh.
            if let last = request.headers["Last-Event-ID"] {
                resumeFrom = SnapshotStructure.isWellFormedID(last) ? last : nil
            }
            guard service.index.read({ $0.user(viewer) }) != nil else {
                throw HTTPError.notFound("User \(viewer) does not exist.")
            }
            let page = LiveStreams.Page(viewer: viewer, parameters: parameters)
            try LiveRoute.admit(live, page)
            if request.isHead {
                // The head alone: no stream starts, so the admission is given back.
                live.release(page)
                return .stream(from: "live-streams", headers: LiveRoute.headers) { _ in false }
            }
            let resume = resumeFrom
            return .stream(from: "live-streams", headers: LiveRoute.headers) { output in
                live.open(page, format: format, resumeFrom: resume, output: output)
                return true
            }
        }
    }

    /// Admits a stream of `page`, or refuses with a message that says which limit it would pass.
    static func admit(_ live: LiveStreams, _ page: LiveStreams.Page) throws {
        do {
            try live.admit(page)
        } catch .full {
            throw HTTPError(
                status: 503, code: "overloaded", message: "This server holds as many live streams as it allows (\(live.limits.maxStreams)); retry shortly.",
                headers: [("Retry-After", "5")])
        } catch .viewerFull {
            throw HTTPError(
                status: 503, code: "overloaded",
                message: "Viewer \(page.viewer) has \(live.limits.perViewer) live streams open, as many as one viewer may; close one and retry.",
                headers: [("Retry-After", "5")])
        } catch .stopping {
            throw HTTPError(status: 503, code: "shutting_down", message: "This server is shutting down; reconnect.", headers: [("Retry-After", "1")])
        }
    }
}
