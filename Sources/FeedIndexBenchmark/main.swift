// `swift run -c release FeedIndexBenchmark [--db PATH] [--users N --videos N] [--streams "N ..."]`
//
// Loads the feed index from a store (seeding a temporary demo store unless --db is given) and
// times what the read path does when a feed is not cached: composing one viewer's feed from the
// index and rendering its page. The page cache is disabled (its budget is 0), so every call
// composes; items are rendered once per version and reused, as in the server. Every viewer is
// asked in turn, so no answer repeats back to back. Prints the index load time and RSS, and the
// median / p99 / max of one composition.
//
// Then, for each N of --streams (default "10000 100000"), what the live streams' interest index
// (InterestIndex: which held pages a change may touch) costs as N streams open, have their pages
// moved to other interests (a page shifted by a new video, its region's popular videos changed)
// and close: N pages as scripts/bench-live's fan-out holds them (viewer 1 + i % 2,000, limit
// 10 + i / 2,000), each step timed over all N, in µs per stream. Every step should cost about
// the same per stream whatever N is.

import FeedIndex
import FeedService
import FeedStore
import Foundation
import SQLiteStore

func residentMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kib = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kib / 1024
}

func argument(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

let store: SQLiteFeedStore
if let path = argument("--db") {
    store = try SQLiteFeedStore(path: path)
} else {
    let users = Int(argument("--users") ?? "") ?? 2_000
    let videos = Int(argument("--videos") ?? "") ?? 50_000
    store = try SQLiteFeedStore.temporary()
    print("seeding a temporary store: \(users) users, \(videos) videos, 40 ads")
    try store.seed(DemoSeed(users: users, videos: videos, ads: 40, seed: 42))
}
let rssBefore = residentMiB()
let clock = ContinuousClock()
let loadStart = clock.now
let index = try FeedIndex(loadingFrom: store)
let loadTime = loadStart.duration(to: clock.now)
let counts = index.counts
print(
    "index: \(counts.users) users, \(counts.videos) videos, \(counts.follows) follows; loaded in \(loadTime); RSS \(String(format: "%.0f", rssBefore)) → \(String(format: "%.0f", residentMiB())) MiB"
)

let service = try FeedService(store: store, index: index, options: FeedService.Options(pageCacheBytes: 0))
let viewers = min(2_000, counts.users)
let parameters = FeedParameters()
// Warm-up: one pass renders every item once (as a running server has).
for viewer in 1...viewers { _ = try? service.feed(viewer: Int64(viewer), parameters: parameters) }
var samples: [Double] = []
samples.reserveCapacity(viewers * 3)
for _ in 0..<3 {
    for viewer in 1...viewers {
        let start = clock.now
        _ = try service.feed(viewer: Int64(viewer), parameters: parameters)
        let elapsed = start.duration(to: clock.now)
        samples.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
    }
}
samples.sort()
let sorted = samples
func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
print("compose one feed from the index (\(samples.count) compositions over \(viewers) viewers, page cache off):")
print(String(format: "| median | p99 | max |\n|---|---|---|\n| %.1f µs | %.1f µs | %.1f µs |", percentile(0.5), percentile(0.99), samples.last ?? 0))
print("RSS after: \(String(format: "%.0f", residentMiB())) MiB")

let streamCounts = (argument("--streams") ?? "10000 100000").split(separator: " ").compactMap { Int($0) }
// Each page's interests once, by limit and viewer (composing them is not the index's cost).
var shapes: [Int: PageInterests] = [:]
print("the live streams' interest index, µs per stream:")
print("| streams | open (register) | move (other interests) | close (remove) |\n|---|---|---|---|")
for streams in streamCounts {
    // The pages' interests first, outside the timing: stream i shows viewer 1 + i % 2,000's page
    // at limit 10 + i / 2,000, then at one more (moved).
    var opened: [PageInterests] = []
    var moved: [PageInterests] = []
    for stream in 0..<streams {
        let viewer = 1 + stream % viewers
        let limit = 10 + (stream / viewers) % 40
        for extra in 0...1 {
            let key = (limit + extra) * 1_000_000 + viewer
            if shapes[key] == nil {
                shapes[key] = try service.interests(viewer: Int64(viewer), parameters: FeedParameters(limit: limit + extra))
            }
            if extra == 0 { opened.append(shapes[key]!) } else { moved.append(shapes[key]!) }
        }
    }
    var interestIndex = InterestIndex<Int>()
    func timed(_ body: () -> Void) -> Double {
        let start = clock.now
        body()
        let elapsed = start.duration(to: clock.now)
        return (Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6) / Double(streams)
    }
    let open = timed { for stream in 0..<streams { interestIndex.update(stream, opened[stream]) } }
    let move = timed { for stream in 0..<streams { interestIndex.update(stream, moved[stream]) } }
    let close = timed { for stream in 0..<streams { interestIndex.remove(stream) } }
    print(String(format: "| %d | %.2f | %.2f | %.2f |", streams, open, move, close))
}
