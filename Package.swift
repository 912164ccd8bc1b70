// swift-tools-version: 6.2
//
// deltafeed: a libevent HTTP service that composes animated mobile feeds into sections and
// answers "what changed since snapshot X?" with deltas a client applies without diffing.
// The module map in README.md says what each target is for and what it may import; dependencies
// point one way: server → service → store/diff.

import PackageDescription

let package = Package(
    name: "deltafeed",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ListDiff", targets: ["ListDiff"]),
        .library(name: "EventHTTP", targets: ["EventHTTP"]),
        .library(name: "DeltaFeedClient", targets: ["DeltaFeedClient"]),
        .executable(name: "deltafeed", targets: ["deltafeed"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-algorithms", from: "1.2.1"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
    ],
    targets: [
        // libevent, through pkg-config's libevent_pthreads (which also links libevent core + extra).
        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent_pthreads",
            providers: [.apt(["libevent-dev"])]
        ),
        // libpq, PostgreSQL's C client, for the PostgreSQL store (pkg-config libpq, apt libpq-dev).
        .systemLibrary(
            name: "CLibpq",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // zlib (pkg-config zlib, apt zlib1g-dev), for gzip bodies.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // libdeflate (pkg-config libdeflate, apt libdeflate-dev): gzip bodies written in one call,
        // two to three times faster than zlib's stream on the server's 0.3-7 KB deltas.
        .systemLibrary(
            name: "CLibdeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]
        ),
        // gzip bodies: the server's compressed answers and the client's reading of them.
        .target(name: "Gzip", dependencies: ["CLibdeflate", "CZlib"]),
        // JSON without Foundation: a strict parser into JSONValue, and a byte writer for error
        // bodies, feed and delta payloads. Shared by the server and the reference client.
        .target(name: "JSONBytes"),
        // System calls retried while a signal interrupts them (EINTR), for the server and the client;
        // thread names the kernel shows.
        .target(name: "SystemCalls"),
        // A multi-threaded HTTP/1.1 server on evhttp. Knows no feed.
        .target(
            name: "EventHTTP",
            dependencies: [
                "CLibevent", "Gzip", "JSONBytes", "SystemCalls",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // The diff engine. Imports nothing, not even Foundation.
        .target(name: "ListDiff"),
        // Hashing (FNV-1a) and pseudo-random numbers (SplitMix64) that give the same results on
        // every run and machine: versions, snapshot ids, digests, the demo seed, test data.
        .target(name: "Deterministic"),
        // The wire format: how ListDiff's results and the feed's values are written as JSON.
        .target(name: "FeedWire", dependencies: ["Deterministic", "JSONBytes", "ListDiff"]),
        // What every store backend shares, and nothing backend-specific: the FeedStorage protocol,
        // records and their columns, validation, the content writes, the schema text, the demo
        // generator, errors with a backend-neutral code.
        .target(name: "FeedStore", dependencies: ["Deterministic"]),
        // The embedded SQLite store through GRDB; the only target that links GRDB.
        .target(
            name: "SQLiteStore",
            dependencies: ["FeedStore", "Gzip", "SystemCalls", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // The PostgreSQL store for several replicas, over libpq (one blocking connection per thread).
        .target(name: "PostgresStore", dependencies: ["CLibpq", "FeedStore", "SystemCalls"]),
        // The in-memory feed index: everything a feed is composed from, kept current by the
        // store's change log. No SQL on the read path.
        .target(
            name: "FeedIndex",
            dependencies: [
                "FeedStore",
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Algorithms", package: "swift-algorithms"),
            ]
        ),
        // Feed composition into sections, snapshots and deltas.
        .target(
            name: "FeedService",
            dependencies: [
                "Deterministic", "ListDiff", "FeedStore", "FeedIndex", "FeedWire", "JSONBytes", "SystemCalls",
                .product(name: "Algorithms", package: "swift-algorithms"),
            ]
        ),
        // The HTTP API: routes, JSON, auth, metrics. Wires EventHTTP to FeedService.
        .target(
            name: "DeltaFeedServer",
            dependencies: [
                "Deterministic", "EventHTTP", "FeedIndex", "FeedService", "FeedStore", "FeedWire", "Gzip", "ListDiff", "JSONBytes",
                "SystemCalls", .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The live feed page (/demo): compiled into the binary as byte arrays, so nothing
            // ships beside it and no Foundation Bundle is needed. See DemoAssets.swift.
            resources: [.embedInCode("Demo")]
        ),
        // One planner of random content writes (which kind, on which ids, with which values), shared by
        // `simulate`, `prove`, the end-to-end proof and the index's property test.
        .target(name: "WritePlanning", dependencies: ["Deterministic", "FeedWire", "JSONBytes"]),
        // Reference client: fetch a feed, apply deltas (FeedWire's types and apply functions, re-exported),
        // keep a copy. No server code.
        .target(name: "DeltaFeedClient", dependencies: ["FeedWire", "Gzip", "JSONBytes", "ListDiff", "SystemCalls"]),
        .executableTarget(
            name: "deltafeed",
            dependencies: [
                "DeltaFeedServer", "DeltaFeedClient", "Deterministic", "EventHTTP", "FeedIndex", "FeedService", "FeedStore",
                "PostgresStore", "SQLiteStore", "WritePlanning",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // jemalloc (apt libjemalloc-dev) is the server's allocator, linked ahead of the C
            // library's: objects made on one thread and freed on another (snapshots, pages) kept
            // glibc's malloc in its slow path, 10 % of the worker. In the polling mix it cut the
            // server's CPU per request by 15-25 % (BENCHMARKS, "The event loop's lock waits,
            // snapshot encoding and jemalloc"). The libraries leave the allocator to their user.
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),
        // The fuzz target for untrusted request bodies; scripts/fuzz builds it with libFuzzer.
        // Built normally, it replays the files it is given (the corpus, a crash).
        .executableTarget(name: "DeltaFeedFuzz", dependencies: ["DeltaFeedServer", "EventHTTP"]),
        // `swift run -c release FeedIndexBenchmark`: index load time and composing one feed from it.
        .executableTarget(name: "FeedIndexBenchmark", dependencies: ["FeedIndex", "FeedService", "FeedStore", "SQLiteStore"]),
        // `swift run -c release ListDiffBenchmark`: the diff benchmark recorded in BENCHMARKS.md.
        .executableTarget(name: "ListDiffBenchmark", dependencies: ["ListDiff", "Deterministic"]),

        // A raw-socket HTTP client for the server test suites: every byte under the test's control.
        .target(name: "HTTPTestSupport", dependencies: ["DeltaFeedClient"], path: "Tests/HTTPTestSupport"),
        // What tests read from a store and production never does: the SQL feed queries of old, kept
        // as the oracle the index-based feeds must equal, and reads that check what a write did.
        .target(
            name: "StoreOracle",
            dependencies: ["Deterministic", "FeedStore", "SQLiteStore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/StoreOracle"
        ),
        // The PostgreSQL the store suites run against (DELTAFEED_TEST_POSTGRES), and the trait of
        // the tests that need it.
        .target(name: "PostgresTestSupport", path: "Tests/PostgresTestSupport"),
        // The golden delta fixtures (Tests/Fixtures/deltas) every apply implementation must pass.
        .target(name: "DeltaFixtures", dependencies: ["JSONBytes"], path: "Tests/DeltaFixtures"),
        .testTarget(
            name: "EventHTTPTests",
            dependencies: ["EventHTTP", "Gzip", "JSONBytes", "HTTPTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "SystemCallsTests", dependencies: ["SystemCalls"]),
        .testTarget(name: "GzipTests", dependencies: ["Gzip"]),
        .testTarget(name: "DeterministicTests", dependencies: ["Deterministic"]),
        .testTarget(name: "JSONBytesTests", dependencies: ["JSONBytes"]),
        .testTarget(name: "FeedWireTests", dependencies: ["DeltaFixtures", "FeedWire", "JSONBytes", "ListDiff"]),
        // The live sequence's end-to-end tests run against an in-process server.
        .testTarget(
            name: "DeltaFeedClientTests",
            dependencies: [
                "DeltaFeedClient", "DeltaFeedServer", "EventHTTP", "FeedService", "FeedStore", "SQLiteStore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "WritePlanningTests", dependencies: ["WritePlanning", "FeedWire", "JSONBytes"]),
        .testTarget(name: "ListDiffTests", dependencies: ["ListDiff", "Deterministic", "DeltaFixtures", "FeedWire", "JSONBytes"]),
        .testTarget(
            name: "FeedStoreTests",
            dependencies: [
                "FeedStore", "SQLiteStore", "PostgresStore", "PostgresTestSupport", "Deterministic", "StoreOracle",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SQLiteStoreTests", dependencies: ["Deterministic", "SQLiteStore", "FeedStore", "StoreOracle", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(name: "PostgresStoreTests", dependencies: ["PostgresStore", "PostgresTestSupport"]),
        .testTarget(
            name: "FeedIndexTests",
            dependencies: ["FeedIndex", "FeedStore", "SQLiteStore", "PostgresStore", "PostgresTestSupport", "Deterministic", "StoreOracle"]
        ),
        .testTarget(
            name: "FeedServiceTests",
            dependencies: [
                "Deterministic", "FeedService", "FeedIndex", "FeedStore", "SQLiteStore", "FeedWire", "JSONBytes", "ListDiff", "StoreOracle", "WritePlanning",
            ]
        ),
        .testTarget(
            name: "DeltaFeedServerTests",
            dependencies: [
                "DeltaFeedServer", "DeltaFeedClient", "Deterministic", "FeedService", "FeedStore", "FeedWire", "SQLiteStore", "EventHTTP", "Gzip", "JSONBytes",
                "HTTPTestSupport", "PostgresStore", "PostgresTestSupport", "StoreOracle", "WritePlanning",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The pieces of `deltafeed prove` that need no server (its proof over HTTP runs in scripts/cluster-test).
        .testTarget(
            name: "DeltafeedCommandTests",
            dependencies: [
                "deltafeed", "DeltaFeedClient", "DeltaFeedServer", "EventHTTP", "FeedService", "FeedStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Rules the compiler checks on every target of this package (not on its dependencies):
// - MemberImportVisibility: a file uses only what its own imports bring in, so each target's
//   imports are exactly what Package.swift declares and the README's module map lists.
// - InternalImportsByDefault: an `import` is internal unless written `public import`, so a
//   module's public API says which modules it re-exposes.
// - Warnings are errors.
for target in package.targets where target.type != .system {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("InternalImportsByDefault"),
            .treatAllWarnings(as: .error),
        ]
}
