import Deterministic
import EventHTTP
import FeedService
import FeedWire
import Foundation
import Prometheus
import Synchronization
import SystemCalls

/// Live feeds: each open `GET …/feed/live` stream gets the delta of its viewer's feed as soon as
/// the index applies a change that touches it, as Server-Sent Events.
///
/// One thread does the work; the event loops only hand streams over and write the bytes.
///
/// - **Fan-out in proportion to the change.** Each stream holds its page in the service's page
///   cache, where the page is registered by what it shows and each change is noted on the pages
///   it may touch (FeedService's `PageMarks`). When the index applies changes
///   (``FeedService/FeedService/onAdvance(_:)``), the thread asks which held pages were noted
///   (``FeedService/FeedService/heldPagesTouched(by:)``) and checks only the streams showing those:
///   a write no live viewer sees costs a few lookups.
/// - **One event in flight per stream.** A stream is sent its next event only once its last one
///   reached the socket (``EventHTTP/ResponseStream/isWritable``). A slow reader queues
///   nothing: when it catches up it gets one delta from what it last received to the feed then.
/// - **Coalescing.** A stream gets at most one event per ``LiveLimits/coalesce`` window: the first
///   change after a quiet spell goes out at once, changes landing within the window after it
///   are folded into one event at its end.
/// - **Heartbeats.** A stream that was sent nothing for ``LiveLimits/heartbeat`` gets a comment line,
///   so proxies and phones keep the connection and a dead client is found.
/// - **Shutdown** sends every stream `event: shutdown` and ends it, so clients reconnect (to
///   another replica) with `Last-Event-ID`.
package final class LiveStreams: @unchecked Sendable {
    // @unchecked: the inbox and counts are guarded by `condition`; everything else belongs to
    // the thread (`run()` and what it calls).

    /// A stream's page: a viewer's feed asked for with some parameters.
    struct Page: Hashable, Sendable {
        let viewer: Int64
        let parameters: FeedParameters
    }

    /// One open stream (the thread's).
    final class Stream {
        let id: UInt64
        let page: Page
        let format: DeltaFormat
        let output: ResponseStream
        /// The snapshot the client asked to resume from; used for its first event.
        var resumeFrom: String?
        /// The snapshot the client holds (the last event's id); nil before the first event.
        var held: String?
        /// When it was last sent an event, and anything at all.
        var lastEventAt: ContinuousClock.Instant
        var lastWriteAt: ContinuousClock.Instant

        init(id: UInt64, page: Page, format: DeltaFormat, resumeFrom: String?, output: ResponseStream, now: ContinuousClock.Instant) {
            self.id = id
            self.page = page
            self.format = format
            self.resumeFrom = resumeFrom
            self.output = output
            lastEventAt = now - .seconds(3600)
            lastWriteAt = now
        }
    }

    let limits: LiveLimits
    private let service: FeedService
    /// Where the snapshots events hand out are stored right after the events leave (replicas):
    /// a client that reconnects to another replica with `Last-Event-ID`, after the stream's
    /// `retry:` interval, resumes there.
    private let handOff: SnapshotHandOff
    /// Whether events handed to the loops since the last request for a store pass hand out
    /// snapshots.
    private var unstored = false
    private let clock = ContinuousClock()
    private let condition = NSCondition()
    /// Whether the thread is sending a change to its streams, and the stream of the last event
    /// it handed to the loops, until that event reaches the socket (``isSending``).
    private let sending = Atomic(false)
    private let lastHanded = Mutex<ResponseStream?>(nil)
    /// The thread's: the stream of the last event handed over in this round.
    private var lastOutput: ResponseStream?

    // Guarded by `condition`.
    private var opened: [Stream] = []
    private var closedIDs: [UInt64] = []
    /// Streams waiting for their last event to reach the socket before their next, and whether
    /// one of them got there (the thread wakes to check it; it is still owed its event).
    private var blocked: Set<UInt64> = []
    private var drained = false
    private var advanced = false
    private var stopping = false
    private var stopped = false
    private var openCount = 0
    private var perViewer: [Int64: Int] = [:]
    private var nextID: UInt64 = 0

    // The thread's.
    private var streams: [UInt64: Stream] = [:]
    private var pages: [Page: [UInt64]] = [:]
    /// Streams owed a check.
    private var dirty: Set<UInt64> = []
    private var nextHeartbeatScan: ContinuousClock.Instant
    /// The streams by the second their heartbeat falls due: the scan looks at those alone.
    private var heartbeatsDue: HeartbeatWheel
    /// Events on their way to the loops: handed over in batches (see `send`).
    private var batch = ResponseStreamBatch()
    /// Events per hand-over: large enough that the loops' locks are not taken per event, small
    /// enough that the first viewers of a change do not wait for the last ones' deltas.
    private static let batchSize = 128

    private let openGauge: Gauge
    private let deltaEvents: Counter
    private let resetEvents: Counter
    private let coalesced: Counter
    private let heartbeats: Counter
    private let fanOut: DurationHistogram

    init(service: FeedService, limits: LiveLimits, handOff: SnapshotHandOff, registry: PrometheusCollectorRegistry) {
        self.service = service
        self.handOff = handOff
        self.limits = limits
        nextHeartbeatScan = clock.now
        heartbeatsDue = HeartbeatWheel(start: nextHeartbeatScan, interval: limits.heartbeat)
        openGauge = registry.makeGauge(
            descriptor: MetricNameDescriptor(namespace: "deltafeed", metricName: "live_streams", unitName: "open", helpText: "Live feed streams open"))
        let events = MetricNameDescriptor(
            namespace: "deltafeed", metricName: "live_events", unitName: "total",
            helpText: "Events sent on live streams: a delta, or a reset (the full page) for a snapshot the server does not know")
        deltaEvents = registry.makeCounter(descriptor: events, labels: [("event", "delta")])
        resetEvents = registry.makeCounter(descriptor: events, labels: [("event", "reset")])
        coalesced = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "live_coalesced", unitName: "total",
                helpText: "Changes that touched a live stream already owed an event (folded into it)"))
        heartbeats = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "live_heartbeats", unitName: "total", helpText: "Heartbeat comments sent on idle live streams"))
        fanOut = registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "live_fanout", unitName: "seconds",
                helpText: "Time to find the live streams an applied batch of changes touches"),
            buckets: [.microseconds(10), .microseconds(100), .milliseconds(1), .milliseconds(10), .milliseconds(100), .seconds(1)])
        service.onAdvance { [weak self] in self?.feedsMayHaveChanged() }
        let thread = Thread { [self] in
            nameCurrentThread("df-live")
            run()
        }
        thread.start()
    }

    /// Why a stream was not admitted.
    enum Refusal: Error {
        case full
        case viewerFull
        case stopping
    }

    /// Admits a stream of `page` (on the event loop, in the route), or says why not;
    /// ``open(_:format:resumeFrom:output:)`` or ``release(_:)`` must follow an admission.
    func admit(_ page: Page) throws(Refusal) {
        condition.lock()
        defer { condition.unlock() }
        if stopping { throw .stopping }
        guard openCount < limits.maxStreams else { throw .full }
        guard perViewer[page.viewer, default: 0] < limits.perViewer else { throw .viewerFull }
        openCount += 1
        perViewer[page.viewer, default: 0] += 1
        openGauge.set(Int64(openCount))
    }

    /// Gives back an admission that never became a stream.
    func release(_ page: Page) {
        condition.lock()
        defer { condition.unlock() }
        releaseLocked(page.viewer)
    }

    private func releaseLocked(_ viewer: Int64) {
        openCount -= 1
        if let count = perViewer[viewer], count > 1 { perViewer[viewer] = count - 1 } else { perViewer[viewer] = nil }
        openGauge.set(Int64(openCount))
    }

    /// Starts serving an admitted stream: its first event is the delta since `resumeFrom` (a
    /// reset when that is nil or unknown), unless nothing changed since.
    func open(_ page: Page, format: DeltaFormat, resumeFrom: String?, output: ResponseStream) {
        output.send(Array("retry: \(limits.retry.milliseconds)\n\n".utf8))
        condition.lock()
        nextID &+= 1
        let stream = Stream(id: nextID, page: page, format: format, resumeFrom: resumeFrom, output: output, now: clock.now)
        if stopping {
            releaseLocked(page.viewer)
            condition.unlock()
            output.finish(LiveStreams.shutdownEvent)
            return
        }
        opened.append(stream)
        condition.signal()
        condition.unlock()
        let id = stream.id
        output.onEvent { [weak self] event in self?.streamEvent(id, event) }
    }

    private func streamEvent(_ id: UInt64, _ event: ResponseStream.Event) {
        condition.lock()
        defer { condition.unlock() }
        switch event {
        case .drained:
            guard blocked.remove(id) != nil else { return }
            drained = true
        case .closed:
            blocked.remove(id)
            closedIDs.append(id)
        }
        condition.signal()
    }

    private func feedsMayHaveChanged() {
        condition.signalling { advanced = true }
    }

    /// Sends every stream `event: shutdown`, ends it, and stops the thread; streams opened
    /// afterwards are refused (503).
    func shutdown() {
        condition.stopping({ stopping = true }, until: { stopped })
    }

    static let shutdownEvent = Array("event: shutdown\ndata: {\"reason\":\"the server is shutting down; reconnect with Last-Event-ID\"}\n\n".utf8)

    // MARK: - The thread

    private func run() {
        // Like the long polls: the event loops and the commit thread go first.
        lowerCurrentThreadPriority(niceness: 10)
        var wakeAt: ContinuousClock.Instant? = nil
        condition.lock()
        while true {
            while !stopping && !advanced && !drained && opened.isEmpty && closedIDs.isEmpty {
                let until = min(wakeAt ?? nextHeartbeatScan, nextHeartbeatScan)
                let now = clock.now
                if until <= now { break }
                _ = condition.wait(until: Date(timeIntervalSinceNow: (until - now).seconds))
            }
            if stopping {
                let all = Array(streams.values) + opened
                streams.removeAll()
                opened.removeAll()
                openCount = 0
                perViewer.removeAll()
                openGauge.set(Int64(0))
                stopped = true
                condition.broadcast()
                condition.unlock()
                for stream in all { stream.output.finish(LiveStreams.shutdownEvent) }
                return
            }
            let newStreams = opened
            let closed = closedIDs
            let changed = advanced
            opened.removeAll()
            closedIDs.removeAll()
            drained = false
            advanced = false
            condition.unlock()

            // New streams first: one that closed as soon as it opened is in both lists, and
            // must be set up before it is forgotten, or its place would never be given back.
            for stream in newStreams {
                streams[stream.id] = stream
                if pages[stream.page] == nil {
                    // Kept composed while it is live: 10,000 live pages are more than the page
                    // cache's default budget holds, and composing an evicted page again for
                    // each change was a fifth of the fan-out's time.
                    service.holdPage(viewer: stream.page.viewer, parameters: stream.page.parameters, for: .liveStreams)
                }
                pages[stream.page, default: []].append(stream.id)
                dirty.insert(stream.id)
                heartbeatsDue.file(stream.id, due: stream.lastWriteAt + limits.heartbeat)
            }
            var gone: [Int64] = []
            for id in closed {
                guard let stream = streams.removeValue(forKey: id) else { continue }
                gone.append(stream.page.viewer)
                dirty.remove(id)
                forget(stream)
            }
            if changed { markTouchedStreams() }
            if !dirty.isEmpty { sending.store(true, ordering: .relaxed) }
            wakeAt = sendOwedEvents()
            sendHeartbeats()
            flush()
            if let lastOutput {
                lastHanded.withLock { $0 = lastOutput }
                self.lastOutput = nil
            }
            sending.store(false, ordering: .relaxed)

            condition.lock()
            for viewer in gone { releaseLocked(viewer) }
        }
    }

    /// Whether the thread is sending a change to its streams now, or the loops are still writing
    /// what it handed them (they write in order, so until the last event reaches its socket): the
    /// maintenance thread, which runs ahead of this one (at nice 10) and alongside the loops,
    /// lets its snapshot upkeep wait meanwhile.
    var isSending: Bool {
        if sending.load(ordering: .relaxed) { return true }
        return lastHanded.withLock { output in
            guard let stream = output else { return false }
            if stream.isClosed || stream.isWritable { output = nil }
            return output != nil
        }
    }

    private func forget(_ stream: Stream) {
        guard var ids = pages[stream.page] else { return }
        ids.removeAll { $0 == stream.id }
        if ids.isEmpty {
            pages[stream.page] = nil
            service.releasePage(viewer: stream.page.viewer, parameters: stream.page.parameters, for: .liveStreams)
        } else {
            pages[stream.page] = ids
        }
    }

    /// Marks the streams whose pages the changes applied since the last fan-out may touch: the
    /// held pages the service noted them on (``FeedService/heldPagesTouched(by:)``).
    private func markTouchedStreams() {
        let started = clock.now
        for (viewer, parameters) in service.heldPagesTouched(by: .liveStreams) {
            for id in pages[Page(viewer: viewer, parameters: parameters)] ?? [] where !dirty.insert(id).inserted {
                coalesced.increment()
            }
        }
        fanOut.record(clock.now - started)
    }

    /// Checks every owed stream that may be sent an event now; returns when the next one may.
    private func sendOwedEvents() -> ContinuousClock.Instant? {
        var next: ContinuousClock.Instant? = nil
        var waiting: [UInt64] = []
        let now = clock.now
        for id in dirty {
            guard let stream = streams[id] else {
                dirty.remove(id)
                continue
            }
            let due = stream.lastEventAt + limits.coalesce
            if due > now {
                next = min(next ?? due, due)
                continue
            }
            guard stream.output.isWritable else {
                waiting.append(id)
                continue
            }
            dirty.remove(id)
            check(stream)
        }
        if !waiting.isEmpty {
            condition.lock()
            for id in waiting { blocked.insert(id) }
            condition.unlock()
            // One may have drained between the look and the marking: look again.
            for id in waiting where streams[id]?.output.isWritable == true {
                condition.lock()
                let wasBlocked = blocked.remove(id) != nil
                condition.unlock()
                if wasBlocked { next = now }
            }
        }
        return next
    }

    /// Sends `stream` what changed since the snapshot it holds, or the page when that is unknown.
    private func check(_ stream: Stream) {
        let viewer = stream.page.viewer
        do {
            if stream.held == nil {
                guard let since = stream.resumeFrom, resumes(stream, from: since) else {
                    try reset(stream)
                    return
                }
                stream.held = since
                stream.resumeFrom = nil
            }
            guard let held = stream.held else { return }
            var outcome = try service.liveDelta(viewer: viewer, since: held, format: stream.format)
            if outcome == nil {
                // Not in memory: read it back from the store (this thread may block), then look.
                _ = try service.deltaReadingStorage(viewer: viewer, since: held, format: stream.format)
                outcome = try service.liveDelta(viewer: viewer, since: held, format: stream.format)
            }
            guard let outcome else { throw FeedError.snapshotUnknown(held) }
            guard case .changed(let delta) = outcome else { return }
            send(stream, event: "delta", id: delta.snapshot, data: delta.bytes)
            stream.held = delta.snapshot
            deltaEvents.increment()
        } catch FeedError.viewerNotFound {
            flush()  // what was queued for it goes before its end
            stream.output.finish(LiveStreams.event("gone", id: nil, data: Array(#"{"error":"viewer_not_found"}"#.utf8)))
        } catch {
            // The snapshot expired, or the store could not read it back: the client starts over.
            try? reset(stream)
        }
    }

    /// Whether `since` is a snapshot of the stream's own page that the service can answer from.
    private func resumes(_ stream: Stream, from since: String) -> Bool {
        let viewer = stream.page.viewer
        if service.parameters(ofSnapshot: since, viewer: viewer) == nil {
            // Not in memory: read it back from the store (this thread may block).
            _ = try? service.deltaReadingStorage(viewer: viewer, since: since, format: stream.format)
        }
        return service.parameters(ofSnapshot: since, viewer: viewer) == stream.page.parameters
    }

    private func reset(_ stream: Stream) throws {
        let page = try service.livePage(viewer: stream.page.viewer, parameters: stream.page.parameters)
        send(stream, event: "reset", id: page.snapshotID, data: page.document.bytes)
        stream.held = page.snapshotID
        stream.resumeFrom = nil
        resetEvents.increment()
    }

    private func send(_ stream: Stream, event: StaticString, id: String, data: [UInt8]) {
        let now = clock.now
        stream.lastEventAt = now
        stream.lastWriteAt = now
        batch.send(LiveStreams.event(event, id: id, data: data), on: stream.output)
        lastOutput = stream.output
        unstored = true
        if batch.count >= LiveStreams.batchSize { flush() }
    }

    /// Hands the queued parts to the loops, then asks for their snapshots to be stored (one store
    /// pass for everything sent meanwhile; nothing to do without replicas). Waiting for the pass
    /// before sending would hold each batch of events for a round trip to the store: measured
    /// across 3 replicas, p50 delivery 277 ms instead of 72.
    private func flush() {
        batch.flush()
        if unstored {
            handOff.storeSoon()
            unstored = false
        }
    }

    /// Sends a comment to every stream that was sent nothing for the heartbeat interval (once a
    /// second at most). Only the streams whose heartbeat fell due are looked at: a write does not
    /// move a stream in ``heartbeatsDue``, so one written since it was filed is filed again for
    /// the interval after that write. Looking at every stream each second (cold objects) was a
    /// sixth of what 19,000 idle streams cost.
    private func sendHeartbeats() {
        let now = clock.now
        guard now >= nextHeartbeatScan else { return }
        nextHeartbeatScan = now + .seconds(1)
        let beat = Array(":\n\n".utf8)
        for id in heartbeatsDue.takeDue(through: now) {
            guard let stream = streams[id] else { continue }
            let due = stream.lastWriteAt + limits.heartbeat
            if due > now {
                heartbeatsDue.file(id, due: due)
            } else if stream.output.isWritable {
                stream.lastWriteAt = now
                batch.send(beat, on: stream.output)
                if batch.count >= LiveStreams.batchSize { flush() }
                heartbeats.increment()
                heartbeatsDue.file(id, due: now + limits.heartbeat)
            } else {
                // Its client has not taken the last write: looked at again next second.
                heartbeatsDue.file(id, due: now)
            }
        }
    }

    /// One Server-Sent Event: `event:`, `id:` and the data, one `data:` line per line of it.
    package static func event(_ name: StaticString, id: String?, data: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count + name.utf8CodeUnitCount + 64)
        // A piece at a time: the two interpolated lines cost about 2,000 instructions an event
        // (callgrind), more than framing the data.
        bytes.append(literal: "event: ")
        bytes.append(literal: name)
        if let id {
            bytes.append(literal: "\nid: ")
            withUTF8Bytes(of: id) { bytes.append(contentsOf: $0) }
        }
        bytes.append(literal: "\ndata: ")
        // Copied a run at a time, the line breaks found with `memchr`: the data is JSON, which
        // has none outside its strings, so it is one run, and a reset's page is tens of
        // kilobytes (looked at a byte at a time through a closure, its framing cost more than
        // the rest of the event).
        data.withUnsafeBufferPointer { data in
            guard let base = data.baseAddress else { return }
            var start = 0
            while start < data.count {
                let cut = Self.lineBreak(in: UnsafeBufferPointer(rebasing: data[start...]))
                guard let cut else {
                    bytes.append(contentsOf: UnsafeBufferPointer(start: base + start, count: data.count - start))
                    break
                }
                bytes.append(contentsOf: UnsafeBufferPointer(start: base + start, count: cut))
                if base[start + cut] == UInt8(ascii: "\n") { bytes.append(literal: "\ndata: ") }
                start += cut + 1
            }
        }
        bytes.append(literal: "\n\n")
        return bytes
    }

    /// Where the first `\n` or `\r` of `bytes` is, nil when there is none.
    private static func lineBreak(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        var end = bytes.count
        if let found = memchr(base, Int32(UInt8(ascii: "\n")), end) { end = base.distance(to: found.assumingMemoryBound(to: UInt8.self)) }
        if let found = memchr(base, Int32(UInt8(ascii: "\r")), end) { end = base.distance(to: found.assumingMemoryBound(to: UInt8.self)) }
        return end < bytes.count ? end : nil
    }
}

extension [UInt8] {
    /// Appends a literal's bytes, straight from the binary.
    fileprivate mutating func append(literal: StaticString) {
        literal.withUTF8Buffer { append(contentsOf: $0) }
    }
}

extension Duration {
    /// The whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The duration in seconds, as a Double.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
