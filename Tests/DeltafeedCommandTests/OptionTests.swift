import ArgumentParser
import DeltaFeedServer
import EventHTTP
import FeedService
import FeedStore
import Foundation
import Testing

// @testable: these tests drive the command's option groups and proof helpers, which are internal to
// the executable target (a command's parsing is its own business, not an API).
@testable import deltafeed

/// The options' fallbacks (flag, else environment variable, else default), the help made from
/// them, and the range checks' messages. The option groups of `serve` must still read their
/// variables, and say in `--help` what they read.
@Suite("deltafeed options", .serialized)
struct OptionTests {
    struct Probe: ParsableArguments {
        @Option(help: "A number", .env("DELTAFEED_TEST_PROBE", default: 7))
        var number: Setting<Int>

        @Option(help: "A word", .env("DELTAFEED_TEST_WORD"))
        var word: Setting<String>
    }

    @Test("The flag wins over the variable, which wins over the default; an empty variable is unset")
    func order() throws {
        let (probe, flagged) = (try Probe.parse([]), try Probe.parse(["--number", "9", "--word", "flag"]))
        /// The number and the word each setting resolves to, under `variables`.
        func resolved(_ variables: [String: String]) throws -> [String] {
            var values: [String] = []
            try withEnvironment(variables) {
                for options in [probe, flagged] { values += ["\(try options.number.value)", try options.word.valueIfSet ?? "nil"] }
            }
            return values
        }
        #expect(try resolved([:]) == ["7", "nil", "9", "flag"])
        #expect(try resolved(["DELTAFEED_TEST_PROBE": "8", "DELTAFEED_TEST_WORD": "w"]) == ["8", "w", "9", "flag"])
        #expect(try resolved(["DELTAFEED_TEST_PROBE": "", "DELTAFEED_TEST_WORD": ""]) == ["7", "nil", "9", "flag"])
    }

    @Test("A variable that does not parse is an error naming it, not the default")
    func badVariable() throws {
        try withEnvironment(["DELTAFEED_TEST_PROBE": "seven"]) {
            #expect(message { _ = try Probe.parse([]).number.value } == "DELTAFEED_TEST_PROBE=seven is not a valid value.")
        }
    }

    @Test("Every option group of serve reads its variables")
    func serveGroups() throws {
        let variables = [
            "DELTAFEED_HOST": "0.0.0.0", "DELTAFEED_PORT": "9090", "DELTAFEED_THREADS": "3", "DELTAFEED_MAX_BODY_BYTES": "2048",
            "DELTAFEED_MAX_BUFFERED_BODY_BYTES": "4096", "DELTAFEED_MAX_CONNECTIONS": "50", "DELTAFEED_REQUEST_TIMEOUT": "2.5",
            "DELTAFEED_SHUTDOWN_GRACE": "0", "DELTAFEED_SNAPSHOTS_PER_VIEWER": "4", "DELTAFEED_SNAPSHOT_MAX_AGE_HOURS": "0.5",
            "DELTAFEED_DURABILITY": "normal", "DELTAFEED_PAGE_CACHE_MIB": "1", "DELTAFEED_ITEM_CACHE_MIB": "2", "DELTAFEED_DELTA_CACHE_MIB": "3",
            "DELTAFEED_SNAPSHOT_CACHE_MIB": "5", "DELTAFEED_STORE": "postgres://u@h:1/db", "DELTAFEED_ADMIN_TOKEN": "admin",
            "DELTAFEED_COMPRESSION_LEVEL": "9", "DELTAFEED_ANSWER_COMPRESSION_LEVEL": "0",
        ]
        try withEnvironment(variables) {
            let serve = try Serve.parse([])
            let http = try serve.httpOptions.configuration()
            #expect(http.host == "0.0.0.0" && http.port == 9090 && http.threads == 3)
            #expect(http.maxBodySize == 2048 && http.maxBufferedBodyBytes == 4096 && http.maxConnections == 50)
            #expect(http.requestTimeout == .milliseconds(2500) && http.shutdownGracePeriod == .zero)
            #expect(http.compression.level == 9 && http.compression.answerLevel == 0)
            let store = try serve.storePolicy.options()
            #expect(store.snapshotRetention.maxPerViewer == 4 && store.snapshotRetention.maxAgeMilliseconds == 1_800_000)
            #expect(store.durability == .normal)
            let caches = try serve.caches.options()
            let budgets: [Int] = [caches.pageCacheBytes, caches.itemCacheBytes, caches.deltaCacheBytes, caches.snapshotBytes]
            #expect(budgets == [1 << 20, 2 << 20, 3 << 20, 5 << 20])
            #expect((try serve.storage.postgresURL()) == "postgres://u@h:1/db")
            #expect((try serve.adminToken.valueIfSet) == "admin")
        }
        try withEnvironment([:]) {
            let serve = try Serve.parse(["--port", "0", "--page-cache-mib", "9"])
            let http = try serve.httpOptions.configuration()
            #expect(http.host == "127.0.0.1" && http.port == 0 && http.maxBodySize == 1 << 20 && http.maxConnections == 10_000)
            #expect(http.compression.level == 6 && http.compression.answerLevel == 1, "pages at 6, deltas at 1")
            let caches = try serve.caches.options()
            #expect(caches.pageCacheBytes == 9 << 20 && caches.deltaCacheBytes == 0)
            #expect((try serve.storePolicy.options().durability) == .full)
            #expect((try serve.storage.postgresURL()) == nil)
            #expect((try serve.adminToken.valueIfSet) == nil)
        }
    }

