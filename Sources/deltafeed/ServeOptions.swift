import ArgumentParser
import DeltaFeedServer
import EventHTTP
import FeedService
import FeedStore
import Logging

/// `serve`'s listener and its limits. Like the other groups of `serve`, it makes what it configures
/// when `run()` asks, so a bad value is an error of `run()`: logging, HTTP, store, caches, in turn.
struct HTTPOptions: ParsableArguments {
    @Option(help: "Address to listen on", .env("DELTAFEED_HOST", default: "127.0.0.1", shown: "default 127.0.0.1; 0.0.0.0 for every interface"))
    var host: Setting<String>

    @Option(help: "Port to listen on; 0 picks a free one", .env("DELTAFEED_PORT", default: 8080))
    var port: Setting<Int>

    @Option(
        help: "Worker threads, each with its own event loop and listener",
        .env("DELTAFEED_THREADS", default: HTTPServerConfiguration.processorCount, shown: "default: number of cores"))
    var threads: Setting<Int>

    @Option(help: "Largest request body in bytes; larger ones get 413", .env("DELTAFEED_MAX_BODY_BYTES", default: 1 << 20))
    var maxBodyBytes: Setting<Int>

    @Option(
        help: "Most bytes of request bodies buffered at once across all connections; a body past it gets 503 with Retry-After before it is read",
        .env("DELTAFEED_MAX_BUFFERED_BODY_BYTES", default: 64 << 20))
    var maxBufferedBodyBytes: Setting<Int>

    @Option(help: "Most connections held open at once; one more gets 503 with Retry-After and is closed", .env("DELTAFEED_MAX_CONNECTIONS", default: 10_000))
    var maxConnections: Setting<Int>

    @Option(
        help: "Seconds a connection has to send a complete request, and the idle keep-alive limit", .env("DELTAFEED_REQUEST_TIMEOUT", default: 10.0))
    var requestTimeout: Setting<Double>

    @Option(help: "Seconds a shutdown waits for requests in flight", .env("DELTAFEED_SHUTDOWN_GRACE", default: 10.0))
    var shutdownGrace: Setting<Double>

    @Option(
        help:
            "gzip level (1 fastest … 9 smallest) of bodies compressed once and kept (feed pages) for clients that send Accept-Encoding: gzip; 0 sends every body as it is",
        .env("DELTAFEED_COMPRESSION_LEVEL", default: ResponseCompression().level))
    var compressionLevel: Setting<Int>

    @Option(
        help: "gzip level of bodies compressed for each answer (deltas, the other API answers, the demo files); 0 sends those as they are",
        .env("DELTAFEED_ANSWER_COMPRESSION_LEVEL", default: ResponseCompression().answerLevel))
    var answerCompressionLevel: Setting<Int>

    @Option(
        help: "Smallest body in bytes that is gzipped; shorter ones go as they are",
        .env("DELTAFEED_COMPRESSION_MIN_BYTES", default: ResponseCompression().minimumSize))
    var compressionMinBytes: Setting<Int>

    @Option(
        help: "Delta requests that may wait for their feed to change at once (wait=); one more gets 503 with Retry-After",
        .env("DELTAFEED_LONG_POLL_MAX", default: 10_000))
    var longPollMax: Setting<Int>

    /// The `--long-poll-max` bound.
    func longPollCapacity() throws -> Int {
        let capacity = try longPollMax.value
        try check("long-poll-max", capacity, in: 1...1_000_000)
        return capacity
    }

    @Option(
        help: "Live feed streams (GET …/feed/live) open at once; one more gets 503 with Retry-After. Each also holds a connection (--max-connections)",
        .env("DELTAFEED_LIVE_MAX", default: 100_000))
    var liveMax: Setting<Int>

    @Option(help: "Live feed streams one viewer may hold open at once; one more gets 503", .env("DELTAFEED_LIVE_PER_VIEWER", default: 16))
    var livePerViewer: Setting<Int>

    @Option(
        help: "Least milliseconds between two events of one live stream: changes closer together are folded into one event",
        .env("DELTAFEED_LIVE_COALESCE_MS", default: 100))
    var liveCoalesceMs: Setting<Int>

