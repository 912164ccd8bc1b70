package import FeedStore
import GRDB

extension FeedStoreError {
    /// Wraps any error thrown below the SQLite store's public surface: SQLite's own result code
    /// becomes the backend-neutral ``StorageFailure`` and stays in the message.
    init(wrapping error: any Error) {
        switch error {
        case let error as FeedStoreError:
            self = error
        case let error as DatabaseError:
            let message = "\(error.extendedResultCode) (\(error.extendedResultCode.rawValue)): \(error.message ?? "no message")"
            if error.resultCode == .SQLITE_CONSTRAINT {
                // Validation runs before every write, so reaching a constraint means a rule the
                // checks do not mirror (or a race with another process). Report it as a conflict.
                self = .conflict(field: "database", reason: error.message ?? "\(error.resultCode)")
            } else {
                self = .storage(code: StorageFailure(sqlite: error.resultCode), message: message)
            }
        default:
            self = .storage(code: .other, message: String(describing: error))
        }
    }
}

extension StorageFailure {
    /// The kind of failure a primary SQLite result code names.
    init(sqlite code: ResultCode) {
        switch code {
        case .SQLITE_BUSY, .SQLITE_LOCKED: self = .busy
        case .SQLITE_FULL: self = .full
        case .SQLITE_IOERR, .SQLITE_CANTOPEN: self = .io
        case .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_SCHEMA, .SQLITE_MISMATCH: self = .corrupt
        default: self = .other
        }
    }
}

/// Runs `body` and converts whatever it throws into a ``FeedStore/FeedStoreError``.
@inline(__always)
package func mappingErrors<T>(_ body: () throws -> T) throws(FeedStoreError) -> T {
    do {
        return try body()
    } catch {
        throw FeedStoreError(wrapping: error)
    }
}
