public import EventHTTP
public import FeedService
import FeedStore
import Logging
public import Prometheus
import Synchronization

/// The deltafeed HTTP service: the API's routes wired onto an ``EventHTTP/HTTPServer``.
///
/// Owns nothing global: metrics go to the registry given in the configuration (a fresh one by
/// default), so several servers can run in one process (tests do).
public final class DeltaFeedServer: Sendable {
    /// The running HTTP server.
    public let http: HTTPServer
    /// Where request and feed metrics are collected; `/metrics` renders it.
    public let registry: PrometheusCollectorRegistry
    /// The pools that keep storage reads and long CPU work off the event loops.
    public let pools: Pools
    /// Where every content write is committed, in groups.
    public let commits: GroupCommit
    private let maintenance: FeedMaintenance
    /// Delta requests waiting for their feed to change.
    let longPolls: LongPolls
    /// Live feed streams.
    let live: LiveStreams
    /// Answers that hand out a snapshot, held until it is stored (replicas).
    let handOff: SnapshotHandOff

    /// The thread pools behind the routes.
    public struct Pools: Sendable {
        /// Reads of snapshots no longer in memory.
        public let storageReads: BlockingPool
        /// Large `/v1/diff` bodies.
        public let compute: BlockingPool

        func shutdown() {
            storageReads.shutdown()
            compute.shutdown()
        }
    }

    private init(
        http: HTTPServer, registry: PrometheusCollectorRegistry, pools: Pools, commits: GroupCommit, longPolls: LongPolls, live: LiveStreams,
        handOff: SnapshotHandOff, maintenance: FeedMaintenance
    ) {
        self.http = http
        self.registry = registry
        self.pools = pools
        self.commits = commits
        self.longPolls = longPolls
        self.live = live
        self.handOff = handOff
        self.maintenance = maintenance
    }

    /// Builds the routes and starts listening.
    ///
    /// - Throws: ``EventHTTP/SystemError`` when the address cannot be bound.
    public static func start(configuration: DeltaFeedServerConfiguration) throws -> DeltaFeedServer {
        let registry = configuration.registry
        let pools = Pools(
            storageReads: BlockingPool(name: "storage-reads", threads: 2, queueCapacity: 1024),
            compute: BlockingPool(name: "compute", threads: max(1, configuration.http.threads), queueCapacity: 64))
        var router = Router()
        OperationalRoutes(registry: registry, isReady: configuration.isReady, beforeRendering: Self.serviceWorkMetrics(configuration.service, registry))
            .register(in: &router)
        let admin = AdminAuthorization(token: configuration.adminToken)
        let viewers = ViewerAuthorization(tokens: configuration.viewerTokens, admin: admin)
        // Every snapshot must reach the store then: another replica may be asked for any.
        if configuration.storesSnapshotsBeforeAnswering { configuration.service.storeEverySnapshot() }
        let handOff = SnapshotHandOff(
            enabled: configuration.storesSnapshotsBeforeAnswering, service: configuration.service, logger: configuration.http.logger,
            registry: registry)
        let longPolls = LongPolls(service: configuration.service, capacity: configuration.longPollCapacity, handOff: handOff, registry: registry)
        FeedRoutes(
            service: configuration.service, viewers: viewers, storageReads: pools.storageReads, compression: configuration.http.compression,
            compute: pools.compute, longPolls: longPolls, handOff: handOff
        ).register(in: &router)
        let live = LiveStreams(service: configuration.service, limits: configuration.live, handOff: handOff, registry: registry)
        LiveRoute(service: configuration.service, viewers: viewers, live: live).register(in: &router)
        DiffRoute(compute: pools.compute).register(in: &router)
        let groups = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "write_groups", unitName: "total", helpText: "Transactions of the group commit (one sync each)"))
        let grouped = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "grouped_writes", unitName: "total", helpText: "Writes committed in those transactions"))
        let commits = GroupCommit(service: configuration.service, limits: configuration.groupCommit) { report in
            groups.increment()
            if report.committed { grouped.increment(by: Int64(report.writes - report.failed)) }
        }
        AdminRoutes(service: configuration.service, admin: admin, viewers: viewers, commits: commits).register(in: &router)
        if configuration.demo {
            DemoRoutes().register(in: &router)
        }
        var http = configuration.http
        var metrics = PrometheusMetricsFactory(registry: registry)
        // Requests here take microseconds; the default buckets start at 5 ms.
        metrics.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(100), .milliseconds(500), .seconds(2.5), .seconds(10),
        ]
        http.metricsFactory = metrics
        let server: HTTPServer
        do {
            server = try HTTPServer.start(router: router, configuration: http)
        } catch {
            live.shutdown()
            longPolls.shutdown()
            handOff.shutdown()
            commits.shutdown()
            pools.shutdown()
            throw error
        }
        let logger = configuration.http.logger
        // A store pass paused for a fan-out would hold up the answers waiting for theirs.
        let maintenance = FeedMaintenance(
            service: configuration.service, isBusy: { [live] in live.isSending }, answersWaitForPasses: configuration.storesSnapshotsBeforeAnswering
        ) { message in
            logger.warning("\(message)")
        }
        return DeltaFeedServer(
            http: server, registry: registry, pools: pools, commits: commits, longPolls: longPolls, live: live, handOff: handOff,
            maintenance: maintenance)
    }

    /// Ends the live streams (`event: shutdown`) and answers the delta requests waiting for a
    /// change (304): their clients reconnect, elsewhere. Then drains in-flight requests and stops;
    /// see ``EventHTTP/HTTPServer/shutdown()``. Then the queued writes are committed, the pools
    /// finish what they hold and the snapshots handed out are written to the store.
    public func shutdown() {
        live.shutdown()
        longPolls.shutdown()
        // Answers being drained may wait for a store pass: the hand-off stops after them.
        http.shutdown()
        handOff.shutdown()
        commits.shutdown()
        pools.shutdown()
        maintenance.stop()
    }
}

