// `swift run --scratch-path .build-listdiff -c release ListDiffBenchmark [A B C D E] [--runs N]`
//
// Times IndexDiff from two lists through to the UIKit batch form, on the
// cases recorded in BENCHMARKS.md, and the extra cost of the sequential and
// JSON Patch forms. Elements are an Int identifier and an Int content; 10 %
// of the surviving elements get a new content. Data come from a seeded
// generator, so every run diffs the same lists.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListDiff

/// One list element: an identifier and a content.
struct Row: Diffable, Equatable {
  var id: Int
  var content: Int
  var diffIdentifier: Int { id }
}

/// SplitMix64: a small, seeded, good-enough generator.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

struct Case {
  var name: String
  var summary: String
  var old: [Row]
  var new: [Row]
  var runs: Int
}

/// Builds a case: `count` rows, the edit, then 10 % of the surviving rows
/// (those of the old list still in the new one) get a new content.
func makeCase(
  _ name: String, _ summary: String, count: Int, runs: Int, seed: UInt64,
  edit: (inout [Row], inout SplitMix64) -> Void
) -> Case {
  var random = SplitMix64(state: seed)
  let old = (0..<count).map { Row(id: $0, content: Int(truncatingIfNeeded: random.next())) }
  var new = old
  edit(&new, &random)
  for index in new.indices where new[index].id < count && random.next() % 10 == 0 {
    new[index].content &+= 1
  }
  return Case(name: name, summary: summary, old: old, new: new, runs: runs)
}

/// Deletes `deleted`, inserts `inserted` new rows at `insertAt`, shuffles
/// positions `shuffled` of the result.
func edit(deleted: Range<Int>, inserted: Int, insertAt: Int, shuffled: Range<Int>, firstNewID: Int)
  -> (inout [Row], inout SplitMix64) -> Void
{
  return { rows, random in
    rows.removeSubrange(deleted)
    let fresh = (0..<inserted).map { Row(id: firstNewID + $0, content: Int(truncatingIfNeeded: random.next())) }
    rows.insert(contentsOf: fresh, at: insertAt)
    rows[shuffled].shuffle(using: &random)
  }
}

func allCases() -> [Case] {
  [
    makeCase("A", "5,000: delete 2,000..<3,000, insert 1,000 at 3,000, shuffle 0..<200",
             count: 5_000, runs: 400, seed: 1,
             edit: edit(deleted: 2_000..<3_000, inserted: 1_000, insertAt: 3_000, shuffled: 0..<200, firstNewID: 5_000)),
    makeCase("B", "100,000: delete 20,000..<30,000, insert 10,000 at 30,000, shuffle 0..<2,000",
             count: 100_000, runs: 60, seed: 2,
             edit: edit(deleted: 20_000..<30_000, inserted: 10_000, insertAt: 30_000, shuffled: 0..<2_000, firstNewID: 100_000)),
    makeCase("C", "10,000 reversed", count: 10_000, runs: 200, seed: 3) { rows, _ in rows.reverse() },
    makeCase("D", "10,000, last moved to the front", count: 10_000, runs: 200, seed: 4) { rows, _ in
      rows.insert(rows.removeLast(), at: 0)
    },
    makeCase("E", "1,000,000: delete 200,000..<210,000, insert 10,000 at 300,000, shuffle 0..<2,000",
             count: 1_000_000, runs: 15, seed: 5,
             edit: edit(deleted: 200_000..<210_000, inserted: 10_000, insertAt: 300_000, shuffled: 0..<2_000, firstNewID: 1_000_000)),
  ]
}

/// Peak resident set size of this process so far, in MiB.
func peakMemoryMiB() -> Double {
  var usage = rusage()
  #if canImport(Glibc)
  getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
  #else
  getrusage(RUSAGE_SELF, &usage)
  #endif
  #if canImport(Darwin)
  return Double(usage.ru_maxrss) / 1_048_576
  #else
  return Double(usage.ru_maxrss) / 1024
  #endif
}

