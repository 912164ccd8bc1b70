/// The three shapes a delta can take.
public enum DeltaFormat: String, Sendable, CaseIterable, Codable {
    /// For UIKit: apply in one `performBatchUpdates` (deletes/reloads at old index paths,
    /// inserts at new ones, moves old → new).
    case batch
    /// For Android's `ListUpdateCallback` and the like: steps applied in order.
    case sequential
    /// RFC 6902 operations on the feed's JSON document.
    case jsonpatch
}
