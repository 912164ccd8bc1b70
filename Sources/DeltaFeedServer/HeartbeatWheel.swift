/// Stream ids in one-second buckets by when their heartbeat falls due, for a scan once a second
/// that looks only at the streams due (the thread's). A bucket is reused as the wheel turns: it
/// holds only seconds from the last scan to one interval ahead.
package struct HeartbeatWheel {
    private var buckets: [[UInt64]]
    private let start: ContinuousClock.Instant
    /// The first second (from `start`) the scans have not taken yet.
    private var nextSecond: Int64 = 0

    package init(start: ContinuousClock.Instant, interval: Duration) {
        self.start = start
        // A stream is filed at most one interval past the last scan: the seconds from that scan
        // to then, and one more for a scan that runs late.
        let seconds = Int(interval.components.seconds) + (interval.components.attoseconds > 0 ? 1 : 0)
        buckets = Array(repeating: [], count: max(1, seconds) + 2)
    }

    private func second(of instant: ContinuousClock.Instant) -> Int64 {
        instant < start ? 0 : (instant - start).components.seconds
    }

    /// Files `id` under `due`'s second, or the next second not taken yet if that one is.
    package mutating func file(_ id: UInt64, due: ContinuousClock.Instant) {
        let second = max(self.second(of: due), nextSecond)
        buckets[Int(second % Int64(buckets.count))].append(id)
    }

    /// The ids filed under every second up to `now`'s, taken out.
    package mutating func takeDue(through now: ContinuousClock.Instant) -> [UInt64] {
        let last = second(of: now)
        guard last >= nextSecond else { return [] }
        var due: [UInt64] = []
        // A scan late by more than the wheel's turn takes each bucket once.
        for second in max(nextSecond, last - Int64(buckets.count) + 1)...last {
            let index = Int(second % Int64(buckets.count))
            due.append(contentsOf: buckets[index])
            buckets[index].removeAll(keepingCapacity: true)
        }
        nextSecond = last + 1
        return due
    }
}