/// Everything ``DeltaFeedServer`` needs to start.
public struct DeltaFeedServerConfiguration: Sendable {
    /// Listener, threads, limits and timeouts.
    public var http: HTTPServerConfiguration
    /// The metrics registry rendered at `/metrics`.
    public var registry: PrometheusCollectorRegistry
    /// The feed service behind the API.
    public var service: FeedService
    /// The bearer token write routes require; nil refuses every write (403).
    public var adminToken: String?
    /// When set, a viewer's feed, deltas and profile need a viewer token for that viewer (or the
    /// admin token); nil leaves them readable by anyone.
    public var viewerTokens: ViewerTokens?
    /// How writes are grouped into commits: the most per commit, how long a commit may wait to
    /// fill, and how many writes may wait before new ones get 503 `overloaded`.
    public var groupCommit = GroupCommit.Limits(queueCapacity: 4096)
    /// Delta requests that may wait for a change at once (`wait=`); one more gets 503
    /// `overloaded`.
    public var longPollCapacity = 10_000
    /// Live streams: how many at once (server, viewer), the coalescing window, heartbeats.
    public var live = LiveLimits()
    /// Whether an answer that hands out a new snapshot (a feed, a changed delta, a live event)
    /// leaves only once the snapshot is in the store, so that every replica on the same store
    /// answers it at once, whichever the balancer picks for the client's next request. Off by
    /// default (one server on its own store writes snapshots in batches every second); the
    /// `serve` command turns it on for PostgreSQL (`--snapshot-handoff`). On, the service stores
    /// every snapshot (``FeedService/FeedService/storeEverySnapshot()``).
    public var storesSnapshotsBeforeAnswering = false
    /// Whether `GET /demo` serves the live feed page (read-only; on by default).
    public var demo: Bool = true
    /// Whether the service may be sent traffic: until it returns true, `/healthz` answers 503
    /// `{"status":"starting"}` (a replica still catching up with the change log). Always true by
    /// default.
    public var isReady: @Sendable () -> Bool = { true }

