/// The group transaction a backend has open on the current thread (see
/// ``FeedStorage/writeGroup(_:)``): the connection its writes join, the last change version one
/// of them took, and the failure that broke the transaction, if one did.
///
/// A task-local binds it per thread outside Swift concurrency, so a write made on another
/// thread, or on another store, never joins it.
package final class OpenWriteGroup<Connection>: @unchecked Sendable {
    // @unchecked: used only on the thread that opened it, inside its transaction.

    private let store: ObjectIdentifier
    /// What the group's writes run on: the backend's connection, or its own record of the
    /// group's transaction (PostgreSQL keeps the entries it appends at the commit there).
    package let connection: Connection
    /// The change version of the group's last write that stayed.
    package var lastVersion: Int64?
    /// Set when the transaction can no longer commit (a rollback to a savepoint failed).
    package var broken: (any Error)?

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