    /// The live stream bounds.
    func liveLimits() throws -> LiveLimits {
        let maxStreams = try liveMax.value
        try check("live-max", maxStreams, in: 1...10_000_000)
        let perViewer = try livePerViewer.value
        try check("live-per-viewer", perViewer, in: 1...10_000)
        let coalesce = try liveCoalesceMs.value
        try check("live-coalesce-ms", coalesce, in: 0...10_000)
        return LiveLimits(maxStreams: maxStreams, perViewer: perViewer, coalesce: .milliseconds(coalesce))
    }

    /// Made once logging is set up: it holds the "deltafeed.http" logger.
    func configuration() throws -> HTTPServerConfiguration {
        var http = HTTPServerConfiguration()
        http.host = try host.value
        http.port = try port.value
        http.threads = try threads.value
        http.maxBodySize = try maxBodyBytes.value
        http.maxBufferedBodyBytes = try maxBufferedBodyBytes.value
        http.maxConnections = try maxConnections.value
        http.requestTimeout = .seconds(try requestTimeout.value)
        http.shutdownGracePeriod = .seconds(try shutdownGrace.value)
        http.compression = ResponseCompression(
            level: try compressionLevel.value, answerLevel: try answerCompressionLevel.value, minimumSize: try compressionMinBytes.value)
        try check("port", http.port, in: 0...65535)
        try check("compression-level", http.compression.level, in: 0...9)
        try check("answer-compression-level", http.compression.answerLevel, in: 0...9)
        guard http.compression.minimumSize >= 0 else { throw ValidationError("compression-min-bytes must not be negative.") }
        try check("threads", http.threads, in: 1...256)
        guard http.maxBodySize > 0 else { throw ValidationError("max-body-bytes must be positive.") }
        guard http.maxBufferedBodyBytes >= http.maxBodySize else {
            throw ValidationError(
                "max-buffered-body-bytes must be at least max-body-bytes (\(http.maxBodySize)), or no body of the largest size could be read.")
        }
        guard http.maxConnections > 0 else { throw ValidationError("max-connections must be positive.") }
        guard http.requestTimeout > .zero, http.shutdownGracePeriod >= .zero else {
            throw ValidationError("request-timeout must be positive and shutdown-grace not negative.")
        }
        return http
    }
}

/// How many snapshots the store keeps, and how durably it writes.
struct StorePolicyOptions: ParsableArguments {
    @Option(help: "Snapshots kept per viewer for deltas", .env("DELTAFEED_SNAPSHOTS_PER_VIEWER", default: 16))
    var snapshotsPerViewer: Setting<Int>

    @Option(help: "Hours a snapshot stays usable for deltas; older ones answer 410", .env("DELTAFEED_SNAPSHOT_MAX_AGE_HOURS", default: 24.0))
    var snapshotMaxAgeHours: Setting<Double>

    @Option(
        help:
            "When a write is acknowledged: full (synced to disk, survives power loss) or normal (survives a crash of the process, faster on slow disks)",
        .env("DELTAFEED_DURABILITY", default: StorageOptions.Durability.full.rawValue))
    var durability: Setting<String>

    @Option(help: "Most writes committed together in one transaction (one sync)", .env("DELTAFEED_GROUP_COMMIT_MAX", default: 256))
    var groupCommitMax: Setting<Int>

    @Option(
        help:
            "Milliseconds a commit waits for more writes to join it, added to the first write's latency; 0 commits at once (writes that arrive during a commit still form the next group)",
        .env("DELTAFEED_GROUP_COMMIT_WAIT_MS", default: 0.0))
    var groupCommitWaitMs: Setting<Double>

    @Option(help: "Writes that may wait for a commit before new ones get 503 overloaded", .env("DELTAFEED_WRITE_QUEUE", default: 4096))
    var writeQueue: Setting<Int>

    @Option(
        help:
            "When a snapshot handed out is stored: stored (before its answer leaves, so every replica answers it at once), batched (within a second, by the maintenance thread), or auto (stored on PostgreSQL, batched on SQLite)",
        .env("DELTAFEED_SNAPSHOT_HANDOFF", default: "auto"))
    var snapshotHandoff: Setting<String>

    /// Refuses an unknown `--snapshot-handoff` when the command line is read: found only once
    /// the store is open and the index loaded, a typo would cost a whole start of a large store.
    func validate() throws {
        _ = try storesSnapshotsBeforeAnswering(shared: false)
    }

