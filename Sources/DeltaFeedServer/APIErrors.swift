import EventHTTP
import FeedService
import FeedStore

/// How the service's and the store's errors look to a client. Storage failures say nothing of
/// SQLite (they are logged by the worker as 5xx).
extension HTTPError {
    init(_ error: FeedError) {
        switch error {
        case .viewerNotFound(let id):
            self = .notFound("No user with id \(id).")
        case .snapshotUnknown(let id):
            self = HTTPError(
                status: 410, code: "snapshot_expired",
                message: "Snapshot \(id) is unknown for this viewer or has expired; fetch the feed again.")
        case .storage(let error):
            self = HTTPError(error)
        }
    }

    init(_ error: FeedStoreError) {
        switch error {
        case .invalid(let field, let reason):
            self = HTTPError(status: 422, code: "invalid_field", message: "\(field): \(reason).")
        case .notFound(let entity, let id):
            self = .notFound("No \(entity.rawValue) with id \(id).")
        case .conflict(let field, let reason):
            self = HTTPError(status: 409, code: "conflict", message: "\(field): \(reason).")
        case .storage, .unavailable:
            self = HTTPError(
                status: 503, code: "storage_unavailable", message: "The store could not answer; retry shortly.",
                headers: [("Retry-After", "1")])
        }
    }
}

/// Runs `body`, turning service and store errors into ``EventHTTP/HTTPError``s.
func translatingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as FeedError {
        throw HTTPError(error)
    } catch let error as FeedStoreError {
        throw HTTPError(error)
    }
}
