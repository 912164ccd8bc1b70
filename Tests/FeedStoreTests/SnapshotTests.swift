import FeedStore
import Foundation
import PostgresStore
import PostgresTestSupport
import Synchronization
import Testing

@Suite("Snapshots")
struct SnapshotTests {
    @Test("A snapshot saved for a viewer loads back byte for byte, and only for that viewer", arguments: Backend.all)
    func saveAndLoad(_ backend: Backend) throws {
        let clock = ManualClock(start: 5_000, step: 0)
        let store = try makeStore(backend, clock: clock)
        let bytes = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let saved = try store.saveSnapshot(id: "9f86d081884c7d65", viewer: 7, structure: bytes)
        #expect(saved == StoredSnapshot(id: "9f86d081884c7d65", viewerID: 7, createdAt: 5_000, structure: bytes))
        #expect(try store.snapshot(id: "9f86d081884c7d65", viewer: 7) == saved)
        #expect(try store.snapshot(id: "9f86d081884c7d65", viewer: 8) == nil)
        #expect(try store.snapshot(id: "unknown", viewer: 7) == nil)
    }

    @Test("Saving an equal id again is idempotent and refreshes its time; two viewers may share an id", arguments: Backend.all)
    func resaveIsIdempotent(_ backend: Backend) throws {
        let clock = ManualClock(start: 5_000, step: 0)
        let store = try makeStore(backend, clock: clock)
        try store.saveSnapshot(id: "abc", viewer: 1, structure: Data([1, 2]))
        try store.saveSnapshot(id: "abc", viewer: 2, structure: Data([1, 2]))
        clock.advance(by: 10)
        try store.saveSnapshot(id: "abc", viewer: 1, structure: Data([1, 2]))
        #expect(try store.counts().snapshots == 2)
        #expect(try store.snapshot(id: "abc", viewer: 1)?.createdAt == 5_010)
        #expect(try store.snapshot(id: "abc", viewer: 2)?.createdAt == 5_000)
    }

    @Test("Saving keeps only the newest snapshots per viewer, other viewers untouched", arguments: Backend.all)
    func pruneByCount(_ backend: Backend) throws {
        let store = try makeStore(backend, retention: .init(maxPerViewer: 3))
        for index in 1...6 {
            try store.saveSnapshot(id: "a\(index)", viewer: 1, structure: Data([UInt8(index)]))
        }
        try store.saveSnapshot(id: "b1", viewer: 2, structure: Data())
        try store.saveSnapshot(id: "b2", viewer: 2, structure: Data())
        let kept = try (1...6).filter { try store.snapshot(id: "a\($0)", viewer: 1) != nil }
        #expect(kept == [4, 5, 6])
        #expect(try store.snapshot(id: "b1", viewer: 2) != nil)
        #expect(try store.counts().snapshots == 5)

        // Re-saving an old one makes it the newest: the oldest other one goes.
        try store.saveSnapshot(id: "a4", viewer: 1, structure: Data([4]))
        try store.saveSnapshot(id: "a7", viewer: 1, structure: Data([7]))
        let keptAfter = try (1...7).filter { try store.snapshot(id: "a\($0)", viewer: 1) != nil }
        #expect(keptAfter == [4, 6, 7])
    }

    @Test("Count pruning keeps the snapshot just saved even when every time is equal", arguments: Backend.all)
    func pruneByCountWithEqualTimes(_ backend: Backend) throws {
        let store = try makeStore(backend, clock: ManualClock(start: 1, step: 0), retention: .init(maxPerViewer: 2))
        for id in ["zz", "mm", "aa"] {
            try store.saveSnapshot(id: id, viewer: 1, structure: Data())
            #expect(try store.snapshot(id: id, viewer: 1) != nil, "\(id) was pruned right after saving")
        }
        #expect(try store.snapshot(id: "mm", viewer: 1) != nil)
        #expect(try store.snapshot(id: "zz", viewer: 1) == nil)
    }

