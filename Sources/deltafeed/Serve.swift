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

    @OptionGroup var httpOptions: HTTPOptions

    @OptionGroup var storage: StoreOptions

    @Flag(help: "Seed the demo data set (2,000 users, 50,000 videos, 40 ads, seed 42) when the store is empty (env DELTAFEED_SEED_DEMO=1).")
    var seedDemo = false

    @Option(help: "Bearer token for write routes; without one, writes answer 403", .adminToken)
    var adminToken: Setting<String>

    @Option(
        help:
            "Secret (32 bytes or more) that signs viewer tokens; when set, feeds, deltas and user profiles need Authorization: Bearer with a token for that viewer (deltafeed token) or the admin token",
        .viewerSecret(shown: "default: none, feeds readable by anyone"))
    var viewerSecret: Setting<String>

    @Flag(inversion: .prefixedNo, help: "Serve the live feed page at GET /demo (env DELTAFEED_DEMO=0 turns it off; default on).")
    var demo: Bool?

    @OptionGroup var storePolicy: StorePolicyOptions

    @OptionGroup var caches: CacheOptions

    @OptionGroup var logging: LogOptions

    func run() throws {
        let logger = try logging.bootstrap()
        var http = try httpOptions.configuration()
        let options = try storePolicy.options()
        let serviceOptions = try caches.options()
        let groupCommit = try storePolicy.groupCommit()
        let longPollCapacity = try httpOptions.longPollCapacity()
        let liveLimits = try httpOptions.liveLimits()
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
        let wantsSeed = try seedDemo || Setting<Int>.env("DELTAFEED_SEED_DEMO", default: 0).value == 1
        if wantsSeed, try store.isEmpty() {
            logger.notice("seeding demo data into \(path) (first start)")
            let counts = try seedWithProgress(store, DemoSeed())
            logger.notice("seeded \(counts.users) users, \(counts.videos) videos, \(counts.ads) ads, \(counts.follows) follows")
        }
        let token = try adminToken.valueIfSet
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
        configuration.groupCommit = groupCommit
        configuration.longPollCapacity = longPollCapacity
        configuration.live = liveLimits
        configuration.demo = try demo ?? (Setting<Int>.env("DELTAFEED_DEMO", default: 1).value != 0)
        configuration.storesSnapshotsBeforeAnswering = try storePolicy.storesSnapshotsBeforeAnswering(shared: store is PostgresFeedStore)
        if configuration.storesSnapshotsBeforeAnswering {
            logger.notice("snapshots are stored before their answers leave: every replica answers any of them at once")
        }
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
            // After PostgreSQL was gone (maybe a crash, which empties its unlogged snapshots),
            // this replica stores what it holds in memory again, so the others answer it.
            listener = ChangeListener(
                store: postgres, onChange: { reaching in _ = try? service.catchUp(reaching: reaching) },
                onReconnect: {
                    listenLogger.notice("PostgreSQL is back: storing the snapshots held in memory again")
                    service.storeSnapshotsAgain()
                }
            ) { message in
                listenLogger.warning("\(message)")
            }
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