    /// Whether answers that hand out a snapshot wait until it is stored, for a store that is
    /// (`shared`) or is not read by other replicas.
    func storesSnapshotsBeforeAnswering(shared: Bool) throws -> Bool {
        switch try snapshotHandoff.value {
        case "auto": return shared
        case "stored": return true
        case "batched": return false
        case let other: throw ValidationError("snapshot-handoff must be auto, stored or batched, not \(other).")
        }
    }

    /// How writes are grouped into commits.
    func groupCommit() throws -> GroupCommit.Limits {
        let (most, waitMs, queue) = (try groupCommitMax.value, try groupCommitWaitMs.value, try writeQueue.value)
        try check("group-commit-max", most, in: 1...65_536)
        guard (0...1_000).contains(waitMs) else { throw ValidationError("group-commit-wait-ms must be between 0 and 1000, not \(waitMs).") }
        try check("write-queue", queue, in: 1...1_000_000)
        return GroupCommit.Limits(maxWrites: most, maxWait: .microseconds(Int64((waitMs * 1_000).rounded())), queueCapacity: queue)
    }

    func options() throws -> StorageOptions {
        var options = StorageOptions()
        options.snapshotRetention = StorageOptions.SnapshotRetention(
            maxPerViewer: try snapshotsPerViewer.value, maxAgeMilliseconds: Int64(try snapshotMaxAgeHours.value * 3_600_000))
        let name = try durability.value
        guard let durability = StorageOptions.Durability(rawValue: name) else { throw ValidationError("durability must be full or normal, not \(name).") }
        options.durability = durability
        // The server's commits never checkpoint SQLite's log: a thread of the store does.
        options.backgroundCheckpointInterval = .milliseconds(250)
        return options
    }
}

/// The caches' memory budgets, in MiB.
struct CacheOptions: ParsableArguments {
    @Option(help: "MiB of composed pages kept in memory", .env("DELTAFEED_PAGE_CACHE_MIB", default: 128))
    var pageCacheMib: Setting<Int>

    @Option(help: "MiB of rendered items kept in memory", .env("DELTAFEED_ITEM_CACHE_MIB", default: 64))
    var itemCacheMib: Setting<Int>

    @Option(help: "MiB of computed deltas kept in memory for clients that ask the same delta again", .env("DELTAFEED_DELTA_CACHE_MIB", default: 0))
    var deltaCacheMib: Setting<Int>

    @Option(help: "MiB of snapshots kept in memory; older ones are read back from the store", .env("DELTAFEED_SNAPSHOT_CACHE_MIB", default: 128))
    var snapshotCacheMib: Setting<Int>

    func options() throws -> FeedService.Options {
        FeedService.Options(
            pageCacheBytes: try bytes(\.pageCacheMib), itemCacheBytes: try bytes(\.itemCacheMib),
            deltaCacheBytes: try bytes(\.deltaCacheMib, least: 0), snapshotBytes: try bytes(\.snapshotCacheMib))
    }

    /// A budget of `least`…1048576 MiB, in bytes. Its error names the variable even when the flag
    /// gave the value, which knows none: the name comes from the options as declared, parsed from
    /// nothing.
    private func bytes(_ budget: KeyPath<CacheOptions, Setting<Int>>, least: Int = 1) throws -> Int {
        let mib = try self[keyPath: budget].value
        try check("\(try CacheOptions.parse([])[keyPath: budget].env):", mib, in: least...1 << 20, unit: " MiB")
        return mib << 20
    }
}

/// Where log lines go and from which level.
struct LogOptions: ParsableArguments {
    @Option(
        help: "Log level: trace, debug, info (one access-log line per request), notice, warning, error, critical",
        .env("DELTAFEED_LOG_LEVEL", default: Logger.Level.info.rawValue))
    var logLevel: Setting<String>

    /// Sends log lines from the level asked for to standard output; returns the command's logger.
    func bootstrap() throws -> Logger {
        let name = try logLevel.value
        guard let level = Logger.Level(rawValue: name) else {
            throw ValidationError("Unknown log level \(name); use trace, debug, info, notice, warning, error or critical.")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "deltafeed")
        logger.logLevel = level
        return logger
    }
}
