public import Foundation

/// Tuning and policies of a store, whichever backend holds it (``FeedStorage/options``).
public struct StorageOptions: Sendable {
    /// How many connections may read at the same time. Readers beyond this wait for a free
    /// connection. Default 8.
    public var maximumReaderCount: Int
    /// How long a write waits for a lock held by another writer (another process on the same
    /// SQLite file, another replica on PostgreSQL) before failing with
    /// ``StorageFailure/busy``, in seconds. Default 5.
    public var busyTimeout: TimeInterval
    /// Per-viewer snapshot retention, applied whenever snapshots are saved.
    public var snapshotRetention: SnapshotRetention
    /// The source of "now" for `created_at`/`updated_at` and snapshot ages, in Unix
    /// milliseconds. Defaults to the system clock; tests inject a fixed or manual clock.
    public var clock: @Sendable () -> Int64
    /// When a committed write is on stable storage. Default ``Durability/full``.
    public var durability: Durability
    /// SQLite: how often a thread of the store's own copies the write-ahead log back into the
    /// database file, on a connection of its own, so that no commit does it. Nil (the default)
    /// keeps SQLite's behaviour: the commit that grows the log past 1,000 pages checkpoints
    /// before it returns, and every write queued behind it waits (tens of milliseconds on a
    /// large store). The server sets it. PostgreSQL checkpoints by itself and ignores it.
    public var backgroundCheckpointInterval: Duration?

    /// Creates options; every parameter has a production default.
    public init(
        maximumReaderCount: Int = 8,
        busyTimeout: TimeInterval = 5,
        snapshotRetention: SnapshotRetention = SnapshotRetention(),
        durability: Durability = .full,
        backgroundCheckpointInterval: Duration? = nil,
        clock: @escaping @Sendable () -> Int64 = StorageOptions.systemClock
    ) {
        self.maximumReaderCount = maximumReaderCount
        self.busyTimeout = busyTimeout
        self.snapshotRetention = snapshotRetention
        self.durability = durability
        self.backgroundCheckpointInterval = backgroundCheckpointInterval
        self.clock = clock
    }

    /// The system clock in Unix milliseconds.
    public static let systemClock: @Sendable () -> Int64 = {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// How far a commit goes before a write returns.
    public enum Durability: String, Sendable, CaseIterable {
        /// Every commit is synced to the disk before the write returns (SQLite
        /// `synchronous = FULL` in WAL mode): an acknowledged write survives a power loss.
        case full
        /// Commits reach the operating system, and the disk at each WAL checkpoint (SQLite
        /// `synchronous = NORMAL`): an acknowledged write survives a crash of the process but
        /// the last ones may be lost if the machine loses power. Faster on slow disks.
        case normal
    }

    /// How many snapshots are kept per viewer, and for how long.
    public struct SnapshotRetention: Sendable, Hashable {
        /// The newest snapshots kept per viewer (at least 1). Default 16.
        public var maxPerViewer: Int
        /// Snapshots older than this are deleted, in milliseconds. Default 24 hours.
        public var maxAgeMilliseconds: Int64

        /// Creates a retention policy. `maxPerViewer` is raised to 1 if lower.
        public init(maxPerViewer: Int = 16, maxAgeMilliseconds: Int64 = 24 * 60 * 60 * 1000) {
            self.maxPerViewer = max(1, maxPerViewer)
            self.maxAgeMilliseconds = maxAgeMilliseconds
        }

        /// How long a snapshot base may serve new snapshots: half the snapshots' maximum age.
        /// A writer takes a new base after it, so every snapshot naming a base is saved within
        /// this of the base, and expires within ``baseMaxAgeMilliseconds`` of it.
        public var baseUseMilliseconds: Int64 { maxAgeMilliseconds / 2 }

        /// Snapshot bases older than this are deleted: one and a half times the snapshots'
        /// maximum age, so no snapshot still kept can name one that is gone.
        public var baseMaxAgeMilliseconds: Int64 {
            let (tripled, overflow) = maxAgeMilliseconds.multipliedReportingOverflow(by: 3)
            return overflow ? .max : tripled / 2
        }
    }
}
