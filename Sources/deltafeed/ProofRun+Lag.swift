import DeltaFeedClient
import Deterministic
import Foundation

extension ProofRun {
    /// Retitles a video in a viewer's feed through one replica, then polls the next replica's
    /// feed until the title shows: the time from the write's acknowledgement to the first feed
    /// that has it.
    mutating func measureLag(samples: Int) throws -> ConvergenceLag {
        guard let viewer = viewers.first(where: { $0.clients[0].document?.videoIDs.isEmpty == false }),
            let video = viewer.clients[0].document?.videoIDs.first
        else {
            throw CommandFailure("no viewer's feed shows a video to retitle for the convergence lag")
        }
        var lag = ConvergenceLag(pairs: replicas.count > 1 ? "write on one replica, read the next" : "write and read on \(replicas[0].absoluteString)")
        let readers = replicas.map { ProveTransport(bases: [$0], counters: counters, role: .probe) }
        let timeout = max(settleTimeout, 5)
        for sample in 0..<samples {
            let writer = replicas[sample % replicas.count]
            let reader = readers[(sample + 1) % replicas.count]
            let title = "lag \(seed % 100_000) \(sample) \(random.next(below: 1 << 30))"
            let write = ProveWrite(
                kind: "lag title", method: "PATCH", path: "/v1/videos/\(video)", body: ["title": .string(title)], record: .video(video))
            var request = FeedHTTPRequest(method: "PATCH", url: URL(string: writer.absoluteString + write.path)!, headers: ["Authorization": "Bearer \(token)"])
            request.body = write.body.map { JSONValue.object($0).serialized() }
            request.headers["Content-Type"] = "application/json"
            guard let response = try? ProveTransport(bases: [writer], counters: counters).send(request), response.status == 200 else {
                ledger.unknownOutcome(write)
                lag.failedWrites += 1
                continue
            }
            ledger.acknowledged(write, answer: try? response.json())
            let acknowledged = ContinuousClock.now
            let needle = Array(title.utf8)
            let feed = URL(string: reader.bases[0].absoluteString + "/v1/users/\(viewer.id)/feed")!
            while true {
                let answer = try? reader.send(FeedHTTPRequest(method: "GET", url: feed, headers: ["Authorization": "Bearer \(token)"]))
                let elapsed = acknowledged.duration(to: .now)
                if let answer, answer.status == 200, answer.body.firstRange(of: needle) != nil {
                    lag.milliseconds.append(elapsed.seconds * 1000)
                    break
                }
                if elapsed >= .seconds(timeout) {
                    lag.timedOut += 1
                    break
                }
                Thread.sleep(forTimeInterval: 0.002)
            }
            // Land the next write at a random point of any catch-up period.
            Thread.sleep(forTimeInterval: Double(random.next(below: 40)) / 1000)
        }
        return lag
    }
}
