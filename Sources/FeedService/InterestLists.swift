import Algorithms

/// The slots registered under one id of an ``InterestIndex`` (the pages that show a video, say):
/// an array while they are few, a set once they are many, so that taking one slot out costs the
/// same whether a handful of pages show the id or a hundred thousand do.
///
/// A popular video is on nearly every page. With one array, a page that left (a live stream
/// closed, a page composed again) searched it for its slot: closing 10,000 streams whose pages
/// shared a video scanned about 50 million slots (6 % of the live thread in a fan-out run), and
/// the cost grew with the square of the streams.
struct SlotList: Sendable {
    /// The slots while there are at most ``largeAt``; empty once `large` holds them.
    private var small: [Int32] = []
    private var large: Set<Int32>?

    /// Past this many slots the list becomes a set: searching up to this many in an array costs
    /// less than a set's removal on memory out of the caches. (512 opened and closed streams
    /// about 10 % faster in FeedIndexBenchmark, but pages moved by new videos search their
    /// lists on every move, and the live streams' mixed phase at 500 writes/s ran slower.)
    static let largeAt = 64

    var isEmpty: Bool { large?.isEmpty ?? small.isEmpty }

    /// Adds `slot`, which the list must not hold.
    mutating func insert(_ slot: Int32) {
        if large != nil {
            large!.insert(slot)
        } else if small.count < Self.largeAt {
            small.append(slot)
        } else {
            var set = Set(small)
            set.insert(slot)
            large = set
            small = []
        }
    }

    /// Takes `slot` out, if the list holds it.
    mutating func remove(_ slot: Int32) {
        if large != nil {
            large!.remove(slot)
        } else if let position = small.firstIndex(of: slot) {
            small.swapAt(position, small.count - 1)
            small.removeLast()
        }
    }

    /// Calls `body` with every slot, in no order.
    func forEach(_ body: (Int32) -> Void) {
        if let large {
            for slot in large { body(slot) }
        } else {
            for slot in small { body(slot) }
        }
    }
}

/// Slots by a key (a page's popularity threshold, its carousel's floor), in ascending order of
/// key, then slot, that finds the slots whose key lies after a value and takes one in or out in
/// time that does not grow with their number: sorted runs of at most ``runLength`` entries,
/// one after another.
///
/// One sorted array moved every entry after the one inserted or removed: with a threshold for
/// each of 100,000 live streams' pages, about 2 MB per stream opened, closed or moved by a like.
struct SortedSlots<Key: Comparable & Sendable>: Sendable {
    typealias Entry = (key: Key, slot: Int32)

    /// Non-empty runs, each sorted, each entirely before the next.
    private var runs: [[Entry]] = []

    /// A run that grows past this is split in two.
    static var runLength: Int { 256 }

    private static func precedes(_ left: Entry, _ right: (Key, Int32)) -> Bool {
        (left.key, left.slot) < right
    }

    /// The run an entry ordered at `entry` belongs in: the first whose last entry is not before
    /// it (the last run when none is).
    private func run(for entry: (Key, Int32)) -> Int {
        let index = runs.partitioningIndex { !Self.precedes($0[$0.count - 1], entry) }
        return Swift.min(index, runs.count - 1)
    }

    /// Adds `slot` at `key`.
    mutating func insert(_ slot: Int32, key: Key) {
        guard !runs.isEmpty else {
            runs.append([(key, slot)])
            return
        }
        let index = run(for: (key, slot))
        let position = runs[index].partitioningIndex { !Self.precedes($0, (key, slot)) }
        runs[index].insert((key, slot), at: position)
        if runs[index].count > Self.runLength {
            let half = runs[index].count / 2
            let tail = Array(runs[index][half...])
            runs[index].removeSubrange(half...)
            runs.insert(tail, at: index + 1)
        }
    }

    /// Takes out `slot` at `key`, if it is there.
    mutating func remove(_ slot: Int32, key: Key) {
        guard !runs.isEmpty else { return }
        let index = run(for: (key, slot))
        let position = runs[index].partitioningIndex { !Self.precedes($0, (key, slot)) }
        guard position < runs[index].count, runs[index][position].slot == slot, runs[index][position].key == key else { return }
        runs[index].remove(at: position)
        if runs[index].isEmpty { runs.remove(at: index) }
    }

    /// Calls `body` with the entry of every slot whose key comes after `value`, in order.
    func forEach(after value: Key, _ body: (Entry) -> Void) {
        var index = runs.partitioningIndex { value < $0[$0.count - 1].key }
        guard index < runs.count else { return }
        var position = runs[index].partitioningIndex { value < $0.key }
        while index < runs.count {
            for entry in runs[index][position...] { body(entry) }
            index += 1
            position = 0
        }
    }
}
