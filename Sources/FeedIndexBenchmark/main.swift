// `swift run -c release FeedIndexBenchmark [--db PATH] [--users N --videos N]`
//
// Loads the feed index from a store (seeding a temporary demo store unless --db is given) and
// times what the read path does when a feed is not cached: composing one viewer's feed from the
// index and rendering its page. The page cache is disabled (its budget is 0), so every call
// composes; items are rendered once per version and reused, as in the server. Every viewer is
// asked in turn, so no answer repeats back to back. Prints the index load time and RSS, and the
// median / p99 / max of one composition.

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
