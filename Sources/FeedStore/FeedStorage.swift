public import Foundation

/// A store deltafeed can run on: the embedded SQLite `SQLiteFeedStore`, or `PostgresFeedStore` for
/// several replicas sharing one PostgreSQL.
///
/// A backend provides consistent reads (``read(_:)``), one write primitive (``write(touchesAds:change:_:)``:
/// a transaction that bumps the change version and appends the change-log entry), snapshot
/// persistence and upkeep, and seeding. The content writes (``createUser(handle:displayName:avatarURL:)``
/// and the others, in `ContentWrites.swift`) are written once over that primitive, so their
/// validation, checks and errors are the same on every backend.
///
/// Every method is synchronous and may be called from any thread. Failures are
/// ``FeedStoreError``s; a write that throws has changed nothing.
public protocol FeedStorage: AnyObject, Sendable {
    /// What ``read(_:)`` hands its closure.
    associatedtype Reader: FeedStoreReader
    /// What ``write(touchesAds:change:_:)`` hands its closure.
    associatedtype Transaction: StorageTransaction

    /// Tuning and policies (snapshot retention, clock, durability).
    var options: StorageOptions { get }

    /// Where the store lives, for logs: a file path, or a URL without its password.
    var location: String { get }

    /// A number that increases with every committed content write, read without touching
    /// storage (see `SQLiteFeedStore.changeVersion`). Read it before the data you cache under it.
    var changeVersion: Int64 { get }

    /// Re-reads the change version from storage (writes by other processes) and returns it.
    @discardableResult
    func refreshChangeVersion() throws(FeedStoreError) -> Int64

    /// Runs `body` with read access to one consistent state of the store.
    func read<T>(_ body: (Reader) throws -> T) throws -> T

    /// ``read(_:)`` for reads that throw only ``FeedStoreError``, keeping the error's type.
    func reading<T>(_ body: (Reader) throws(FeedStoreError) -> T) throws(FeedStoreError) -> T

    /// The change-log entries after `sequence` (oldest first, at most `limit`) with the rows
    /// they name, as of one state of the store, and its change version: the users of user
    /// entries and of both ends of follow entries, the videos of video entries, and which of the
    /// follow entries' edges exist. What the index's catch-up reads most of the time; the default
    /// reads it in one ``read(_:)``, PostgreSQL in one statement and one round trip.
    func changesWithRows(after sequence: Int64, limit: Int) throws(FeedStoreError) -> ChangesWithRows

    /// Runs `body` in one write transaction that also bumps the change version (and the ad epoch
    /// when `touchesAds`) and appends `change(value)` to the change log under the new version.
    /// Nothing is written if `body` throws. The content writes are built on it.
    func write<T>(touchesAds: Bool, change: (T) -> PendingChange, _ body: (Transaction) throws -> T) throws(FeedStoreError) -> T

    /// Runs `body` as one group commit: one transaction, one commit (so one sync under
    /// ``StorageOptions/Durability/full``) for every ``write(touchesAds:change:_:)`` that `body`
    /// makes on this thread. Each of those writes runs in a savepoint of its own and keeps its
    /// own change version and change-log entry: a write that throws is rolled back alone and
    /// its error reaches its caller, while the others stay. Reads made inside `body` through
    /// ``read(_:)`` see the group's writes so far.
    ///
    /// - Throws: when the group's transaction itself fails (it cannot begin, or the commit
    ///   fails): then none of its writes is stored, whatever they returned inside `body`.
    func writeGroup(_ body: () -> Void) throws(FeedStoreError)

    /// Carries out staged writes in order, each as ``perform(_:)`` would alone, and answers
    /// each (``StagedWrite/grouped(answer:)``): the same values, errors and change-log entries.
    /// Inside a group (``writeGroup(_:)``) a backend may send every write's step before it reads
    /// any answer (PostgreSQL: one round trip for all of them), since a refused write's step
    /// changes nothing. A statement that fails outright there is no write's answer: the backend
    /// then undoes the steps it sent and carries the writes out one by one instead.
    /// The default carries them out one by one.
    func performTogether(_ writes: [GroupedWrite])

