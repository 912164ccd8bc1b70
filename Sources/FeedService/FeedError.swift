public import FeedStore

/// What can go wrong answering a feed or delta request, in the caller's terms.
public enum FeedError: Error, Sendable, Equatable {
    /// No user with this id.
    case viewerNotFound(Int64)
    /// The snapshot is unknown to this viewer: never issued, issued to someone else, or expired.
    case snapshotUnknown(String)
    /// The store failed.
    case storage(FeedStoreError)
}