func milliseconds(_ duration: Duration) -> Double {
  let (seconds, attoseconds) = duration.components
  return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
}

/// Runs `body` `warmUp` + `runs` times; returns the sorted times of the
/// timed runs, in milliseconds.
func measure(runs: Int, warmUp: Int = 3, _ body: () -> Int) -> [Double] {
  let clock = ContinuousClock()
  var sink = 0
  for _ in 0..<warmUp { sink &+= body() }
  var times: [Double] = []
  for _ in 0..<runs {
    let start = clock.now
    sink &+= body()
    times.append(milliseconds(clock.now - start))
  }
  if sink == 42 { print("") }  // keeps the work observable
  return times.sorted()
}

func format(_ value: Double) -> String {
  let digits = value < 1 ? 3 : value < 100 ? 2 : 1
  var scale = 1.0
  for _ in 0..<digits { scale *= 10 }
  let rounded = (value * scale).rounded() / scale
  var text = "\(rounded)"
  if let dot = text.firstIndex(of: ".") {
    let decimals = text.distance(from: dot, to: text.endIndex) - 1
    text += String(repeating: "0", count: max(0, digits - decimals))
  }
  return text
}

var arguments = Array(CommandLine.arguments.dropFirst())
var runScale = 1.0
if let flag = arguments.firstIndex(of: "--runs-scale"), flag + 1 < arguments.count {
  runScale = Double(arguments[flag + 1]) ?? 1
  arguments.removeSubrange(flag...(flag + 1))
}
var profileOnly = false
if let flag = arguments.firstIndex(of: "--profile") {
  profileOnly = true
  arguments.remove(at: flag)
}
let selected = Set(arguments.map { $0.uppercased() })

// `--profile`: only the timed body, for perf record.
if profileOnly {
  for benchmark in allCases() where selected.isEmpty || selected.contains(benchmark.name) {
    let times = measure(runs: Int(Double(benchmark.runs) * runScale)) {
      IndexDiff(old: benchmark.old, new: benchmark.new).batch.moves.count
    }
    print(benchmark.name, format(times[times.count / 2]), format(times[0]))
  }
  exit(0)
}

print("command: swift run --scratch-path .build-listdiff -c release ListDiffBenchmark \(CommandLine.arguments.dropFirst().joined(separator: " "))")
print("| case | elements | diff → batch median (ms) | min (ms) | runs | inserts | deletes | updates | moves | + sequential (ms) | + JSON Patch (ms) | peak RSS (MiB) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for benchmark in allCases() where selected.isEmpty || selected.contains(benchmark.name) {
  let runs = max(10, Int(Double(benchmark.runs) * runScale))
  let old = benchmark.old
  let new = benchmark.new
  let times = measure(runs: runs) {
    let diff = IndexDiff(old: old, new: new)
    let batch = diff.batch
    return batch.deletes.count &+ batch.moves.count
  }
  let diff = IndexDiff(old: old, new: new)
  let sequentialTimes = measure(runs: max(10, runs / 2)) { diff.sequential.operations.count }
  let patchTimes = measure(runs: max(10, runs / 2)) { diff.jsonPatch().operations.count }
  // The rebuilt lists prove the forms right on the benchmark data too (the
  // sequential reference apply is quadratic, so only on the smaller cases).
  let checked = (try? diff.batch.apply(to: old, newElements: new)) == new
    && (old.count > 100_000 || (try? diff.sequential.apply(to: old, newElements: new)) == new)
  print(
    "| \(benchmark.name) | \(benchmark.summary) | \(format(times[times.count / 2])) | \(format(times[0])) | \(runs) "
      + "| \(diff.inserts.count) | \(diff.deletes.count) | \(diff.updates.count) | \(diff.moves.count) "
      + "| \(format(sequentialTimes[sequentialTimes.count / 2])) | \(format(patchTimes[patchTimes.count / 2])) "
      + "| \(format(peakMemoryMiB()))\(checked ? "" : " APPLY FAILED") |")
}