    /// Saves one snapshot and prunes that viewer's history (see `SQLiteFeedStore.saveSnapshot(id:viewer:structure:)`).
    @discardableResult
    func saveSnapshot(id: String, viewer: Int64, structure: Data) throws(FeedStoreError) -> StoredSnapshot

    /// Writes a batch of snapshots in one transaction, off the request path (see
    /// `SQLiteFeedStore.persistSnapshots(upserts:deletions:prune:keepPerViewer:bases:)`):
    /// `bases` are snapshot bases to keep (inserted unless there), in the same transaction.
    func persistSnapshots(
        upserts: [StoredSnapshot], deletions: [(viewer: Int64, id: String)], prune: Set<Int64>, keepPerViewer: Int, bases: [StoredSnapshot]
    ) throws(FeedStoreError)

    /// Deletes every snapshot older than the retention's maximum age, and every snapshot base
    /// older than one and a half times it (see ``StorageOptions/SnapshotRetention/baseMaxAgeMilliseconds``);
    /// returns how many snapshots.
    @discardableResult
    func pruneExpiredSnapshots() throws(FeedStoreError) -> Int

    /// Deletes change-log entries older than the newest `keep`; returns how many.
    @discardableResult
    func pruneChangeLog(keeping keep: Int64) throws(FeedStoreError) -> Int

    /// Fills an empty store with the deterministic demo, all or nothing, reporting progress
    /// every 1000 rows and (total, total) once at the end (see `SQLiteFeedStore.seed(_:progress:)`).
    @discardableResult
    func seed(_ demo: DemoSeed, progress: ((_ done: Int, _ total: Int) -> Void)?) throws(FeedStoreError) -> StoreCounts
}

