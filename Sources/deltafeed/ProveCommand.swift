import ArgumentParser
import Foundation

/// `deltafeed prove`: the end-to-end proof over HTTP, against one server, a load balancer, or
/// several replicas at once. Viewers hold their own snapshots and poll in every delta form, a
/// writer lands random writes spread over the URLs, and after each round every document the
/// reference client built from deltas must equal a fresh fetch. Optionally measures how long a
/// write acknowledged by one replica takes to show in another's feeds (the convergence lag).
struct Prove: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Prove over HTTP that every delta form, applied by the reference client, equals a fresh fetch, under random writes.",
        discussion: """
            Each round lands --writes-per-round random writes (likes, titles, new videos, \
            follows, unfollows, ad edits, new users) through the write API, spread over the \
            --url list in turn; waits until the --replica servers agree; then every viewer's \
            three clients (batch, sequential, jsonpatch, each with its own snapshot) refresh \
            with a delta and must hold exactly what a fresh fetch returns. Requests rotate over \
            the --url list, so a snapshot handed out by one server is polled on another. A \
            503 is retried after its Retry-After (counted); a client whose replica has not \
            caught up yet refreshes again until --settle-timeout. At the end every \
            acknowledged write (video titles and like counts, new users) is read back from \
            every replica, and --lag-samples measures the convergence lag: a write through \
            one replica, then the next replica's feed polled until it shows it. Prints what it \
            counted; exits 1 on a mismatch, a 5xx not retried, a read without an answer, a \
            lost write, or a missed --lag-p99-ms target.
            """
    )

    @Option(
        name: .customLong("url"),
        help: Setting<String>.serverURL.help("Base URL to prove through; repeat it or separate with commas"))
    var urls: [String] = []

    @Option(
        name: .customLong("replica"),
        help: "A replica's own base URL, behind the --url balancer; repeat or separate with commas (default: the --url list).")
    var replicas: [String] = []

    @OptionGroup var access: WriteAccess

    @Option(help: "Viewers, each with three clients (one per delta form) holding their own snapshots.")
    var viewers: Int = 20

    @Option(help: "Viewers are drawn from user ids 1…this (they must exist).")
    var viewerIds: Int64 = 200

    @Option(help: "Rounds of writes and checks (default 30, or until --duration when that is given).")
    var rounds: Int?

    @Option(help: "Stop starting rounds after this many seconds.")
    var duration: Double?

    @Option(help: "Writes in each round.")
    var writesPerRound: Int = 5

    @Option(
        help:
            "Seconds from the start of one round to the next at least: give servers that persist snapshots in batches time to share them (0: no pause)."
    )
    var roundInterval: Double = 1.0

    @Option(help: "Seconds a client keeps refreshing while the servers it reaches disagree, before it counts a mismatch.")
    var settleTimeout: Double = 5

    @Option(help: "Threads the viewers' checks run on.")
    var threads: Int = 4

    @Option(help: "Convergence-lag samples after the rounds (0: none).")
    var lagSamples: Int = 0

    @Option(help: "Fail when the convergence lag's p99 is above this many milliseconds.")
    var lagP99Ms: Double?

    @Option(help: "Writes answered 5xx (not retried) or not answered that are tolerated, e.g. when a replica is killed mid-write.")
    var maxWriteErrors: Int = 0

    @Option(
        help:
            "A file of acknowledged writes to continue and update (created if missing), so runs one after another are checked together; with --rounds 0 a run only reads them back."
    )
    var ledger: String?

    @Flag(
        inversion: .prefixedNo,
        help:
            "Also follow every viewer over the live route (Server-Sent Events) in each delta form, each on its own connection, and check after every round that each live page equals a fresh fetch."
    )
    var liveClients = true

    @Option(help: "Seed of the random choices (default: a new one each run, printed).")
    var seed: UInt64?

    func validate() throws {
        try check("--viewers", viewers, in: 1...1000)
        guard viewerIds >= Int64(viewers) else { throw ValidationError("--viewer-ids (\(viewerIds)) must be at least --viewers (\(viewers)).") }
        if let rounds, rounds < 0 { throw ValidationError("--rounds must not be negative.") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds.") }
        try check("--writes-per-round", writesPerRound, in: 1...100)
        guard roundInterval >= 0, roundInterval <= 60 else { throw ValidationError("--round-interval must be 0…60 seconds.") }
        guard settleTimeout > 0, settleTimeout <= 120 else { throw ValidationError("--settle-timeout must be more than 0 and at most 120 seconds.") }
        try check("--threads", threads, in: 1...64)
        try check("--lag-samples", lagSamples, in: 0...100_000)
        if let lagP99Ms, !(lagP99Ms > 0) { throw ValidationError("--lag-p99-ms must be positive.") }
        if lagP99Ms != nil, lagSamples == 0 { throw ValidationError("--lag-p99-ms needs --lag-samples.") }
        guard maxWriteErrors >= 0 else { throw ValidationError("--max-write-errors must not be negative.") }
        if !urls.isEmpty { _ = try ProveTargets.parse(urls, option: "--url") }
        if !replicas.isEmpty { _ = try ProveTargets.parse(replicas, option: "--replica") }
    }

    func run() throws {
        let fallback = try Setting<String>.serverURL.value
        let urls = try ProveTargets.parse(self.urls.isEmpty ? [fallback] : self.urls, option: "--url")
        let replicas = self.replicas.isEmpty ? urls : try ProveTargets.parse(self.replicas, option: "--replica")
        let token = try access.token()
        let seed = self.seed ?? UInt64.random(in: 1...UInt64.max >> 1)
        let rounds = self.rounds ?? (duration == nil ? 30 : .max)
        let counters = ProveCounters()
        var proof = ProofRun(
            urls: urls, replicas: replicas, token: token, seed: seed, counters: counters, settleTimeout: settleTimeout, threads: threads)
        let started = ContinuousClock.now
        log(
            "prove: \(urls.count) URL(s) \(urls.map(\.absoluteString).joined(separator: ", ")), \(replicas.count) replica(s), \(viewers) viewers × 3 forms, seed \(seed)"
        )
        if let ledger { proof.ledger = try WriteLedger(loading: ledger) }
        try proof.start(viewers: viewers, idsUpTo: viewerIds)
        let watchers = liveClients ? proof.startLiveWatchers() : []
        defer { for watcher in watchers { watcher.stop() } }
        var round = 0
        while round < rounds {
            if let duration, started.duration(to: .now) >= .seconds(duration) { break }
            round += 1
            let roundStart = ContinuousClock.now
            try proof.round(round, writes: writesPerRound)
            proof.checkLive(watchers, round: round)
            if round % 10 == 0 { log("prove: round \(round): \(counters.snapshot().progressLine)") }
            let elapsed = roundStart.duration(to: .now)
            if elapsed < .seconds(roundInterval) { Thread.sleep(forTimeInterval: roundInterval - elapsed.seconds) }
        }
        var lag: ConvergenceLag?
        if lagSamples > 0 {
            lag = try proof.measureLag(samples: lagSamples)
        }
        // The lag's own writes are in the ledger too: read everything back last.
        for watcher in watchers {
            let (events, resets) = watcher.counts
            counters.update {
                $0.liveEvents += events
                $0.liveResets += resets
            }
        }
        let verification = proof.verifyAcknowledgedWrites()
        if let ledger { try proof.ledger.save(to: ledger) }
        let report = ProveReport(
            counts: counters.snapshot(), rounds: round, seconds: started.duration(to: .now).seconds, verification: verification, lag: lag,
            lagTarget: lagP99Ms, maxWriteErrors: maxWriteErrors, replicaCount: replicas.count)
        print(report.text)
        if !report.failures.isEmpty { throw ExitCode(1) }
    }

    private func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