    @Test("Saving deletes the viewer's snapshots older than the maximum age; the global prune does it for everyone", arguments: Backend.all)
    func pruneByAge(_ backend: Backend) throws {
        let clock = ManualClock(start: 0, step: 0)
        let store = try makeStore(backend, clock: clock, retention: .init(maxPerViewer: 100, maxAgeMilliseconds: 1_000))
        try store.saveSnapshot(id: "old", viewer: 1, structure: Data())  // t = 0
        try store.saveSnapshot(id: "other", viewer: 2, structure: Data())  // t = 0
        clock.advance(by: 700)
        try store.saveSnapshot(id: "recent", viewer: 1, structure: Data())  // t = 700
        clock.advance(by: 900)
        try store.saveSnapshot(id: "new", viewer: 1, structure: Data())  // t = 1600, cutoff 600
        #expect(try store.snapshot(id: "old", viewer: 1) == nil)
        #expect(try store.snapshot(id: "recent", viewer: 1) != nil)
        #expect(try store.snapshot(id: "new", viewer: 1) != nil)
        #expect(try store.snapshot(id: "other", viewer: 2) != nil, "only the saving viewer is pruned on save")

        #expect(try store.pruneExpiredSnapshots() == 1)
        #expect(try store.snapshot(id: "other", viewer: 2) == nil)
        clock.advance(by: 1_001)
        #expect(try store.pruneExpiredSnapshots() == 2)
        #expect(try store.counts().snapshots == 0)
        #expect(store.changeVersion == 0, "snapshots are not content")
    }

    @Test(
        "Snapshot bases are kept with a batch, read back per viewer, never replaced, and expire at one and a half times the snapshots' age",
        arguments: Backend.all)
    func basesLiveByAge(_ backend: Backend) throws {
        let clock = ManualClock(start: 0, step: 0)
        let store = try makeStore(backend, clock: clock, retention: .init(maxPerViewer: 2, maxAgeMilliseconds: 1_000))
        let base = StoredSnapshot(id: "base", viewerID: 1, createdAt: 0, structure: Data([1, 2, 3]))
        let row = StoredSnapshot(id: "s1", viewerID: 1, createdAt: 0, structure: Data([9]))
        try store.persistSnapshots(upserts: [row], deletions: [], prune: [1], keepPerViewer: 2, bases: [base])
        #expect(try store.snapshotBase(id: "base", viewer: 1) == base)
        #expect(try store.snapshotBase(id: "base", viewer: 2) == nil)
        #expect(try store.snapshot(id: "base", viewer: 1) == nil, "a base is not a snapshot")
        #expect(try store.snapshot(id: "s1", viewer: 1) == row)

        // Kept again: the first stays (a base is the bytes snapshots were encoded against).
        clock.advance(by: 800)
        let again = StoredSnapshot(id: "base", viewerID: 1, createdAt: 800, structure: Data([7]))
        try store.persistSnapshots(upserts: [], deletions: [], prune: [], keepPerViewer: 2, bases: [again])
        #expect(try store.snapshotBase(id: "base", viewer: 1) == base)

        // Snapshot pruning by count or deletion leaves bases alone; age removes them at 1.5× the maximum.
        for index in 2...5 {
            try store.persistSnapshots(
                upserts: [StoredSnapshot(id: "s\(index)", viewerID: 1, createdAt: 800, structure: Data([9]))], deletions: [(viewer: 1, id: "s1")],
                prune: [1], keepPerViewer: 2, bases: [])
        }
        #expect(try store.snapshotBase(id: "base", viewer: 1) == base)
        clock.advance(by: 600)  // t = 1400: snapshots before 400 expire, bases before -100 do not exist
        #expect(try store.pruneExpiredSnapshots() == 0)
        #expect(try store.snapshotBase(id: "base", viewer: 1) == base)
        clock.advance(by: 101)  // t = 1501: the base (t = 0) is past 1,500 ms
        _ = try store.pruneExpiredSnapshots()
        #expect(try store.snapshotBase(id: "base", viewer: 1) == nil)
    }

    @Test("A viewer keeps as many bases as snapshots, the newest: feeds asked once with ever new parameters cannot pile them up", arguments: Backend.all)
    func basesAreBoundedPerViewer(_ backend: Backend) throws {
        let clock = ManualClock(start: 0, step: 0)
        let store = try makeStore(backend, clock: clock)
        for index in 0..<10 {
            clock.advance(by: 1)
            let base = StoredSnapshot(id: "b\(index)", viewerID: 1, createdAt: clock.now, structure: Data([UInt8(index)]))
            try store.persistSnapshots(upserts: [], deletions: [], prune: [], keepPerViewer: 4, bases: [base])
        }
        try store.persistSnapshots(
            upserts: [], deletions: [], prune: [], keepPerViewer: 4, bases: [StoredSnapshot(id: "other", viewerID: 2, createdAt: 0, structure: Data())])
        for index in 0..<10 {
            #expect((try store.snapshotBase(id: "b\(index)", viewer: 1) != nil) == (index >= 6), "b\(index)")
        }
        #expect(try store.snapshotBase(id: "other", viewer: 2) != nil)
    }
}

