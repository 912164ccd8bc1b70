public import FeedStore
import Synchronization

/// Everything a feed is composed from, in memory: users, videos (per author newest first, and
/// most liked first), the follow graph both ways, the active ads and their epoch. Loaded from
/// the store once, then kept current by applying the store's change log (``catchUp(from:)``),
/// so composing a feed runs no SQL.
///
/// Thread-safe. Reads (``read(_:)``) run concurrently under a reader lock and hold it only
/// while they select records; applying changes reads the store first, outside the lock, then
/// takes the writer lock just to swap the records in, so a reader never waits on storage.
public final class FeedIndex: @unchecked Sendable {
    // @unchecked: `state` and `ring` are guarded by `lock` (readers shared, the applier
    // exclusive); only the applier, serialised by `applying`, ever mutates them.
    private let lock = ReadWriteLock()
    private var state: IndexState
    private var ring: ChangeRing
    private let applying = Mutex(())
    private let published: Atomic<Int64>

    /// How many changes the index remembers for ``changes(after:)``.
    public static let defaultChangeMemory = 65_536

    /// Loads the index from `store` in one read transaction.
    ///
    /// - Parameters:
    ///   - store: where to load from.
    ///   - changeMemory: how many recent changes to remember for cached feeds.
    ///   - progress: called now and then with the rows loaded so far and the total.
    /// - Throws: ``FeedStore/FeedStoreError`` from the store.
    public init(
        loadingFrom store: any FeedStorage, changeMemory: Int = FeedIndex.defaultChangeMemory,
        progress: ((_ loaded: Int, _ total: Int) -> Void)? = nil
    ) throws(FeedStoreError) {
        let state = try FeedIndex.load(from: store, progress: progress)
        self.state = state
        self.ring = ChangeRing(capacity: changeMemory, startingAt: state.sequence)
        self.published = Atomic(state.sequence)
    }

    /// The change-log position the index reflects. Lock-free.
    public var sequence: Int64 { published.load(ordering: .acquiring) }

    /// Runs `body` with a consistent view of the index, under the reader lock. Keep it short:
    /// select what you need and render outside.
    public func read<T, Failure: Error>(_ body: (IndexView) throws(Failure) -> T) throws(Failure) -> T {
        try lock.withReadLock { () throws(Failure) -> T in try body(IndexView(state: state, ring: ring)) }
    }

    /// The changes applied after `sequence`, oldest first, or nil when the index no longer
    /// remembers all of them (the caller must assume anything changed).
    public func changes(after sequence: Int64) -> [IndexChange]? {
        lock.withReadLock { ring.changes(after: sequence) }
    }

    /// Counts of what the index holds.
    public var counts: (users: Int, videos: Int, follows: Int, ads: Int) {
        read { view in (view.state.users.count, view.state.videos.count, view.state.followees.values.reduce(0) { $0 + $1.count }, view.state.ads.ads.count) }
    }

    // MARK: - Applying the change log

    /// Applies every change-log entry committed after ``sequence``: reads the rows they name in
    /// one read transaction, then swaps them in under the writer lock. Reloads everything when
    /// the log says so (seeding) or no longer holds the entries needed. Serialised: concurrent
    /// calls apply each entry once.
    ///
    /// Call it after each write (on the writer's thread, before answering, so a client reads
    /// its own writes) and now and then from a background thread (writes by other processes).
    ///
    /// - Parameter target: when given, nothing is read if the index already holds every entry
    ///   up to `target` (a concurrent catch-up, waited for, may have brought it there): a
    ///   writer that needs its own writes, or a notification of entries already applied.
    /// - Returns: how many entries were applied.
    /// - Throws: ``FeedStore/FeedStoreError`` from the store; the index is unchanged then.
    @discardableResult
    public func catchUp(from store: any FeedStorage, reaching target: Int64? = nil) throws(FeedStoreError) -> Int {
        try applying.withLock { _ throws(FeedStoreError) -> Int in
            if let target, state.sequence >= target { return 0 }
            var applied = 0
            while true {
                let batch = try readBatch(from: store)
                switch batch {
                case .upToDate:
                    return applied
                case .reload(let fresh):
                    install(fresh)
                    return applied + 1
                case .changes(let plan):
                    apply(plan)
                    applied += plan.entryCount
                    if !plan.more { return applied }
                }
            }
        }
    }