    /// One row of README's configuration table: a flag of `serve`, its variable, the default README
    /// states, two other values (one for the variable, one for the flag), and where the value ends
    /// up in what `serve` configures.
    struct TableRow: Sendable, CustomTestStringConvertible {
        let flag: String
        let variable: String
        let readmeDefault: Double
        let values: (variable: String, flag: String)
        let configured: @Sendable (Serve) throws -> Double
        var testDescription: String { flag }
    }

    static let tableRows: [TableRow] = [
        TableRow(flag: "--max-buffered-body-bytes", variable: "DELTAFEED_MAX_BUFFERED_BODY_BYTES", readmeDefault: 67_108_864, values: ("2097152", "4194304")) {
            Double(try $0.httpOptions.configuration().maxBufferedBodyBytes)
        },
        TableRow(flag: "--shutdown-grace", variable: "DELTAFEED_SHUTDOWN_GRACE", readmeDefault: 10, values: ("2.5", "0.5")) {
            try $0.httpOptions.configuration().shutdownGracePeriod / .seconds(1)
        },
        TableRow(flag: "--compression-min-bytes", variable: "DELTAFEED_COMPRESSION_MIN_BYTES", readmeDefault: 200, values: ("50", "0")) {
            Double(try $0.httpOptions.configuration().compression.minimumSize)
        },
        TableRow(flag: "--long-poll-max", variable: "DELTAFEED_LONG_POLL_MAX", readmeDefault: 10_000, values: ("7", "8")) {
            Double(try $0.httpOptions.longPollCapacity())
        },
        TableRow(flag: "--live-max", variable: "DELTAFEED_LIVE_MAX", readmeDefault: 100_000, values: ("5", "6")) {
            Double(try $0.httpOptions.liveLimits().maxStreams)
        },
        TableRow(flag: "--live-per-viewer", variable: "DELTAFEED_LIVE_PER_VIEWER", readmeDefault: 16, values: ("2", "3")) {
            Double(try $0.httpOptions.liveLimits().perViewer)
        },
        TableRow(flag: "--live-coalesce-ms", variable: "DELTAFEED_LIVE_COALESCE_MS", readmeDefault: 100, values: ("0", "250")) {
            try $0.httpOptions.liveLimits().coalesce / .milliseconds(1)
        },
        TableRow(flag: "--group-commit-max", variable: "DELTAFEED_GROUP_COMMIT_MAX", readmeDefault: 256, values: ("32", "1")) {
            Double(try $0.storePolicy.groupCommit().maxWrites)
        },
        TableRow(flag: "--group-commit-wait-ms", variable: "DELTAFEED_GROUP_COMMIT_WAIT_MS", readmeDefault: 0, values: ("1.5", "2")) {
            try $0.storePolicy.groupCommit().maxWait / .milliseconds(1)
        },
        TableRow(flag: "--write-queue", variable: "DELTAFEED_WRITE_QUEUE", readmeDefault: 4096, values: ("64", "65")) {
            Double(try $0.storePolicy.groupCommit().queueCapacity)
        },
        TableRow(flag: "--item-cache-mib", variable: "DELTAFEED_ITEM_CACHE_MIB", readmeDefault: 64, values: ("3", "4")) {
            Double(try $0.caches.options().itemCacheBytes >> 20)
        },
        TableRow(flag: "--snapshot-cache-mib", variable: "DELTAFEED_SNAPSHOT_CACHE_MIB", readmeDefault: 128, values: ("5", "6")) {
            Double(try $0.caches.options().snapshotBytes >> 20)
        },
    ]

