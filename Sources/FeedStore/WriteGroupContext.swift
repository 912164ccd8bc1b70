/// The group transaction a backend has open on the current thread (see
/// ``FeedStorage/writeGroup(_:)``): the connection its writes join, the last change version one
/// of them took, and the failure that broke the transaction, if one did.
///
/// A task-local binds it per thread outside Swift concurrency, so a write made on another
/// thread, or on another store, never joins it.
package final class OpenWriteGroup<Connection>: @unchecked Sendable {
    // @unchecked: used only on the thread that opened it, inside its transaction.

    private let store: ObjectIdentifier
    /// The connection the group's transaction runs on.
    package let connection: Connection
    /// The change version of the group's last write that stayed.
    package var lastVersion: Int64?
    /// Set when the transaction can no longer commit (a rollback to a savepoint failed).
    package var broken: (any Error)?
    /// The change version before the group's first write (a backend that numbers the group's
    /// writes itself, holding the lock that orders writers, starts from it).
    package var baseVersion: Int64 = 0
    /// Change-log entries of the writes that stayed, for a backend that appends them all at once
    /// before the commit (PostgreSQL: one statement instead of one per write).
    package var deferredChanges: [DeferredChange] = []
    /// Whether a savepoint is open that the next write must release before taking its own.
    package var savepointOpen = false

    private init(store: AnyObject, connection: Connection) {
        self.store = ObjectIdentifier(store)
        self.connection = connection
    }

    /// The group `store` has open on this thread, if any.
    package static func current(of store: AnyObject) -> OpenWriteGroup? {
        guard let group = OpenWriteGroups.open as? OpenWriteGroup, group.store == ObjectIdentifier(store) else { return nil }
        return group
    }

    /// Opens a group of `store` on `connection` for the duration of `body`, and returns it.
    package static func run(store: AnyObject, connection: Connection, _ body: (OpenWriteGroup) throws -> Void) rethrows -> OpenWriteGroup {
        let group = OpenWriteGroup(store: store, connection: connection)
        try OpenWriteGroups.$open.withValue(group) { try body(group) }
        return group
    }
}

/// Where ``OpenWriteGroup`` binds the open group (a generic type cannot hold the task-local).
private enum OpenWriteGroups {
    @TaskLocal static var open: (any Sendable)?
}

/// A change-log entry of a write inside a group, appended when the group commits.
package struct DeferredChange: Sendable {
    package var version: Int64
    package var change: PendingChange
    package var committedAt: Int64
    package var touchesAds: Bool

    package init(version: Int64, change: PendingChange, committedAt: Int64, touchesAds: Bool) {
        self.version = version
        self.change = change
        self.committedAt = committedAt
        self.touchesAds = touchesAds
    }
}
