import DeltaFeedClient
import Foundation

struct WriteVerification {
    var records: Int
    var uncertain: Int
    var replicasChecked = 0
    var unreachable: [String] = []
    var lost = 0
}

struct ConvergenceLag {
    var pairs: String
    var milliseconds: [Double] = []
    var timedOut = 0
    var failedWrites = 0
}

/// Nearest-rank percentiles of a sample.
struct Percentiles {
    let sorted: [Double]

    init(_ samples: [Double]) {
        sorted = samples.sorted()
    }

    /// The smallest sample at or above `percent` % of them (nil for no samples).
    func value(_ percent: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}

struct ProveReport {
    let counts: ProveCounters.Counts
    let rounds: Int
    let seconds: Double
    let verification: WriteVerification
    let lag: ConvergenceLag?
    let lagTarget: Double?
    let maxWriteErrors: Int
    let replicaCount: Int

    var failures: [String] {
        var failures: [String] = []
        let forms = FeedDelta.Format.allCases
        if counts.mismatches > 0 { failures.append("\(counts.mismatches) mismatches") }
        if counts.errors > 0 { failures.append("\(counts.errors) other failed requests") }
        if counts.read5xx > 0 { failures.append("\(counts.read5xx) reads answered 5xx") }
        if counts.readNoResponse > 0 { failures.append("\(counts.readNoResponse) reads without an answer") }
        if counts.missingRetryAfter > 0 { failures.append("\(counts.missingRetryAfter) 503s without Retry-After") }
        if counts.write5xx + counts.writeNoResponse > maxWriteErrors {
            failures.append("\(counts.write5xx + counts.writeNoResponse) writes answered 5xx or not at all (tolerated: \(maxWriteErrors))")
        }
        if verification.lost > 0 { failures.append("\(verification.lost) acknowledged writes not found") }
        if rounds > 0, let missing = forms.first(where: { counts.applied[$0, default: 0] == 0 }) {
            failures.append("no \(missing.rawValue) delta applied: nothing proven for that form")
        }
        if let lag {
            if lag.timedOut > 0 { failures.append("\(lag.timedOut) writes not visible within the lag timeout") }
            if lag.failedWrites > 0 { failures.append("\(lag.failedWrites) lag writes failed") }
            if let lagTarget, let p99 = Percentiles(lag.milliseconds).value(99), p99 > lagTarget {
                failures.append("convergence lag p99 \(Self.ms(p99)) ms is above the target of \(Self.ms(lagTarget)) ms")
            }
        }
        return failures
    }

    static func ms(_ value: Double) -> String { String(format: "%.1f", value) }

    var text: String {
        let forms = FeedDelta.Format.allCases
        let applied = forms.map { "\($0.rawValue) \(counts.applied[$0, default: 0])" }.joined(separator: ", ")
        let kinds = counts.writesByKind.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        let codes503 = counts.codes503.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        let unreachable = verification.unreachable.joined(separator: ", ")
        var lines = [
            "prove: \(rounds) rounds in \(String(format: "%.1f", seconds)) s, \(counts.requests) requests",
            "deltas applied: \(applied); unchanged (304) \(counts.unchanged); refetched after 410 \(counts.refetched) "
                + "(410s seen \(counts.gone)); settle retries \(counts.settleRetries)",
            "live clients: \(counts.liveChecks) pages equal to a fresh fetch after a round; \(counts.liveEvents) events, of which resets \(counts.liveResets)",
            "writes acknowledged: \(counts.writesAcknowledged) (\(kinds.isEmpty ? "none" : kinds)); refused 4xx \(counts.writesRefused); "
                + "outcome unknown \(verification.uncertain)",
            "503 retried after Retry-After: \(counts.retried503)\(codes503.isEmpty ? "" : " (\(codes503))"); "
                + "5xx seen: \(counts.read5xx + counts.write5xx) (reads \(counts.read5xx), writes \(counts.write5xx)); "
                + "no answer: reads \(counts.readNoResponse), writes \(counts.writeNoResponse)",
            "acknowledged writes read back: \(verification.records) records on \(verification.replicasChecked) of \(replicaCount) replicas"
                + (unreachable.isEmpty ? "" : " (unreachable: \(unreachable))") + ", lost \(verification.lost)",
            "mismatches: \(counts.mismatches); other failed requests: \(counts.errors)",
        ]
        if let lag {
            let p = Percentiles(lag.milliseconds)
            let figures = [50.0, 95, 99, 100].map { p.value($0).map(Self.ms) ?? "-" }
            lines.append(
                "convergence lag (\(lag.pairs)), \(lag.milliseconds.count) samples: p50 \(figures[0]) ms, p95 \(figures[1]) ms, "
                    + "p99 \(figures[2]) ms, max \(figures[3]) ms; timed out \(lag.timedOut), failed writes \(lag.failedWrites)")
        }
        for message in counts.messages { lines.append("  first problems: \(message)") }
        lines.append(resultLine)
        let failures = self.failures
        lines.append(failures.isEmpty ? "prove: PASS" : "prove: FAIL: \(failures.joined(separator: "; "))")
        return lines.joined(separator: "\n")
    }

    /// The one line scripts read: `RESULT` and `name=value` pairs, in a fixed order.
    var resultLine: String {
        var fields: [(String, String)] = [
            ("rounds", "\(rounds)"),
            ("applied_batch", "\(counts.applied[.batch, default: 0])"),
            ("applied_sequential", "\(counts.applied[.sequential, default: 0])"),
            ("applied_jsonpatch", "\(counts.applied[.jsonpatch, default: 0])"),
            ("unchanged", "\(counts.unchanged)"),
            ("gone", "\(counts.gone)"),
            ("writes_acked", "\(counts.writesAcknowledged)"),
            ("writes_uncertain", "\(verification.uncertain)"),
            ("retried_503", "\(counts.retried503)"),
            ("retried_503_storage_unavailable", "\(counts.codes503["storage_unavailable", default: 0])"),
            ("read_5xx", "\(counts.read5xx)"),
            ("write_5xx", "\(counts.write5xx)"),
            ("read_no_answer", "\(counts.readNoResponse)"),
            ("write_no_answer", "\(counts.writeNoResponse)"),
            ("live_checks", "\(counts.liveChecks)"),
            ("live_events", "\(counts.liveEvents)"),
            ("live_resets", "\(counts.liveResets)"),
            ("mismatches", "\(counts.mismatches)"),
            ("errors", "\(counts.errors)"),
            ("verified_records", "\(verification.records)"),
            ("verified_replicas", "\(verification.replicasChecked)"),
            ("lost", "\(verification.lost)"),
        ]
        if let lag {
            let p = Percentiles(lag.milliseconds)
            fields += [
                ("lag_samples", "\(lag.milliseconds.count)"),
                ("lag_p50_ms", p.value(50).map(Self.ms) ?? "-"),
                ("lag_p95_ms", p.value(95).map(Self.ms) ?? "-"),
                ("lag_p99_ms", p.value(99).map(Self.ms) ?? "-"),
                ("lag_max_ms", p.value(100).map(Self.ms) ?? "-"),
                ("lag_timed_out", "\(lag.timedOut)"),
            ]
        }
        return "RESULT " + fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
