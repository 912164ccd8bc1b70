// `swift run --scratch-path .build-listdiff -c release ListDiffBenchmark [A B C D E] [--runs-scale X] [--profile]`
//
// Times IndexDiff from two lists through to the UIKit batch form, on the
// cases recorded in BENCHMARKS.md, and the extra cost of the sequential and
// JSON Patch forms. Elements are an Int identifier and an Int content; 10 %
// of the surviving elements get a new content. Data come from a seeded
// generator, so every run diffs the same lists. Each case runs in its own
// process (Linux) so that its peak memory is its own. `--runs-scale X`
// multiplies the number of runs; `--profile` times only the diff, for
// `perf record`.

import Deterministic
import ListDiff

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One list element: an identifier and a content.
struct Row: Diffable, Equatable {
    var id: Int
    var content: Int
    var diffIdentifier: Int { id }
}

/// A benchmark case; its lists are built on demand, so that a process
/// measuring one case holds only that case's data.
struct Case {
    var name: String
    var summary: String
    var runs: Int
    var build: () -> (old: [Row], new: [Row])
}

/// Builds a case: `count` rows, the edit, then 10 % of the surviving rows
/// (those of the old list still in the new one) get a new content.
func makeCase(
    _ name: String, _ summary: String, count: Int, runs: Int, seed: UInt64,
    edit: @escaping (inout [Row], inout SplitMix64) -> Void
) -> Case {
    Case(name: name, summary: summary, runs: runs) {
        var random = SplitMix64(seed: seed)
        let old = (0..<count).map { Row(id: $0, content: Int(truncatingIfNeeded: random.next())) }
        var new = old
        edit(&new, &random)
        for index in new.indices where new[index].id < count && random.next() % 10 == 0 {
            new[index].content &+= 1
        }
        return (old, new)
    }
}

/// Deletes `deleted`, inserts `inserted` new rows at `insertAt`, shuffles
/// positions `shuffled` of the result.
func edit(
    deleted: Range<Int>, inserted: Int, insertAt: Int, shuffled: Range<Int>, firstNewID: Int
)
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
        makeCase(
            "A", "5,000: delete 2,000..<3,000, insert 1,000 at 3,000, shuffle 0..<200",
            count: 5_000, runs: 400, seed: 1,
            edit: edit(deleted: 2_000..<3_000, inserted: 1_000, insertAt: 3_000, shuffled: 0..<200, firstNewID: 5_000)),
        makeCase(
            "B", "100,000: delete 20,000..<30,000, insert 10,000 at 30,000, shuffle 0..<2,000",
            count: 100_000, runs: 60, seed: 2,
            edit: edit(deleted: 20_000..<30_000, inserted: 10_000, insertAt: 30_000, shuffled: 0..<2_000, firstNewID: 100_000)),
        makeCase("C", "10,000 reversed", count: 10_000, runs: 200, seed: 3) { rows, _ in rows.reverse() },
        makeCase("D", "10,000, last moved to the front", count: 10_000, runs: 200, seed: 4) { rows, _ in
            rows.insert(rows.removeLast(), at: 0)
        },
        makeCase(
            "E", "1,000,000: delete 200,000..<210,000, insert 10,000 at 300,000, shuffle 0..<2,000",
            count: 1_000_000, runs: 15, seed: 5,
            edit: edit(deleted: 200_000..<210_000, inserted: 10_000, insertAt: 300_000, shuffled: 0..<2_000, firstNewID: 1_000_000)),
    ]
}

/// A section of the sectioned case: an identifier, a title and rows.
struct Shelf: DiffableSection, Equatable {
    var id: Int
    var title: Int
    var items: [Row]
    var diffIdentifier: Int { id }
    func isContentEqual(to other: Shelf) -> Bool { title == other.title }
}

/// Case F: 200 sections of 500 rows (100,000 rows). 5 sections deleted, 5
/// inserted, 10 moved, 2 retitled; in every other section 25 rows deleted,
/// 25 inserted, the first 10 shuffled, and 10 % of the rows given a new
/// content.
let sectionedSummary =
    "200 sections × 500 rows: 5 sections deleted, 5 inserted, 10 moved, 2 retitled; per section 25 rows deleted, 25 inserted, 10 shuffled, 10 % updated"

