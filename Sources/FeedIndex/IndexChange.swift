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
///
/// Every change appended gets an ordinal, counting from 0 and never reused (not even across a
/// ``reset(to:)``), so a reader that noted some changes by ordinal can fetch them again while
/// the ring still holds them (``change(ordinal:)``).
package struct ChangeRing {
    private var entries: [(sequence: Int64, change: IndexChange)?]
    private var next = 0
    private var stored = 0
    /// Every change after this sequence number is in the ring.
    private(set) var coveredAfter: Int64
    /// The ordinal the next change appended gets: how many were ever appended.
    package private(set) var nextOrdinal: Int64 = 0
    /// The ordinal of the change stored at index 0 of `entries` (or that will be).
    private var baseOrdinal: Int64 = 0

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
        nextOrdinal += 1
    }

    /// Forgets everything up to `sequence` (after a reload).
    package mutating func reset(to sequence: Int64) {
        entries = Array(repeating: nil, count: entries.count)
        next = 0
        stored = 0
        coveredAfter = sequence
        baseOrdinal = nextOrdinal
    }

    /// The ordinal of the oldest change the ring still holds (``nextOrdinal`` when it holds none).
    package var oldestOrdinal: Int64 { nextOrdinal - Int64(stored) }

    /// The change numbered `ordinal` with its sequence number, or nil when the ring no longer
    /// holds it (or it was never appended).
    package func change(ordinal: Int64) -> (sequence: Int64, change: IndexChange)? {
        guard ordinal >= oldestOrdinal, ordinal < nextOrdinal else { return nil }
        return entries[Int((ordinal - baseOrdinal) % Int64(entries.count))]
    }

    /// The changes with a sequence number greater than `sequence` and at most `last` (all of
    /// them when nil), oldest first, or nil when some of them were already evicted.
    package func changes(after sequence: Int64, through last: Int64? = nil) -> [IndexChange]? {
        guard sequence >= coveredAfter else { return nil }
        var result: [IndexChange] = []
        // Walk back from the newest until an older sequence number.
        var index = next
        for _ in 0..<stored {
            index = (index - 1 + entries.count) % entries.count
            guard let entry = entries[index], entry.sequence > sequence else { break }
            if let last, entry.sequence > last { continue }
            result.append(entry.change)
        }
        return result.reversed()
    }
}
