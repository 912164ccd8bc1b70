import DeltaFeedClient
import Foundation
import Synchronization

/// What a run counted, shared by every thread.
final class ProveCounters: Sendable {
    struct Counts {
        var requests = 0
        var applied: [FeedDelta.Format: Int] = [:]
        var unchanged = 0
        var refetched = 0
        var gone = 0  // 410 answers seen on the wire
        var retried503 = 0
        /// The error codes of the 503s retried, and how many came without Retry-After.
        var codes503: [String: Int] = [:]
        var missingRetryAfter = 0
        var read5xx = 0
        var write5xx = 0
        var readNoResponse = 0
        var writeNoResponse = 0
        var writesAcknowledged = 0
        var writesRefused = 0
        var writesByKind: [String: Int] = [:]
        var mismatches = 0
        var errors = 0
        var settleRetries = 0
        /// Live clients found equal to a fresh fetch after a round; their events and resets.
        var liveChecks = 0
        var liveEvents = 0
        var liveResets = 0
        var unreachableReplicas: Set<String> = []
        var messages: [String] = []

        var progressLine: String {
            let forms = FeedDelta.Format.allCases.map { "\($0.rawValue) \(applied[$0, default: 0])" }.joined(separator: ", ")
            return "deltas applied \(forms); writes \(writesAcknowledged); 5xx \(read5xx + write5xx); 410 \(gone); mismatches \(mismatches)"
        }
    }

    private let state = Mutex(Counts())

    func update(_ body: (inout Counts) -> Void) {
        state.withLock { body(&$0) }
    }

    /// What a problem counts as.
    enum Problem {
        /// A document that differs from a fresh fetch, or a delta that does not apply.
        case mismatch
        /// Any other failed request or answer the proof cannot use.
        case error
        /// Already counted where it was seen (a 5xx, a request without an answer, a lost write).
        case counted
    }

    /// Counts a problem and keeps its message (the first 20 are printed at the end; each one on
    /// standard error as it happens).
    func fail(_ message: String, as problem: Problem = .mismatch) {
        FileHandle.standardError.write(Data("prove: \(message)\n".utf8))
        state.withLock {
            switch problem {
            case .mismatch: $0.mismatches += 1
            case .error: $0.errors += 1
            case .counted: break
            }
            if $0.messages.count < 20 { $0.messages.append(message) }
        }
    }

    func snapshot() -> Counts {
        state.withLock { $0 }
    }
}
