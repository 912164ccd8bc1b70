/// What applying change-log entries did to the index, one fact per touched record, in the terms
/// a cached feed needs to decide whether it is still current.
public enum IndexChange: Sendable, Hashable {
    /// A video appeared (`before == nil`), disappeared (`after == nil`) or changed (any field;
    /// both keys given, equal when the like count did not move).
    case video(id: Int64, author: Int64, before: PopularityKey?, after: PopularityKey?)
    /// A user appeared, disappeared or changed. The keys carry the follower count before and
    /// after; `profileChanged` says whether what a feed shows of every user (handle, display
    /// name, avatar) changed, as opposed to only the counts.
    case user(id: Int64, before: FollowerRankKey?, after: FollowerRankKey?, profileChanged: Bool)
    /// A follow edge appeared or disappeared.
    case follow(follower: Int64, followee: Int64, added: Bool)
    /// The ad inventory or its epoch changed.
    case ads
    /// Everything may have changed (a reload).
    case reset
}

/// The newest changes applied to the index, with their sequence numbers, in a ring of fixed
/// size: enough to tell a cached feed what happened since it was composed, or that too much
/// did (then it is recomposed).
package struct ChangeRing {
    private var entries: [(sequence: Int64, change: IndexChange)?]
    private var next = 0
    private var stored = 0
    /// Every change after this sequence number is in the ring.
    private(set) var coveredAfter: Int64

    package init(capacity: Int, startingAt sequence: Int64) {
        entries = Array(repeating: nil, count: max(1, capacity))
        coveredAfter = sequence
    }

    package mutating func append(_ change: IndexChange, sequence: Int64) {
        if stored == entries.count, let evicted = entries[next] {
            coveredAfter = max(coveredAfter, evicted.sequence)
        } else {
            stored += 1
        }
        entries[next] = (sequence, change)
        next = (next + 1) % entries.count
    }

    /// Forgets everything up to `sequence` (after a reload).
    package mutating func reset(to sequence: Int64) {
        entries = Array(repeating: nil, count: entries.count)
        next = 0
        stored = 0
        coveredAfter = sequence
    }

    /// The changes with a sequence number greater than `sequence`, oldest first, or nil when
    /// some of them were already evicted.
    package func changes(after sequence: Int64) -> [IndexChange]? {
        guard sequence >= coveredAfter else { return nil }
        var result: [IndexChange] = []
        // Walk back from the newest until an older sequence number.
        var index = next
        for _ in 0..<stored {
            index = (index - 1 + entries.count) % entries.count
            guard let entry = entries[index], entry.sequence > sequence else { break }
            result.append(entry.change)
        }
        return result.reversed()
    }
}