func makeSectionedLists() -> (old: [Shelf], new: [Shelf]) {
    var random = SplitMix64(seed: 6)
    var nextID = 0
    func rows(_ count: Int) -> [Row] {
        (0..<count).map { _ in
            nextID += 1
            return Row(id: nextID, content: Int(truncatingIfNeeded: random.next()))
        }
    }
    let old = (0..<200).map { Shelf(id: $0, title: 0, items: rows(500)) }
    var new = old.map { shelf -> Shelf in
        var shelf = shelf
        let start = Int(random.next() % 475)
        shelf.items.removeSubrange(start..<(start + 25))
        shelf.items.insert(contentsOf: rows(25), at: Int(random.next() % UInt64(shelf.items.count)))
        shelf.items[0..<10].shuffle(using: &random)
        for index in shelf.items.indices where random.next() % 10 == 0 { shelf.items[index].content &+= 1 }
        return shelf
    }
    for _ in 0..<5 { new.remove(at: Int(random.next() % UInt64(new.count))) }
    for k in 0..<5 { new.insert(Shelf(id: 1_000 + k, title: 0, items: rows(500)), at: Int(random.next() % UInt64(new.count))) }
    for _ in 0..<10 {
        let shelf = new.remove(at: Int(random.next() % UInt64(new.count)))
        new.insert(shelf, at: Int(random.next() % UInt64(new.count + 1)))
    }
    for _ in 0..<2 { new[Int(random.next() % UInt64(new.count))].title += 1 }
    return (old, new)
}

/// The times and memory of one case: the diff with its batch, then the other two forms of the
/// same diff, and RSS before and at the peak.
struct FormTimings {
    var diffToBatch: [Double]
    var sequential: [Double]
    var patch: [Double]
    var memoryBefore: Double
    var peak: Double

    /// The table cells from the batch median to the peak, around the case's own change counts.
    func cells(runs: Int, counts: String, checked: Bool) -> String {
        "| \(format(diffToBatch[diffToBatch.count / 2])) | \(format(diffToBatch[0])) | \(runs) | \(counts) "
            + "| \(format(sequential[sequential.count / 2])) | \(format(patch[patch.count / 2])) "
            + "| \(format(memoryBefore)) | \(format(peak))\(checked ? "" : " APPLY FAILED") |"
    }
}

/// Times `makeDiff` with its batch `runs` times, then the sequential and JSON Patch forms of one
/// diff half as often. Returns that diff with the timings.
func measureForms<Diff>(
    runs: Int, makeDiff: () -> Diff, batch: (Diff) -> Int, sequential: (Diff) -> Int, patch: (Diff) -> Int
) -> (Diff, FormTimings) {
    let memoryBefore = currentMemoryMiB()
    let times = measure(runs: runs) { batch(makeDiff()) }
    let diff = makeDiff()
    let sequentialTimes = measure(runs: max(10, runs / 2)) { sequential(diff) }
    let patchTimes = measure(runs: max(10, runs / 2)) { patch(diff) }
    return (diff, FormTimings(diffToBatch: times, sequential: sequentialTimes, patch: patchTimes, memoryBefore: memoryBefore, peak: peakMemoryMiB()))
}

/// Measures the sectioned case and prints its table row.
func measureSectionedAndPrint(runScale: Double) {
    let runs = max(10, Int(60 * runScale))
    let (old, new) = makeSectionedLists()
    let (diff, timings) = measureForms(
        runs: runs, makeDiff: { SectionedDiff(oldSections: old, newSections: new) },
        batch: { $0.batch.itemDeletes.count &+ $0.batch.sectionMoves.count },
        sequential: { $0.sequential.operations.count }, patch: { $0.jsonPatch().operations.count })
    let checked = (try? diff.batch.apply(to: old, newSections: new).map(\.items)) == new.map(\.items)
    let sections = diff.sections
    let items = diff.itemDiffs.map(\.items)
    func total(_ count: (IndexDiff<Int>) -> Int) -> Int { items.reduce(0) { $0 + count($1) } }
    let counts =
        "\(sections.inserts.count) / \(total { $0.inserts.count }) | \(sections.deletes.count) / \(total { $0.deletes.count }) "
        + "| \(sections.updates.count) / \(total { $0.updates.count }) | \(sections.moves.count) / \(total { $0.moves.count })"
    print("| F | \(sectionedSummary) " + timings.cells(runs: runs, counts: counts, checked: checked))
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

/// This process's resident set size now, in MiB (Linux; 0 elsewhere).
func currentMemoryMiB() -> Double {
    #if os(Linux)
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 256)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return 0 }
    // "size resident shared text lib data dt", in pages.
    let fields = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        .split(separator: " ")
    guard fields.count > 1, let resident = Int(fields[1]) else { return 0 }
    return Double(resident * Int(sysconf(Int32(_SC_PAGESIZE)))) / 1_048_576
    #else
    return 0
    #endif
}