@Suite("Snapshots on PostgreSQL", needsPostgres)
struct PostgresSnapshotTests {
    /// What "any replica, at once" rests on, with unlogged tables: committed rows are read by
    /// every other connection, whatever the WAL.
    @Test("A batch's snapshots and bases are read by another store on the same database as soon as persistSnapshots returns")
    func anotherStoreReadsABatchAtOnce() throws {
        let schema = freshSchemaName()
        let options = StorageOptions(maximumReaderCount: 1)
        let writer = try PostgresFeedStore(url: postgresURL!, schema: schema, options: options)
        let reader = try PostgresFeedStore(url: postgresURL!, schema: schema, options: options)
        let base = StoredSnapshot(id: "base", viewerID: 3, createdAt: 1, structure: Data([1, 2, 3]))
        let rows = (1...40).map { StoredSnapshot(id: "s\($0)", viewerID: Int64($0 % 4), createdAt: 2, structure: Data([UInt8($0)])) }
        try writer.persistSnapshots(upserts: rows, deletions: [], prune: [], keepPerViewer: 32, bases: [base])
        for row in rows { #expect(try reader.snapshot(id: row.id, viewer: row.viewerID) == row) }
        #expect(try reader.snapshotBase(id: "base", viewer: 3) == base)
    }

    @Test("Count pruning reads the primary key's range of each viewer, and keeps each one's newest")
    func pruningUsesThePrimaryKey() throws {
        let clock = ManualClock(start: 0, step: 1)
        let store = try makeStore(.postgres, clock: clock)
        for index in 0..<30 {
            let rows = (1...3).map { viewer in StoredSnapshot(id: "v\(viewer)s\(index)", viewerID: Int64(viewer), createdAt: clock.tick(), structure: Data()) }
            try store.persistSnapshots(upserts: rows, deletions: [], prune: [], keepPerViewer: 4, bases: [])
        }
        try store.persistSnapshots(upserts: [], deletions: [], prune: [1, 2], keepPerViewer: 4, bases: [])
        for viewer in 1...3 {
            let kept = try (0..<30).filter { try store.snapshot(id: "v\(viewer)s\($0)", viewer: Int64(viewer)) != nil }
            #expect(kept == (viewer == 3 ? Array(0..<30) : [26, 27, 28, 29]), "viewer \(viewer)")
        }
        let plan = try (store as! PostgresFeedStore).explain(PostgresFeedStore.pruneViewers, ["{1,2}", "4"])
        #expect(plan.contains("snapshots_pkey"), "\(plan)")
        #expect(!plan.contains("Seq Scan on snapshots"), "\(plan)")
    }

    /// The defect: count pruning ranked the rows of `viewer_id = ANY($1)` and joined them back on
    /// the key; on a table of realistic size the planner read all of it twice for that (two
    /// sequential scans and a hash join, 25–150 ms once a second in the polling mix), though the
    /// rows of a few hundred viewers are a few thousand.
    @Test("Count pruning reads each viewer's rows through the primary key on a table of realistic size, and takes what it deletes by tuple id")
    func pruningReadsViewersNotTheTable() throws {
        let schema = freshSchemaName()
        let store = try PostgresFeedStore(url: postgresURL!, schema: schema, options: StorageOptions(maximumReaderCount: 1))
        // 1,000 viewers with 24 rows each, as the polling mix's table holds them.
        var rows: [StoredSnapshot] = []
        for viewer in 1...1_000 {
            for index in 0..<24 {
                rows.append(StoredSnapshot(id: "v\(viewer)s\(index)", viewerID: Int64(viewer), createdAt: Int64(index), structure: Data([1])))
            }
        }
        try store.persistSnapshots(upserts: rows, deletions: [], prune: [], keepPerViewer: 100, bases: [])
        let admin = try PostgresConnection(url: postgresURL!)
        try admin.execute("ANALYZE \(schema).snapshots")
        // A pass's worth of viewers: a tenth of the table's.
        let viewers = "{" + stride(from: 1, through: 1_000, by: 10).map(String.init).joined(separator: ",") + "}"
        let plan = try store.explain(PostgresFeedStore.pruneViewers, [viewers, "32"], settings: [])
        #expect(!plan.contains("Seq Scan on snapshots"), "\(plan)")
        #expect(plan.contains("snapshots_pkey"), "\(plan)")
        #expect(plan.contains("Tid Scan on snapshots"), "\(plan)")
        try store.persistSnapshots(upserts: [], deletions: [], prune: [1, 2], keepPerViewer: 20, bases: [])
        let kept = try (0..<24).filter { try store.snapshot(id: "v1s\($0)", viewer: 1) != nil }
        #expect(kept == Array(4..<24))
        #expect(try store.snapshot(id: "v3s0", viewer: 3) != nil, "viewers not pruned keep everything")
    }

    /// The defect: a connection plans each prepared statement once, and the bases' pruning,
    /// planned while `snapshot_bases` was small, kept a sequential scan of the table it deletes
    /// from: 1.5 ms a call on average at 500 writes/s, in every answer's pass that took a new
    /// base. A batch's transaction now rules sequential scans out, whatever the table's size
    /// when its statements were planned.
    @Test("A batch's transaction finds the bases and snapshots it prunes by key, even where the planner would scan a small table")
    func batchesPruneByKeyWhateverTheTableSize() throws {
        let store = try PostgresFeedStore(url: postgresURL!, schema: freshSchemaName(), options: StorageOptions(maximumReaderCount: 1))
        let bases = (1...6).map { StoredSnapshot(id: "b\($0)", viewerID: Int64($0 % 3), createdAt: Int64($0), structure: Data([1])) }
        try store.persistSnapshots(upserts: [], deletions: [], prune: [], keepPerViewer: 4, bases: bases)
        let bare = try store.explain(PostgresFeedStore.keepNewest(in: "snapshot_bases", tiesBy: "ctid"), ["{1,2}", "4"], settings: [])
        #expect(bare.contains("Seq Scan on snapshot_bases"), "on its own the planner scans a small table: \(bare)")
        for table in ["snapshot_bases", "snapshots"] {
            let plan = try store.explain(
                PostgresFeedStore.keepNewest(in: table, tiesBy: table == "snapshots" ? "saved" : "ctid"), ["{1,2}", "4"],
                settings: [PostgresFeedStore.snapshotTransactionSettings])
            #expect(!plan.contains("Seq Scan"), "\(table): \(plan)")
            #expect(plan.contains("\(table)_pkey") && plan.contains("Tid Scan on \(table)"), "\(table): \(plan)")
        }
    }

    /// The defect: PostgreSQL compiled plans whose cost estimate passed `jit_above_cost` before
    /// running them; the per-viewer pruning's did, and about 100 ms of its 140 went to compiling.
    @Test("The store's sessions run without JIT compilation")
    func sessionsRunWithoutJIT() throws {
        let store = try PostgresFeedStore(url: postgresURL!, schema: freshSchemaName(), options: StorageOptions(maximumReaderCount: 1))
        #expect(try store.setting("jit") == "off")
    }

    /// The README: `--durability full` is `synchronous_commit = on` (a write's answer waits for
    /// its commit to reach disk), `normal` is `off`.
    @Test("The store's sessions commit synchronously with full durability and asynchronously with normal")
    func durabilitySetsSynchronousCommit() throws {
        for (durability, expected) in [(StorageOptions.Durability.full, "on"), (.normal, "off")] {
            let options = StorageOptions(maximumReaderCount: 1, durability: durability)
            let store = try PostgresFeedStore(url: postgresURL!, schema: freshSchemaName(), options: options)
            #expect(try store.setting("synchronous_commit") == expected, "durability \(durability)")
        }
    }

    /// The README: the store's location (what the server logs at start) is the URL without the
    /// password of its user part.
    @Test("The store's location names the server and schema, never the URL's password")
    func locationLeavesThePasswordOut() throws {
        let url = try #require(postgresURL)
        let scheme = try #require(url.range(of: "://"))
        let user = try #require(url.range(of: "@", range: scheme.upperBound..<url.endIndex))
        // The test server trusts local connections, so a password is sent and ignored.
        let withPassword = String(url[..<user.lowerBound]) + ":s3cret-pw" + String(url[user.lowerBound...])
        let schema = freshSchemaName()
        let store = try PostgresFeedStore(url: withPassword, schema: schema, options: StorageOptions(maximumReaderCount: 1))
        #expect(!store.location.contains("s3cret"), "\(store.location)")
        #expect(store.location.contains("127.0.0.1") && store.location.contains(schema), "\(store.location)")
    }

    /// The defect: count pruning ranked a viewer's rows, then deleted a row that another
    /// transaction had stored again meanwhile (a snapshot served again: a newer time) as soon as
    /// that one committed. The replica that served it still answered it from memory; every other
    /// replica answered 410.
    @Test("Count pruning leaves a row stored again while it runs")
    func pruningKeepsARowStoredAgainMeanwhile() throws {
        let schema = freshSchemaName()
        let store = try PostgresFeedStore(url: postgresURL!, schema: schema, options: StorageOptions(maximumReaderCount: 1))
        let rows = (0..<10).map { StoredSnapshot(id: "s\($0)", viewerID: 1, createdAt: Int64(1 + $0), structure: Data([1])) }
        try store.persistSnapshots(upserts: rows, deletions: [], prune: [], keepPerViewer: 100, bases: [])
        // Another replica stores s0 again, the oldest, and has not committed when the pruning
        // reaches it.
        let other = try PostgresConnection(url: postgresURL!)
        let otherPID = try #require(try other.execute("SELECT pg_backend_pid()").rows.first?.first ?? nil)
        try other.execute("BEGIN")
        try other.execute(
            "INSERT INTO \(schema).snapshots (viewer_id, id, created_at, structure) VALUES (1, 's0', 1000, '\\x01') "
                + "ON CONFLICT (viewer_id, id) DO UPDATE SET created_at = excluded.created_at, structure = excluded.structure")
        let pruned = Mutex<Result<Void, any Error>?>(nil)
        Thread {
            let result = Result<Void, any Error> { try store.persistSnapshots(upserts: [], deletions: [], prune: [1], keepPerViewer: 4, bases: []) }
            pruned.withLock { $0 = result }
        }.start()
        let admin = try PostgresConnection(url: postgresURL!)
        var waiting = false
        for _ in 0..<500 where !waiting {
            waiting = try admin.execute("SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))", [otherPID]).rows != [["0"]]
            if !waiting { usleep(20_000) }
        }
        #expect(waiting, "the pruning waits for s0")
        try other.execute("COMMIT")
        for _ in 0..<500 where pruned.withLock({ $0 == nil }) { usleep(20_000) }
        try #require(pruned.withLock { $0 }).get()
        let kept = try (0..<10).filter { try store.snapshot(id: "s\($0)", viewer: 1) != nil }
        #expect(kept == [0, 6, 7, 8, 9], "s0, stored again, is the newest now")
    }

    @Test("After many deletions the store vacuums its snapshot tables itself, on a thread of its own")
    func manyDeletionsVacuum() throws {
        let schema = freshSchemaName()
        let store = try PostgresFeedStore(url: postgresURL!, schema: schema, options: StorageOptions(maximumReaderCount: 1))
        store.vacuumSnapshots(afterDeleting: 50, atMostEvery: 0)
        let rows = (0..<60).map { StoredSnapshot(id: "s\($0)", viewerID: 1, createdAt: 1, structure: Data([1])) }
        try store.persistSnapshots(upserts: rows, deletions: [], prune: [], keepPerViewer: 100, bases: [])
        #expect(store.snapshotVacuums == 0)
        try store.persistSnapshots(upserts: [], deletions: rows.map { (viewer: $0.viewerID, id: $0.id) }, prune: [], keepPerViewer: 100, bases: [])
        for _ in 0..<100 where store.snapshotVacuums == 0 { usleep(50_000) }
        #expect(store.snapshotVacuums == 1)
        let admin = try PostgresConnection(url: postgresURL!)
        let counted = try admin.execute(
            "SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'snapshots'", [schema]
        ).rows
        #expect(counted == [["1"]])
    }
}