    @Test("Each flag of README's configuration table has README's default, reads its variable, and wins over it", arguments: OptionTests.tableRows)
    func readmeTable(row: TableRow) throws {
        try withEnvironment([:]) {
            let configured = try row.configured(try Serve.parse([]))
            #expect(configured == row.readmeDefault, "the default README states")
        }
        try withEnvironment([row.variable: row.values.variable]) {
            let (fromVariable, fromFlag) = (try row.configured(try Serve.parse([])), try row.configured(try Serve.parse([row.flag, row.values.flag])))
            #expect(fromVariable == Double(row.values.variable), "from \(row.variable)")
            #expect(fromFlag == Double(row.values.flag), "the flag wins over the variable")
        }
    }

    @Test("--snapshot-handoff auto stores snapshots before answering on PostgreSQL and batches them on SQLite; stored and batched choose for either")
    func snapshotHandoff() throws {
        /// Whether answers wait for their snapshot on a store shared by replicas (PostgreSQL) and
        /// on one that is not (SQLite).
        func stores(_ serve: Serve) throws -> [Bool] {
            [try serve.storePolicy.storesSnapshotsBeforeAnswering(shared: true), try serve.storePolicy.storesSnapshotsBeforeAnswering(shared: false)]
        }
        try withEnvironment([:]) {
            let chosen = try [[], ["--snapshot-handoff", "auto"], ["--snapshot-handoff", "stored"], ["--snapshot-handoff", "batched"]].map {
                try stores(try Serve.parse($0))
            }
            #expect(chosen == [[true, false], [true, false], [true, true], [false, false]], "auto (the default), auto, stored, batched")
        }
        try withEnvironment(["DELTAFEED_SNAPSHOT_HANDOFF": "stored"]) {
            let (fromVariable, fromFlag) = (try stores(try Serve.parse([])), try stores(try Serve.parse(["--snapshot-handoff", "batched"])))
            #expect(fromVariable == [true, true], "from DELTAFEED_SNAPSHOT_HANDOFF")
            #expect(fromFlag == [false, false], "the flag wins over the variable")
        }
        // An unknown value is refused when the command line is read, before the server opens its
        // store or loads its index (which takes a while on a large store), from the flag or the
        // variable.
        let refusal = "snapshot-handoff must be auto, stored or batched, not always."
        try withEnvironment([:]) {
            #expect(parseMessage(Serve.self, ["--snapshot-handoff", "always"]) == refusal)
        }
        try withEnvironment(["DELTAFEED_SNAPSHOT_HANDOFF": "always"]) {
            #expect(parseMessage(Serve.self, []) == refusal)
        }
    }