/// Runs this executable again for one case, so that its peak memory is its
/// own. Returns false when the child could not run or failed.
func runInChildProcess(_ arguments: [String]) -> Bool {
    #if os(Linux)
    fflush(nil)  // every output stream, so rows stay in order
    let path = "/proc/self/exe"
    var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid = pid_t()
    guard posix_spawn(&pid, path, nil, nil, &argv, environ) == 0 else { return false }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return status == 0
    #else
    return false
    #endif
}

var arguments = Array(CommandLine.arguments.dropFirst())
var runScale = 1.0
var runScaleArguments: [String] = []
if let flag = arguments.firstIndex(of: "--runs-scale"), flag + 1 < arguments.count {
    runScale = Double(arguments[flag + 1]) ?? 1
    runScaleArguments = Array(arguments[flag...(flag + 1)])
    arguments.removeSubrange(flag...(flag + 1))
}
var profileOnly = false
if let flag = arguments.firstIndex(of: "--profile") {
    profileOnly = true
    arguments.remove(at: flag)
}
// `--row`: this process is a child measuring one case; print its row only.
var rowOnly = false
if let flag = arguments.firstIndex(of: "--row") {
    rowOnly = true
    arguments.remove(at: flag)
}
let selected = arguments.isEmpty ? ["A", "B", "C", "D", "E", "F"] : arguments.map { $0.uppercased() }

// `--profile`: only the timed body, for perf record.
if profileOnly {
    for benchmark in allCases() where selected.contains(benchmark.name) {
        let (old, new) = benchmark.build()
        let times = measure(runs: Int(Double(benchmark.runs) * runScale)) {
            IndexDiff(old: old, new: new).batch.moves.count
        }
        print(benchmark.name, format(times[times.count / 2]), format(times[0]))
    }
    exit(0)
}

/// Measures one case and prints its table row.
func measureAndPrint(_ benchmark: Case, runScale: Double) {
    let runs = max(10, Int(Double(benchmark.runs) * runScale))
    let (old, new) = benchmark.build()
    let (diff, timings) = measureForms(
        runs: runs, makeDiff: { IndexDiff(old: old, new: new) },
        batch: { $0.batch.deletes.count &+ $0.batch.moves.count },
        sequential: { $0.sequential.operations.count }, patch: { $0.jsonPatch().operations.count })
    // The rebuilt lists prove the forms right on the benchmark data too (the
    // sequential reference apply is quadratic, so only on the smaller cases).
    let checked =
        (try? diff.batch.apply(to: old, newElements: new)) == new
        && (old.count > 100_000 || (try? diff.sequential.apply(to: old, newElements: new)) == new)
    let counts = "\(diff.inserts.count) | \(diff.deletes.count) | \(diff.updates.count) | \(diff.moves.count)"
    print("| \(benchmark.name) | \(benchmark.summary) " + timings.cells(runs: runs, counts: counts, checked: checked))
}

if !rowOnly {
    print("command: swift run --scratch-path .build-listdiff -c release ListDiffBenchmark \(CommandLine.arguments.dropFirst().joined(separator: " "))")
}
var printedHeader = ""
for name in selected {
    let sectioned = name == "F"
    if !rowOnly && printedHeader != (sectioned ? "F" : "flat") {
        printedHeader = sectioned ? "F" : "flat"
        print("")
        if sectioned {
            print(
                "| case | sections | diff → batch median (ms) | min (ms) | runs | inserts (sections / items) | deletes | updates | moves | + sequential median (ms) | + JSON Patch median (ms) | RSS with data (MiB) | peak RSS (MiB) |"
            )
        } else {
            print(
                "| case | lists | diff → batch median (ms) | min (ms) | runs | inserts | deletes | updates | moves | + sequential median (ms) | + JSON Patch median (ms) | RSS with data (MiB) | peak RSS (MiB) |"
            )
        }
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    }
    // Each case in its own process (Linux), so that peak memory is its own.
    if !rowOnly && runInChildProcess([name, "--row"] + runScaleArguments) { continue }
    if sectioned {
        measureSectionedAndPrint(runScale: runScale)
    } else {
        for benchmark in allCases() where benchmark.name == name { measureAndPrint(benchmark, runScale: runScale) }
    }
}
