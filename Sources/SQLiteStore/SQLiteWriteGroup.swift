public import FeedStore
import GRDB

// Group commit on SQLite: one write transaction on the pool's writer connection holds many
// content writes, each in a savepoint (see `FeedStorage.writeGroup(_:)`).

extension SQLiteFeedStore {
    /// The group this store has open on this thread, if any.
    var currentGroup: OpenWriteGroup<Database>? { OpenWriteGroup.current(of: self) }

    public func writeGroup(_ body: () -> Void) throws(FeedStoreError) {
        if currentGroup != nil {  // already inside one: the writes join it
            body()
            return
        }
        let group = try mappingErrors {
            try pool.write { db in OpenWriteGroup.run(store: self, connection: db) { _ in body() } }
        }
        // Raised after the commit, never before: a reader keyed on the version must find the data.
        if let last = group.lastVersion { cachedChangeVersion.raise(to: last) }
    }

    /// A write inside the open group: its own savepoint, rolled back alone when `body` throws.
    func writeInGroup<T>(
        _ group: OpenWriteGroup<Database>, touchesAds: Bool, change: (T) -> PendingChange, _ body: (Database) throws -> T
    ) throws(FeedStoreError) -> T {
        let db = group.connection
        var result: (value: T, version: Int64)?
        try mappingErrors {
            try db.inSavepoint {
                result = try appendingChange(db, touchesAds: touchesAds, committedAt: now, change: change, body)
                return .commit
            }
        }
        guard let result else { throw FeedStoreError.storage(code: .corrupt, message: "a grouped write returned nothing") }
        group.lastVersion = result.version
        return result.value
    }
}