/// What can be read from a store inside one consistent read: what the feed index loads and
/// catches up from, and what the service and the command read beside it (snapshots, emptiness).
public protocol FeedStoreReader {
    /// The change version of this state of the store.
    func changeVersion() throws(FeedStoreError) -> Int64
    /// Row counts of every table.
    func counts() throws(FeedStoreError) -> StoreCounts
    /// Whether the store holds no user, video or ad.
    func isEmpty() throws(FeedStoreError) -> Bool
    /// The change-log entries after `sequence`, oldest first, at most `limit`.
    func changes(after sequence: Int64, limit: Int) throws(FeedStoreError) -> [ChangeEntry]
    /// The user, video or ad with this id, or nil.
    func record<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws(FeedStoreError) -> Record?
    /// The users, videos or ads with these ids, keyed by id; missing ids are absent. One query.
    func records<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, ids: some Sequence<Int64>) throws(FeedStoreError) -> [Int64: Record]
    /// The active ads by id, with the ad epoch.
    func activeAds() throws(FeedStoreError) -> AdInventory
    /// Whether `follower` follows `followee`.
    func isFollowing(follower: Int64, followee: Int64) throws(FeedStoreError) -> Bool
    /// What the index reads after a batch of change-log entries: the users and videos with
    /// these ids (missing ids absent) and which of `edges` exist. The default reads them one
    /// query after the other (one per edge); PostgreSQL sends every query at once, in one
    /// round trip whatever the number of edges.
    func changedRows(users: Set<Int64>, videos: Set<Int64>, edges: Set<FollowEdge>) throws(FeedStoreError) -> ChangedRows
    /// The snapshot `id` saved for `viewer`, or nil.
    func snapshot(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot?
    /// The snapshot base `id` kept for `viewer`, or nil.
    func snapshotBase(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot?
    /// Calls `body` with every row of `Record`'s table in primary-key order, streaming (the
    /// index load: no array of every row in between).
    func forEach<Record: StoredRecord>(_ type: Record.Type, _ body: (Record) throws -> Void) throws(FeedStoreError)
    /// Calls `body` with every follow edge, by follower then followee, streaming: two integers a
    /// row, not a decoded ``Follow`` (the index load reads millions of them).
    func forEachFollow(_ body: (_ follower: Int64, _ followee: Int64) throws -> Void) throws(FeedStoreError)
}

/// A follow edge: `follower` follows `followee`.
public struct FollowEdge: Hashable, Sendable {
    public var follower: Int64
    public var followee: Int64

    public init(follower: Int64, followee: Int64) {
        self.follower = follower
        self.followee = followee
    }
}

/// What ``FeedStorage/changesWithRows(after:limit:)`` read.
public struct ChangesWithRows: Sendable {
    /// The entries, oldest first.
    public var entries: [ChangeEntry]
    /// The rows they name.
    public var rows: ChangedRows
    /// The store's change version in the same state.
    public var changeVersion: Int64

    public init(entries: [ChangeEntry], rows: ChangedRows, changeVersion: Int64) {
        self.entries = entries
        self.rows = rows
        self.changeVersion = changeVersion
    }
}

extension ChangeEntry {
    /// The rows `entries` name (see ``FeedStorage/changesWithRows(after:limit:)``).
    public static func namedRows(_ entries: some Sequence<ChangeEntry>) -> (users: Set<Int64>, videos: Set<Int64>, edges: Set<FollowEdge>) {
        var named: (users: Set<Int64>, videos: Set<Int64>, edges: Set<FollowEdge>) = ([], [], [])
        for entry in entries {
            switch entry.kind {
            case .userCreated, .userUpdated, .userDeleted:
                named.users.insert(entry.key)
            case .videoCreated, .videoUpdated, .videoDeleted:
                named.videos.insert(entry.key)
            case .followed, .unfollowed:
                guard let followee = entry.otherKey else { continue }
                named.users.insert(entry.key)
                named.users.insert(followee)
                named.edges.insert(FollowEdge(follower: entry.key, followee: followee))
            case .adChanged, .reset:
                break
            }
        }
        return named
    }
}

/// The rows that ``FeedStoreReader/changedRows(users:videos:edges:)`` found.
public struct ChangedRows: Sendable {
    /// The users found, by id.
    public var users: [Int64: User]
    /// The videos found, by id.
    public var videos: [Int64: Video]
    /// The edges asked about that exist.
    public var follows: Set<FollowEdge>

    public init(users: [Int64: User] = [:], videos: [Int64: Video] = [:], follows: Set<FollowEdge> = []) {
        self.users = users
        self.videos = videos
        self.follows = follows
    }
}

extension FeedStoreReader {
    public func changedRows(users: Set<Int64>, videos: Set<Int64>, edges: Set<FollowEdge>) throws(FeedStoreError) -> ChangedRows {
        var rows = ChangedRows()
        if !users.isEmpty { rows.users = try self.users(ids: users) }
        if !videos.isEmpty { rows.videos = try self.videos(ids: videos) }
        for edge in edges where try isFollowing(follower: edge.follower, followee: edge.followee) { rows.follows.insert(edge) }
        return rows
    }

    /// The users with these ids, keyed by id; missing ids are absent.
    public func users(ids: some Sequence<Int64>) throws(FeedStoreError) -> [Int64: User] { try records(User.self, ids: ids) }
    /// The videos with these ids, keyed by id; missing ids are absent.
    public func videos(ids: some Sequence<Int64>) throws(FeedStoreError) -> [Int64: Video] { try records(Video.self, ids: ids) }
}

/// The operations a backend's write transaction offers the content writes. Each runs inside the
/// transaction of ``FeedStorage/write(touchesAds:change:_:)``; errors roll it back.
public protocol StorageTransaction {
    /// Inserts `record` and returns its id: the one the store assigned when it assigns ids
    /// (the record's own `id` is ignored then), else 0.
    func insert<Record: StoredRecord>(_ record: Record) throws -> Int64
    /// The record with this `id`, or nil.
    func fetch<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws -> Record?
    /// Writes every column of `record` to the row with its `id`. A backend may carry it out
    /// with the write's next statement, or as the write ends: its failure may be thrown there,
    /// and fails the write all the same.
    func update<Record: StoredRecord & Identifiable<Int64>>(_ record: Record) throws
    /// Deletes the row with this `id`; returns whether there was one.
    func delete<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws -> Bool
    /// Whether a user has this handle.
    func handleTaken(_ handle: String) throws -> Bool
    /// Inserts the edge unless it exists; returns whether it was inserted.
    func insertFollow(_ follow: Follow) throws -> Bool
    /// Deletes the edge; returns whether it existed.
    func deleteFollow(follower: Int64, followee: Int64) throws -> Bool
    /// Records that `user` likes `video` unless it is recorded; returns whether it was inserted.
    func insertLike(video: Int64, user: Int64, createdAt: Int64) throws -> Bool
    /// Deletes that like; returns whether it existed.
    func deleteLike(video: Int64, user: Int64) throws -> Bool
    /// Carries out a staged write's step (see ``WriteStep``) and returns what it found. Any
    /// answer its write refuses must make the write throw, which rolls back whatever the step
    /// wrote. The default does it with the operations above, one after the other; a backend may
    /// do it in one statement that writes only when the checks pass (PostgreSQL).
    func perform(_ step: WriteStep) throws -> StepAnswer
}

/// What a ``WriteStep/insertFollow(_:)`` found, checked in this order.
public enum FollowInsert: Sendable, Hashable {
    case followerMissing
    case followeeMissing
    /// The edge exists already.
    case exists
    case inserted
}

/// What a ``WriteStep/changeLike(video:user:liking:at:)`` found, checked in this order.
public enum LikeChange: Sendable, Hashable {
    case videoMissing
    case userMissing
    /// The count would overflow.
    case overflow
    /// The user likes the video already (liking), or does not (unliking).
    case refused
    /// Done: the video as it is now.
    case changed(Video)
}

extension FeedStorage {
    public func changesWithRows(after sequence: Int64, limit: Int) throws(FeedStoreError) -> ChangesWithRows {
        try reading { reader throws(FeedStoreError) in
            let entries = try reader.changes(after: sequence, limit: limit)
            let named = ChangeEntry.namedRows(entries)
            return ChangesWithRows(
                entries: entries, rows: try reader.changedRows(users: named.users, videos: named.videos, edges: named.edges),
                changeVersion: try reader.changeVersion())
        }
    }

    /// The snapshot `id` saved for `viewer`, or nil (never saved, or pruned).
    public func snapshot(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        try reading { reader throws(FeedStoreError) in try reader.snapshot(id: id, viewer: viewer) }
    }

    /// The snapshot base `id` kept for `viewer`, or nil (never kept, or expired).
    public func snapshotBase(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        try reading { reader throws(FeedStoreError) in try reader.snapshotBase(id: id, viewer: viewer) }
    }

    /// ``persistSnapshots(upserts:deletions:prune:keepPerViewer:bases:)`` without bases.
    public func persistSnapshots(
        upserts: [StoredSnapshot], deletions: [(viewer: Int64, id: String)], prune: Set<Int64>, keepPerViewer: Int
    ) throws(FeedStoreError) {
        try persistSnapshots(upserts: upserts, deletions: deletions, prune: prune, keepPerViewer: keepPerViewer, bases: [])
    }

    /// Row counts of every table; for start-up and operators, not for requests.
    public func counts() throws(FeedStoreError) -> StoreCounts {
        try reading { reader throws(FeedStoreError) in try reader.counts() }
    }

    /// Whether the store holds no users, videos or ads (seed on first start only when true).
    public func isEmpty() throws(FeedStoreError) -> Bool {
        try reading { reader throws(FeedStoreError) in try reader.isEmpty() }
    }

    /// The change version as stored now (a read, unlike the cached ``changeVersion``).
    public func storedChangeVersion() throws(FeedStoreError) -> Int64 {
        try reading { reader throws(FeedStoreError) in try reader.changeVersion() }
    }

    /// ``seed(_:progress:)`` of the server's default demo, without progress.
    @discardableResult
    public func seed(_ demo: DemoSeed = DemoSeed()) throws(FeedStoreError) -> StoreCounts {
        try seed(demo, progress: nil)
    }
}
