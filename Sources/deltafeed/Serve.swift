import ArgumentParser
import DeltaFeedServer
import EventHTTP
import FeedIndex
import FeedService
import FeedStore
import Logging
import PostgresStore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `deltafeed serve`: runs the HTTP API until SIGINT or SIGTERM, then drains and exits 0.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP server.",
        discussion: "Ctrl-C or SIGTERM stops accepting, lets requests in flight finish, and exits 0. A second signal exits at once."
    )

    @Option(help: "Address to listen on (env DELTAFEED_HOST; default 127.0.0.1; 0.0.0.0 for every interface).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (env DELTAFEED_PORT; default 8080).")
    var port: Int?

    @Option(help: "Worker threads, each with its own event loop and listener (env DELTAFEED_THREADS; default: number of cores).")
    var threads: Int?

    @Option(help: "Largest request body in bytes; larger ones get 413 (env DELTAFEED_MAX_BODY_BYTES; default 1048576).")
    var maxBodyBytes: Int?

    @Option(
        help:
            "Most bytes of request bodies buffered at once across all connections; a body past it gets 503 with Retry-After before it is read (env DELTAFEED_MAX_BUFFERED_BODY_BYTES; default 67108864)."
    )
    var maxBufferedBodyBytes: Int?

    @Option(help: "Most connections held open at once; one more gets 503 with Retry-After and is closed (env DELTAFEED_MAX_CONNECTIONS; default 10000).")
    var maxConnections: Int?

    @Option(help: "Seconds a connection has to send a complete request, and the idle keep-alive limit (env DELTAFEED_REQUEST_TIMEOUT; default 10).")
    var requestTimeout: Double?

    @Option(help: "Seconds a shutdown waits for requests in flight (env DELTAFEED_SHUTDOWN_GRACE; default 10).")
    var shutdownGrace: Double?

    @OptionGroup var storage: StoreOptions

    @Flag(help: "Seed the demo data set (2,000 users, 50,000 videos, 40 ads, seed 42) when the store is empty (env DELTAFEED_SEED_DEMO=1).")
    var seedDemo = false

    @Option(help: "Bearer token for write routes; without one, writes answer 403 (env DELTAFEED_ADMIN_TOKEN).")
    var adminToken: String?

    @Option(
        help:
            "Secret (32 bytes or more) that signs viewer tokens; when set, feeds, deltas and user profiles need Authorization: Bearer with a token for that viewer (deltafeed token) or the admin token (env DELTAFEED_VIEWER_SECRET, which keeps it out of the process list; default: none, feeds readable by anyone)."
    )
    var viewerSecret: String?

    @Flag(inversion: .prefixedNo, help: "Serve the live feed page at GET /demo (env DELTAFEED_DEMO=0 turns it off; default on).")
    var demo: Bool?

    @Option(help: "Snapshots kept per viewer for deltas (env DELTAFEED_SNAPSHOTS_PER_VIEWER; default 16).")
    var snapshotsPerViewer: Int?

    @Option(help: "Hours a snapshot stays usable for deltas; older ones answer 410 (env DELTAFEED_SNAPSHOT_MAX_AGE_HOURS; default 24).")
    var snapshotMaxAgeHours: Double?

    @Option(
        help:
            "When a write is acknowledged: full (synced to disk, survives power loss) or normal (survives a crash of the process, faster on slow disks) (env DELTAFEED_DURABILITY; default full)."
    )
    var durability: String?

    @Option(help: "MiB of composed pages kept in memory (env DELTAFEED_PAGE_CACHE_MIB; default 128).")
    var pageCacheMib: Int?

    @Option(help: "MiB of rendered items kept in memory (env DELTAFEED_ITEM_CACHE_MIB; default 64).")
    var itemCacheMib: Int?

    @Option(help: "MiB of rendered deltas kept in memory (env DELTAFEED_DELTA_CACHE_MIB; default 4).")
    var deltaCacheMib: Int?

    @Option(help: "MiB of snapshots kept in memory; older ones are read back from the store (env DELTAFEED_SNAPSHOT_CACHE_MIB; default 128).")
    var snapshotCacheMib: Int?

    @Option(help: "Log level: trace, debug, info (one access-log line per request), notice, warning, error, critical (env DELTAFEED_LOG_LEVEL; default info).")
    var logLevel: String?

    func run() throws {
        let level = try resolved(logLevel, env: "DELTAFEED_LOG_LEVEL", default: "info")
        guard let logLevel = Logger.Level(rawValue: level) else {
            throw ValidationError("Unknown log level \(level); use trace, debug, info, notice, warning, error or critical.")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = logLevel
            return handler
        }
        var logger = Logger(label: "deltafeed")
        logger.logLevel = logLevel

        var http = HTTPServerConfiguration()
        http.host = try resolved(host, env: "DELTAFEED_HOST", default: "127.0.0.1")
        http.port = try resolved(port, env: "DELTAFEED_PORT", default: 8080)
        http.threads = try resolved(threads, env: "DELTAFEED_THREADS", default: HTTPServerConfiguration.processorCount)
        http.maxBodySize = try resolved(maxBodyBytes, env: "DELTAFEED_MAX_BODY_BYTES", default: 1 << 20)
        http.maxBufferedBodyBytes = try resolved(maxBufferedBodyBytes, env: "DELTAFEED_MAX_BUFFERED_BODY_BYTES", default: 64 << 20)
        http.maxConnections = try resolved(maxConnections, env: "DELTAFEED_MAX_CONNECTIONS", default: 10_000)
        http.requestTimeout = .seconds(try resolved(requestTimeout, env: "DELTAFEED_REQUEST_TIMEOUT", default: 10))
        http.shutdownGracePeriod = .seconds(try resolved(shutdownGrace, env: "DELTAFEED_SHUTDOWN_GRACE", default: 10))
        http.logger = Logger(label: "deltafeed.http")
        guard (0...65535).contains(http.port) else { throw ValidationError("port must be 0…65535, not \(http.port).") }
        guard (1...256).contains(http.threads) else { throw ValidationError("threads must be 1…256, not \(http.threads).") }
        guard http.maxBodySize > 0 else { throw ValidationError("max-body-bytes must be positive.") }
        guard http.maxBufferedBodyBytes >= http.maxBodySize else {
            throw ValidationError(
                "max-buffered-body-bytes must be at least max-body-bytes (\(http.maxBodySize)), or no body of the largest size could be read.")
        }
        guard http.maxConnections > 0 else { throw ValidationError("max-connections must be positive.") }
        guard http.requestTimeout > .zero, http.shutdownGracePeriod >= .zero else {
            throw ValidationError("request-timeout must be positive and shutdown-grace not negative.")
        }

        var options = FeedStore.Options()
        options.snapshotRetention = FeedStore.SnapshotRetention(
            maxPerViewer: try resolved(snapshotsPerViewer, env: "DELTAFEED_SNAPSHOTS_PER_VIEWER", default: 16),
            maxAgeMilliseconds: Int64(try resolved(snapshotMaxAgeHours, env: "DELTAFEED_SNAPSHOT_MAX_AGE_HOURS", default: 24) * 3_600_000))
        let durabilityName = try resolved(durability, env: "DELTAFEED_DURABILITY", default: "full")
        guard let durability = FeedStore.Durability(rawValue: durabilityName) else {
            throw ValidationError("durability must be full or normal, not \(durabilityName).")
        }
        options.durability = durability
        var serviceOptions = FeedService.Options()
        serviceOptions.pageCacheBytes = try mebibytes(pageCacheMib, env: "DELTAFEED_PAGE_CACHE_MIB", default: 128)
        serviceOptions.itemCacheBytes = try mebibytes(itemCacheMib, env: "DELTAFEED_ITEM_CACHE_MIB", default: 64)
        serviceOptions.deltaCacheBytes = try mebibytes(deltaCacheMib, env: "DELTAFEED_DELTA_CACHE_MIB", default: 4)
        serviceOptions.snapshotBytes = try mebibytes(snapshotCacheMib, env: "DELTAFEED_SNAPSHOT_CACHE_MIB", default: 128)
        // Block the stop signals before any worker thread exists, so every thread inherits the
        // mask and only `stopSignals.wait()` below receives them (a stop asked for while the
        // index loads takes effect once it has loaded).
        let stopSignals = StopSignals()
        // While the store opens and the index loads, the port answers 503 "starting": a balancer
        // retries elsewhere, clients wait, nobody meets a refused connection.
        let placeholder = try StartingServer.start(configuration: http)
        http.port = placeholder.port
        let store = try storage.open(options: options)
        let path = store.location
        let wantsSeed = try seedDemo || resolved(nil as Int?, env: "DELTAFEED_SEED_DEMO", default: 0) == 1
        if wantsSeed, try store.isEmpty() {
            logger.notice("seeding demo data into \(path) (first start)")
            let counts = try seedWithProgress(store, DemoSeed())
            logger.notice("seeded \(counts.users) users, \(counts.videos) videos, \(counts.ads) ads, \(counts.follows) follows")
        }
        let token = try resolved(adminToken, env: "DELTAFEED_ADMIN_TOKEN")
        if token == nil { logger.notice("no admin token: write routes answer 403") }
        let viewerTokens = try ViewerTokens.resolving(viewerSecret)
        if viewerTokens == nil {
            logger.notice("no viewer secret: every viewer's feed, deltas and profile are readable by anyone (--viewer-secret to require tokens)")
        }

        raiseOpenFileLimit(logger: logger)

        logger.notice("loading the feed index from \(path)")
        let loadStart = ContinuousClock.now
        var lastReport = loadStart
        let index = try FeedIndex(loadingFrom: store) { loaded, total in
            let now = ContinuousClock.now
            guard now - lastReport >= .seconds(1) || loaded == total else { return }
            lastReport = now
            logger.notice("loading the feed index: \(loaded) of \(total) rows")
        }
        let counts = index.counts
        logger.notice(
            "feed index loaded in \(loadStart.duration(to: .now)): \(counts.users) users, \(counts.videos) videos, \(counts.follows) follows, \(counts.ads) active ads, change \(index.sequence)"
        )
        let service = try FeedService(store: store, index: index, options: serviceOptions)

        var configuration = DeltaFeedServerConfiguration(service: service, adminToken: token, viewerTokens: viewerTokens, http: http)
        configuration.demo = try demo ?? (resolved(nil as Int?, env: "DELTAFEED_DEMO", default: 1) != 0)
        // Ready once the index has applied what was committed while it loaded; until then
        // /healthz answers 503 "starting", so a balancer sends nothing here yet.
        let ready = Atomic(false)
        configuration.isReady = { ready.load(ordering: .acquiring) }
        placeholder.shutdown()
        let server = try DeltaFeedServer.start(configuration: configuration)
        var listener: ChangeListener?
        if let postgres = store as? PostgresFeedStore {
            // Other replicas' writes wake the catch-up at once; the maintenance thread's periodic
            // catch-up stays as the fallback.
            let listenLogger = logger
            listener = ChangeListener(store: postgres, onChange: { _ = try? service.catchUp() }) { message in listenLogger.warning("\(message)") }
        }
        catchUpBeforeServing(service, logger: logger)
        ready.store(true, ordering: .releasing)
        logger.notice("deltafeed listening on http://\(http.host):\(server.http.port) with \(http.threads) threads, store \(path)")
        if configuration.demo {
            logger.notice("live feed page: http://\(http.host == "0.0.0.0" ? "127.0.0.1" : http.host):\(server.http.port)/demo")
        }
        let signal = stopSignals.wait()
        logger.notice("received \(signal == SIGINT ? "SIGINT" : "SIGTERM"); draining (a second signal exits at once)")
        stopSignals.exitOnNextSignal()
        listener?.stop()
        server.shutdown()
        logger.notice("stopped cleanly")
    }
}