    /// Entries read per transaction when catching up.
    static let batchSize = 2_000

    private enum Batch {
        case upToDate
        case reload(IndexState)
        case changes(CatchUpPlan)
    }

    /// What a batch of entries touched, with the rows as they are now.
    struct CatchUpPlan {
        var lastSequence: Int64
        var entryCount: Int
        var more: Bool
        var users: [Int64: User?] = [:]
        var videos: [Int64: Video?] = [:]
        var edges: [FollowEdge: Bool] = [:]
        var ads: AdInventory?
    }

    /// Reads the next entries and the current rows they name. Runs under `applying`, so it may
    /// read `state` without the lock: nothing else mutates it.
    ///
    /// Most batches are read at once (``FeedStore/FeedStorage/changesWithRows(after:limit:)``,
    /// one round trip on PostgreSQL); a batch that needs the index's own state to know what it
    /// touched (a deleted user's videos and edges), the ads, or a reload is read again in one
    /// read transaction that does all of it.
    private func readBatch(from store: any FeedStorage) throws(FeedStoreError) -> Batch {
        let current = state
        let read = try store.changesWithRows(after: current.sequence, limit: FeedIndex.batchSize)
        if read.entries.isEmpty && read.changeVersion <= current.sequence { return .upToDate }
        let namedByTheirRows = read.entries.allSatisfy { $0.kind != .userDeleted && $0.kind != .adChanged && $0.kind != .reset }
        if let first = read.entries.first, first.sequence == current.sequence + 1, namedByTheirRows {
            return .changes(Self.plan(for: read.entries, touching: Self.touched(by: read.entries, in: current), rows: read.rows))
        }
        do {
            return try store.read { reader throws -> Batch in
                let entries = try reader.changes(after: current.sequence, limit: FeedIndex.batchSize)
                guard let first = entries.first else {
                    // Nothing logged after us; a store whose version moved without entries
                    // (a file written by an older deltafeed) is reloaded.
                    let version = try reader.changeVersion()
                    return version > current.sequence ? .reload(try FeedIndex.load(from: reader, progress: nil)) : .upToDate
                }
                if first.sequence != current.sequence + 1 || entries.contains(where: { $0.kind == .reset }) {
                    return .reload(try FeedIndex.load(from: reader, progress: nil))
                }
                let touched = Self.touched(by: entries, in: current)
                var plan = Self.plan(
                    for: entries, touching: touched, rows: try reader.changedRows(users: touched.users, videos: touched.videos, edges: touched.edges))
                if touched.ads { plan.ads = try reader.activeAds() }
                return .changes(plan)
            }
        } catch let error as FeedStoreError {
            throw error
        } catch {
            throw .storage(code: .other, message: "\(error)")
        }
    }

    /// What `entries` touch: the rows they name (``FeedStore/ChangeEntry/namedRows(_:)``), a
    /// deleted user's videos and edges as `current` holds them (the delete cascaded: the videos
    /// and edges went with the user, and the counts of everyone on the other end of an edge
    /// moved), and whether the ads changed.
    private static func touched(
        by entries: [ChangeEntry], in current: IndexState
    ) -> (users: Set<Int64>, videos: Set<Int64>, edges: Set<FollowEdge>, ads: Bool) {
        var (users, videos, edges) = ChangeEntry.namedRows(entries)
        var ads = false
        for entry in entries {
            switch entry.kind {
            case .userDeleted:
                for key in current.timelines[entry.key] ?? [] { videos.insert(key.id) }
                for followee in current.followees[entry.key] ?? [] {
                    edges.insert(FollowEdge(follower: entry.key, followee: followee))
                    users.insert(followee)
                }
                for follower in current.followers[entry.key] ?? [] {
                    edges.insert(FollowEdge(follower: follower, followee: entry.key))
                    users.insert(follower)
                }
            case .adChanged:
                ads = true
            default:
                break
            }
        }
        return (users, videos, edges, ads)
    }

