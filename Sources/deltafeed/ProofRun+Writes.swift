import DeltaFeedClient
import Foundation

extension ProofRun {
    mutating func perform(_ write: ProveWrite) throws {
        var request = FeedHTTPRequest(
            method: write.method, url: URL(string: urls[0].absoluteString + write.path)!, headers: ["Authorization": "Bearer \(token)"])
        if let body = write.body {
            request.body = JSONValue.object(body).serialized()
            request.headers["Content-Type"] = "application/json"
        }
        let response: FeedHTTPResponse
        do {
            response = try transport.send(request)
        } catch {
            ledger.unknownOutcome(write)
            counters.fail("\(write.method) \(write.path): no answer (outcome unknown): \(error)", as: .counted)
            return
        }
        switch response.status {
        case 200...299:
            counters.update {
                $0.writesAcknowledged += 1
                $0.writesByKind[write.kind, default: 0] += 1
            }
            ledger.acknowledged(write, answer: try? response.json())
        case 401, 403:
            throw CommandFailure("\(write.method) \(write.path) answered \(response.status): check the admin token.")
        case 500...:
            ledger.unknownOutcome(write)  // counted and reported by the transport
        default:
            // 404/409/422: the write raced another (following someone already followed); nothing changed.
            counters.update { $0.writesRefused += 1 }
        }
    }

    /// Reads every acknowledged write back from every replica (retrying while they catch up).
    func verifyAcknowledgedWrites() -> WriteVerification {
        var verification = WriteVerification(records: ledger.records.count, uncertain: ledger.uncertain)
        for replica in replicas {
            let pinned = ProveTransport(bases: [replica], counters: counters, role: .probe)
            let health = try? pinned.send(FeedHTTPRequest(method: "GET", url: URL(string: replica.absoluteString + "/healthz")!))
            guard health?.status == 200 else {
                verification.unreachable.append(replica.absoluteString)
                counters.update { $0.unreachableReplicas.insert(replica.absoluteString) }
                continue
            }
            verification.replicasChecked += 1
            for (key, expected) in ledger.records.sorted(by: { $0.key < $1.key }) {
                let deadline = ContinuousClock.now + .seconds(settleTimeout)
                var last = ""
                while true {
                    let url = URL(string: replica.absoluteString + key)!
                    let response = try? pinned.send(FeedHTTPRequest(method: "GET", url: url, headers: ["Authorization": "Bearer \(token)"]))
                    let json = response.flatMap { $0.status == 200 ? try? $0.json() : nil }
                    if let json, expected.allSatisfy({ json[$0.key] == $0.value }) { break }
                    last = response.map { "\($0.status) \(String(decoding: $0.body.prefix(300), as: UTF8.self))" } ?? "no answer"
                    if ContinuousClock.now >= deadline {
                        verification.lost += 1
                        counters.fail(
                            "acknowledged write lost on \(replica.absoluteString): \(key) should have \(JSONValue.object(expected).jsonText), answered \(last)",
                            as: .counted)
                        break
                    }
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
        }
        return verification
    }
}