/// Applies the change log until the index holds every write committed before the call (those
/// made while it loaded), retrying every 250 ms while the store cannot answer.
func catchUpBeforeServing(_ service: FeedService, logger: Logger) {
    while true {
        do {
            let target = try service.store.storedChangeVersion()
            while service.index.sequence < target, try service.catchUp() > 0 {}
            logger.notice("feed index caught up at change \(service.index.sequence)")
            return
        } catch {
            logger.warning("catching up before serving failed: \(error); retrying")
            usleep(250_000)
        }
    }
}

/// A size flag in MiB, resolved like the others, in bytes.
func mebibytes(_ flag: Int?, env: String, default value: Int) throws -> Int {
    let mib = try resolved(flag, env: env, default: value)
    guard (1...1 << 20).contains(mib) else { throw ValidationError("\(env): must be 1…1048576 MiB, not \(mib).") }
    return mib << 20
}

/// SIGINT and SIGTERM, blocked in every thread and received synchronously with `sigwait`.
struct StopSignals {
    private var set = sigset_t()

    init() {
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits for SIGINT or SIGTERM and returns which.
    func wait() -> Int32 {
        var set = self.set
        var received: Int32 = 0
        sigwait(&set, &received)
        return received
    }

    /// From now on, another stop signal ends the process at once with status 1.
    func exitOnNextSignal() {
        let waiter = self
        _ = WorkerSignalThread {
            _ = waiter.wait()
            _exit(1)
        }
    }
}

/// A detached thread for the second-signal watcher.
private struct WorkerSignalThread {
    init(_ body: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable {
            // @unchecked: written once before the thread starts, read once by it.
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, box)
        pthread_detach(thread)
    }
}

/// Every connection is a file descriptor: lift the soft limit (often 1,024) to the hard one.
func raiseOpenFileLimit(logger: Logger) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    let previous = limit.rlim_cur
    limit.rlim_cur = limit.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
        logger.debug("open file limit raised from \(previous) to \(limit.rlim_cur)")
    }
}
