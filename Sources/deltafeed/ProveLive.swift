import DeltaFeedClient
import Foundation
import Synchronization

/// One live client of the proof: a viewer's feed followed over `GET …/feed/live` in one delta
/// form, on its own connection to one of the --url servers, keeping the last page it applied.
final class LiveWatcher: Sendable {
    let viewer: Int64
    let format: FeedDelta.Format
    let base: URL
    private struct State {
        var document: FeedDocument?
        var events = 0
        var resets = 0
        var failure: String?
    }
    /// Shared with the task that reads the stream.
    private final class Box: Sendable {
        let state = Mutex(State())
    }
    private let box = Box()
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(client: DeltaFeedClient) {
        viewer = client.viewer
        format = client.format
        base = client.baseURL
        let updates = client.liveUpdates(options: DeltaFeedClient.LiveOptions(retry: 0.2, maximumRetry: 2))
        let started = Task.detached { [box] in
            do {
                for try await update in updates {
                    box.state.withLock { state in
                        state.document = update.document
                        state.events += 1
                        if case .reset = update.change { state.resets += 1 }
                    }
                }
                box.state.withLock { $0.failure = $0.failure ?? "the stream ended" }
            } catch {
                box.state.withLock { $0.failure = "\(error)" }
            }
        }
        task.withLock { $0 = started }
    }

    /// The page it holds now, if any, and the stream's failure, if it ended.
    var current: (document: FeedDocument?, failure: String?) {
        box.state.withLock { ($0.document, $0.failure) }
    }

    /// Events received, and how many were resets (the first is one unless it resumed).
    var counts: (events: Int, resets: Int) {
        box.state.withLock { ($0.events, $0.resets) }
    }

    func stop() {
        task.withLock { $0?.cancel() }
    }
}

extension ProofRun {
    /// Three live clients per viewer (one per delta form), each on its own connection to the
    /// next --url in turn, so streams spread over the servers a balancer or a list names.
    func startLiveWatchers() -> [LiveWatcher] {
        var watchers: [LiveWatcher] = []
        for (index, viewer) in viewers.enumerated() {
            for (position, format) in FeedDelta.Format.allCases.enumerated() {
                let base = urls[(3 * index + position) % urls.count]
                let client = ProofRun.client(viewer: viewer.id, format: format, bases: [base], offset: 0, counters: counters, token: token)
                watchers.append(LiveWatcher(client: client))
            }
        }
        return watchers
    }

    /// After a round: every live client must come to hold exactly what a fresh fetch returns,
    /// within the settle timeout (its events travel while the check runs).
    func checkLive(_ watchers: [LiveWatcher], round: Int) {
        let (counters, settleTimeout, urls, token) = (self.counters, self.settleTimeout, self.urls, self.token)
        ProofRun.forEach(watchers.count, threads: threads) { index in
            let watcher = watchers[index]
            let fresh = ProofRun.client(viewer: watcher.viewer, format: .batch, bases: urls, offset: round + index, counters: counters, token: token)
            ProofRun.check(live: watcher, fresh: fresh, round: round, counters: counters, settleTimeout: settleTimeout)
        }
    }

    static func check(live watcher: LiveWatcher, fresh: DeltaFeedClient, round: Int, counters: ProveCounters, settleTimeout: Double) {
        let context = "round \(round), viewer \(watcher.viewer), live \(watcher.format.rawValue) via \(watcher.base.absoluteString)"
        let deadline = ContinuousClock.now + .seconds(settleTimeout)
        var last = "nothing"
        while true {
            let truth: FeedDocument
            do {
                truth = try fresh.fetch()
            } catch {
                counters.fail("\(context): fresh fetch failed: \(error)", as: ProofRun.problem(error))
                return
            }
            let (held, failure) = watcher.current
            if let failure {
                counters.fail("\(context): the live stream failed: \(failure)", as: .error)
                return
            }
            if let held, held.snapshot == truth.snapshot {
                if held != truth {
                    counters.fail("\(context): the live document differs from a fresh fetch: \(ProofRun.firstDifference(held, truth))")
                } else {
                    counters.update { $0.liveChecks += 1 }
                }
                return
            }
            last = held?.snapshot ?? "nothing yet"
            if ContinuousClock.now >= deadline {
                counters.fail("\(context): after \(settleTimeout) s the live client holds \(last) and a fresh fetch answers \(truth.snapshot)")
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