    /// The plan that applies `entries`, which touch `touched`, with `rows` as they are now (a row
    /// missing from them is gone).
    private static func plan(
        for entries: [ChangeEntry], touching touched: (users: Set<Int64>, videos: Set<Int64>, edges: Set<FollowEdge>, ads: Bool), rows: ChangedRows
    ) -> CatchUpPlan {
        var plan = CatchUpPlan(
            lastSequence: entries[entries.count - 1].sequence, entryCount: entries.count, more: entries.count == FeedIndex.batchSize)
        for id in touched.users { plan.users[id] = rows.users[id] }
        for id in touched.videos { plan.videos[id] = rows.videos[id] }
        for edge in touched.edges { plan.edges[edge] = rows.follows.contains(edge) }
        return plan
    }

    private func apply(_ plan: CatchUpPlan) {
        let revision = plan.lastSequence
        lock.withWriteLock {
            var changes: [IndexChange] = []
            // Edges and videos before users, so a deleted user's dependants go first.
            for (edge, exists) in plan.edges {
                if let change = state.setFollow(edge.follower, edge.followee, exists: exists) { changes.append(change) }
            }
            for (id, video) in plan.videos {
                let change = video.map { state.put($0, revision: revision) } ?? state.removeVideo(id)
                if let change { changes.append(change) }
            }
            for (id, user) in plan.users {
                let change = user.map { state.put($0, revision: revision) } ?? state.removeUser(id)
                if let change { changes.append(change) }
            }
            if let ads = plan.ads, ads != state.ads {
                state.ads = ads
                changes.append(.ads)
            }
            state.sequence = plan.lastSequence
            for change in changes { ring.append(change, sequence: plan.lastSequence) }
            published.store(plan.lastSequence, ordering: .releasing)
        }
    }

    private func install(_ fresh: IndexState) {
        lock.withWriteLock {
            state = fresh
            ring.reset(to: fresh.sequence)
            published.store(fresh.sequence, ordering: .releasing)
        }
    }

    // MARK: - Loading

    private static func load(from store: any FeedStorage, progress: ((Int, Int) -> Void)?) throws(FeedStoreError) -> IndexState {
        do {
            return try store.read { reader in try load(from: reader, progress: progress) }
        } catch let error as FeedStoreError {
            throw error
        } catch {
            throw .storage(code: .other, message: "\(error)")
        }
    }

    /// Builds the whole index from one read transaction.
    static func load(from reader: any FeedStoreReader, progress: ((Int, Int) -> Void)?) throws(FeedStoreError) -> IndexState {
        var state = IndexState()
        state.sequence = try reader.changeVersion()
        let counts = try reader.counts()
        let total = counts.users + counts.videos + counts.follows
        var loaded = 0
        func step() {
            loaded += 1
            if loaded % 100_000 == 0 { progress?(loaded, total) }
        }
        let revision = state.sequence
        var rank: [FollowerRankKey] = []
        rank.reserveCapacity(counts.users)
        state.users.reserveCapacity(counts.users)
        try reader.forEach(User.self) { user in
            state.users[user.id] = Revised(value: user, revision: revision)
            rank.append(FollowerRankKey(user))
            step()
        }
        rank.sort()
        state.followerRank = SortedKeys(sorted: rank)

        var popular: [PopularityKey] = []
        popular.reserveCapacity(counts.videos)
        state.videos.reserveCapacity(counts.videos)
        try reader.forEach(Video.self) { video in
            state.videos[video.id] = Revised(value: video, revision: revision)
            state.timelines[video.authorID, default: []].append(TimelineKey(video))
            popular.append(PopularityKey(video))
            step()
        }
        popular.sort()
        state.popularity = SortedKeys(sorted: popular)
        for author in Array(state.timelines.keys) {
            state.timelines[author]!.sort()
        }
        try reader.forEachFollow { follower, followee in
            state.followees[follower, default: []].insert(followee)
            state.followers[followee, default: []].insert(follower)
            step()
        }
        state.ads = try reader.activeAds()
        progress?(total, total)
        return state
    }
}