    /// A configuration serving `service`, with the given HTTP settings and a fresh registry.
    public init(
        service: FeedService, adminToken: String? = nil, viewerTokens: ViewerTokens? = nil,
        http: HTTPServerConfiguration = HTTPServerConfiguration(),
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()
    ) {
        self.service = service
        self.adminToken = adminToken
        self.viewerTokens = viewerTokens
        self.http = http
        self.registry = registry
    }
}

extension DeltaFeedServer {
    /// `deltafeed_pages_total{how="composed|patched|shifted"}`: how the pages answers needed
    /// were made (composed from the index, patched in place, or their grids shifted for new
    /// videos at the top); `deltafeed_changes_judged_total`: index changes judged against cached
    /// pages (those noted on each page, not every change since);
    /// `deltafeed_deltas_total{how="patched|edited|diffed"}`: how delta documents were built
    /// (from a patch's items, from a shift's section edits, or by a diff);
    /// `deltafeed_snapshots_superseded_total`: new snapshots kept in memory only. From the
    /// service's counts when `/metrics` is rendered.
    fileprivate static func serviceWorkMetrics(_ service: FeedService, _ registry: PrometheusCollectorRegistry) -> @Sendable () -> Void {
        let descriptor = MetricNameDescriptor(
            namespace: "deltafeed", metricName: "pages", unitName: "total",
            helpText: "Pages made for answers: composed from the index, patched in place, or shifted for new videos at the top")
        let composed = registry.makeCounter(descriptor: descriptor, labels: [("how", "composed")])
        let patched = registry.makeCounter(descriptor: descriptor, labels: [("how", "patched")])
        let shifted = registry.makeCounter(descriptor: descriptor, labels: [("how", "shifted")])
        let deltaDescriptor = MetricNameDescriptor(
            namespace: "deltafeed", metricName: "deltas", unitName: "total",
            helpText: "Delta documents built: from a patch's items, from the edits of the sections a shift changed, or by diffing the structures")
        let deltaCounters = (
            patched: registry.makeCounter(descriptor: deltaDescriptor, labels: [("how", "patched")]),
            edited: registry.makeCounter(descriptor: deltaDescriptor, labels: [("how", "edited")]),
            diffed: registry.makeCounter(descriptor: deltaDescriptor, labels: [("how", "diffed")])
        )
        let judged = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "changes_judged", unitName: "total",
                helpText: "Index changes judged against cached pages: those that may touch each page"))
        let superseded = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "deltafeed", metricName: "snapshots_superseded", unitName: "total",
                helpText: "New snapshots not stored: their client moved on from them before the next store pass (kept in memory; stored at a clean stop)"))
        let reported = Mutex<(composed: UInt64, patched: UInt64, shifted: UInt64, judged: UInt64, superseded: UInt64)>((0, 0, 0, 0, 0))
        let reportedDeltas = Mutex<(patched: UInt64, edited: UInt64, diffed: UInt64)>((0, 0, 0))
        return {
            let deltas = service.deltaWork
            reportedDeltas.withLock { last in
                deltaCounters.patched.increment(by: Int64(deltas.patched - last.patched))
                deltaCounters.edited.increment(by: Int64(deltas.edited - last.edited))
                deltaCounters.diffed.increment(by: Int64(deltas.diffed - last.diffed))
                last = deltas
            }
            let work = service.pageWork
            let changesJudged = service.changesJudged
            let supersededSnapshots = service.supersededSnapshots
            reported.withLock { last in
                composed.increment(by: Int64(work.composed - last.composed))
                patched.increment(by: Int64(work.patched - last.patched))
                shifted.increment(by: Int64(work.shifted - last.shifted))
                judged.increment(by: Int64(changesJudged - last.judged))
                superseded.increment(by: Int64(supersededSnapshots - last.superseded))
                last = (work.composed, work.patched, work.shifted, changesJudged, supersededSnapshots)
            }
        }
    }
}
