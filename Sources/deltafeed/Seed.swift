import ArgumentParser
import FeedStore

#if canImport(Glibc)
import Glibc
#endif

/// `deltafeed seed`: fills an empty store with a deterministic demo.
struct Seed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fill an empty store with deterministic demo data (users, videos, ads, a follow graph).",
        discussion: "The same numbers and seed always produce the same database contents. A store that already holds data is left alone (exit 1)."
    )

    @OptionGroup var storage: StoreOptions

    @Option(help: "Users to create.")
    var users: Int = 2000

    @Option(help: "Videos to create.")
    var videos: Int = 50_000

    @Option(help: "Ads to create.")
    var ads: Int = 40

    @Option(help: "Seed of the generator.")
    var seed: UInt64 = 42

    func run() throws {
        let store = try storage.open()
        let counts = try seedWithProgress(store, DemoSeed(users: users, videos: videos, ads: ads, seed: seed))
        print("seeded \(store.location): \(counts.users) users, \(counts.videos) videos, \(counts.ads) ads, \(counts.follows) follows")
    }
}

/// Seeds `store`, drawing a progress bar on a terminal (and nothing when output is a file).
func seedWithProgress(_ store: any FeedStorage, _ demo: DemoSeed) throws -> StoreCounts {
    let bar = ProgressBar(label: "seeding")
    let counts = try store.seed(demo) { done, total in bar.update(done: done, total: total) }
    bar.finish()
    return counts
}

/// A one-line progress bar on standard error, drawn only when it is a terminal.
final class ProgressBar {
    private let label: String
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastPercent = -1

    init(label: String) {
        self.label = label
    }

    func update(done: Int, total: Int) {
        guard isTerminal, total > 0 else { return }
        let percent = done * 100 / total
        guard percent != lastPercent else { return }
        lastPercent = percent
        let filled = percent * 30 / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
        writeToStandardError("\r\(label) [\(bar)] \(percent)% (\(done)/\(total))")
    }

    func finish() {
        if isTerminal && lastPercent >= 0 { writeToStandardError("\n") }
    }
}

private func writeToStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = write(STDERR_FILENO, &bytes, bytes.count)
}