    @Test("simulate and prove read the server's URL and the admin token from the environment")
    func writeClients() throws {
        try withEnvironment(["DELTAFEED_URL": "http://127.0.0.1:9", "DELTAFEED_ADMIN_TOKEN": "t"]) {
            let simulate = try Simulate.parse([])
            #expect((try simulate.url.value) == "http://127.0.0.1:9")
            #expect((try simulate.access.token()) == "t")
            let prove = try Prove.parse([])
            #expect((try prove.access.token()) == "t")
            #expect((try Setting<String>.serverURL.value) == "http://127.0.0.1:9")
        }
        try withEnvironment([:]) {
            let (simulate, prove) = (try Simulate.parse([]), try Prove.parse(["--admin-token", "flag"]))
            #expect((try simulate.url.value) == "http://127.0.0.1:8080")
            #expect((try prove.access.token()) == "flag")
            #expect(
                message { _ = try Simulate.parse([]).access.token() }
                    == "writes need the server's admin token: pass --admin-token or set DELTAFEED_ADMIN_TOKEN.")
        }
    }

    @Test("Range checks say the range and the value, as they always have")
    func rangeMessages() throws {
        try withEnvironment([:]) {
            #expect(message { _ = try Serve.parse(["--port", "70000"]).httpOptions.configuration() } == "port must be 0…65535, not 70000.")
            #expect(message { _ = try Serve.parse(["--threads", "0"]).httpOptions.configuration() } == "threads must be 1…256, not 0.")
            #expect(
                message { _ = try Serve.parse(["--answer-compression-level", "12"]).httpOptions.configuration() }
                    == "answer-compression-level must be 0…9, not 12.")
            // The variable is named even when the flag gave the value.
            #expect(
                message { _ = try Serve.parse(["--page-cache-mib", "0"]).caches.options() } == "DELTAFEED_PAGE_CACHE_MIB: must be 1…1048576 MiB, not 0.")
        }
        try withEnvironment(["DELTAFEED_SNAPSHOT_CACHE_MIB": "2000000"]) {
            #expect(message { _ = try Serve.parse([]).caches.options() } == "DELTAFEED_SNAPSHOT_CACHE_MIB: must be 1…1048576 MiB, not 2000000.")
        }
        #expect(parseMessage(Simulate.self, ["--rate", "2000"]) == "--rate must be 0.1…1000 writes per second, not 2000.0.")
        #expect(parseMessage(Prove.self, ["--viewers", "0"]) == "--viewers must be 1…1000, not 0.")
        #expect(parseMessage(Prove.self, ["--writes-per-round", "101"]) == "--writes-per-round must be 1…100, not 101.")
        #expect(parseMessage(Prove.self, ["--threads", "65"]) == "--threads must be 1…64, not 65.")
        #expect(parseMessage(Prove.self, ["--lag-samples", "100001"]) == "--lag-samples must be 0…100000, not 100001.")
    }

    @Test("The help made from a setting reads as it was written by hand")
    func help() {
        // Wide, so each option's help is one line (beside its name, or under it when the name is long).
        let serve = Serve.helpMessage(columns: 10_000)
        for line in [
            "Address to listen on (env DELTAFEED_HOST; default 127.0.0.1; 0.0.0.0 for every interface).",
            "Worker threads, each with its own event loop and listener (env DELTAFEED_THREADS; default: number of cores).",
            "Largest request body in bytes; larger ones get 413 (env DELTAFEED_MAX_BODY_BYTES; default 1048576).",
            "Seconds a connection has to send a complete request, and the idle keep-alive limit (env DELTAFEED_REQUEST_TIMEOUT; default 10).",
            "The store: postgres://USER@HOST:PORT/DB (or postgresql://) for PostgreSQL, shared by several replicas; otherwise the SQLite file of --db (env DELTAFEED_STORE).",
            "SQLite database file, created and migrated if missing (env DELTAFEED_DB; default ./data/deltafeed.sqlite).",
            "Bearer token for write routes; without one, writes answer 403 (env DELTAFEED_ADMIN_TOKEN).",
            "or the admin token (env DELTAFEED_VIEWER_SECRET, which keeps it out of the process list; default: none, feeds readable by anyone).",
            "Hours a snapshot stays usable for deltas; older ones answer 410 (env DELTAFEED_SNAPSHOT_MAX_AGE_HOURS; default 24).",
            "faster on slow disks) (env DELTAFEED_DURABILITY; default full).",
            "MiB of computed deltas kept in memory for clients that ask the same delta again (env DELTAFEED_DELTA_CACHE_MIB; default 0).",
            "notice, warning, error, critical (env DELTAFEED_LOG_LEVEL; default info).",
        ] {
            #expect(serve.contains(line), "\(line)")
        }
        #expect(!serve.contains("(default:"), "ArgumentParser's own default notes stay out")
        #expect(
            Token.helpMessage(columns: 10_000).contains(
                "The server's viewer secret (env DELTAFEED_VIEWER_SECRET, which keeps it out of the process list)."))
        #expect(
            Simulate.helpMessage(columns: 10_000).contains("Base URL of the server (env DELTAFEED_URL; default http://127.0.0.1:8080)."))
        #expect(
            Prove.helpMessage(columns: 10_000).contains(
                "Base URL to prove through; repeat it or separate with commas (env DELTAFEED_URL; default http://127.0.0.1:8080)."))
    }

    // MARK: Helpers

    /// Runs `body` with every `DELTAFEED_` variable the options read unset but `variables`.
    private func withEnvironment(_ variables: [String: String], _ body: () throws -> Void) throws {
        let names = ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("DELTAFEED_") && !$0.hasPrefix("DELTAFEED_TEST_POSTGRES") }
        let saved = Dictionary(uniqueKeysWithValues: names.map { ($0, ProcessInfo.processInfo.environment[$0]!) })
        for name in names { unsetenv(name) }
        for (name, value) in variables { setenv(name, value, 1) }
        defer {
            for name in variables.keys { unsetenv(name) }
            for (name, value) in saved { setenv(name, value, 1) }
        }
        try body()
    }

    /// The message of the `ValidationError` `body` throws.
    private func message(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return (error as? ValidationError)?.message
        }
    }

    /// The message `command` prints for `arguments` refused by its checks.
    private func parseMessage<Command: ParsableCommand>(_ command: Command.Type, _ arguments: [String]) -> String? {
        do {
            _ = try Command.parse(arguments)
            return nil
        } catch {
            return Command.message(for: error)
        }
    }
}
