import DeltaFeedClient
import Deterministic
import Foundation
import Testing

/// The production apply (FeedWire, built on ListDiff's apply functions) against the oracle (the
/// client's independent implementation of old): on every delta a server sends after random
/// writes, both must give the fresh fetch; on the same deltas with one position corrupted, both
/// must refuse, or both give the same document.
///
/// Replay a failure with `DELTAFEED_ORACLE_SEED=<seed>` (the seed is in every failure message).
@Suite("Apply oracle", .serialized)
struct ApplyOracleTests {
    @Test(
        "Random server deltas in every form: the production apply and the oracle both equal a fresh fetch, and agree on corrupted ones; the client's types encode exactly what the server wrote"
    )
    func productionApplyAgreesWithTheOracle() throws {
        let seed = ProcessInfo.processInfo.environment["DELTAFEED_ORACLE_SEED"].flatMap { UInt64($0) } ?? 0x0AC1_E5EE_D000_0012
        var random = SplitMix64(seed: seed)
        let server = try TestServer()
        defer { server.stop() }
        let viewer: Int64 = 3
        let queries = [
            FeedQuery(limit: 30), FeedQuery(limit: 12, width: 390, stackAds: true),
            FeedQuery(limit: 8, width: 320, kinds: ["video", "user", "see_all", "section_title"], viewport: 500),
        ]
        var held = try queries.map { try server.freshFeed(viewer: viewer, query: $0).document }
        var applied = 0
        var corrupted = (refused: 0, accepted: 0)
        for step in 1...60 {
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                try randomWrite(server, viewer: viewer, visible: held[0], random: &random)
            }
            for (index, query) in queries.enumerated() {
                let (freshJSON, fresh) = try server.freshFeed(viewer: viewer, query: query)
                #expect(fresh.json == freshJSON, "seed \(seed), step \(step), query \(index): the page read back encodes differently")
                for format in FeedDelta.Format.allCases {
                    let context = "seed \(seed), step \(step), query \(index), \(format.rawValue)"
                    let response = try server.request("GET", "/v1/users/\(viewer)/feed/delta?since=\(held[index].snapshot)&format=\(format.rawValue)")
                    if response.status == 304 { continue }
                    #expect(response.status == 200, "\(context): \(response.status)")
                    let json = try response.json()
                    let delta = try FeedDelta(json: json, format: format, since: held[index].snapshot)
                    #expect(delta.json == json, "\(context): the delta read back encodes differently")
                    #expect(try held[index].applying(delta) == fresh, "\(context): production")
                    #expect(try ApplyOracle.apply(delta, to: held[index]) == fresh, "\(context): oracle")
                    applied += 1

                    // The same delta with one position changed: refused by both, or the same result.
                    guard let mutated = try? FeedDelta(json: corrupt(json, random: &random), format: format, since: held[index].snapshot) else { continue }
                    let production = Result { () throws(DeltaApplyError) in try held[index].applying(mutated) }
                    let oracle = Result { () throws(ApplyOracle.Refusal) in try ApplyOracle.apply(mutated, to: held[index]) }
                    switch (production, oracle) {
                    case (.success(let mine), .success(let theirs)):
                        corrupted.accepted += 1
                        #expect(mine == theirs, "\(context): both apply the corrupted delta, differently: \(mutated.json.jsonText)")
                    case (.failure, .failure):
                        corrupted.refused += 1
                    case (.success, .failure(let refusal)):
                        Issue.record("\(context): production applies what the oracle refuses (\(refusal)): \(mutated.json.jsonText)")
                    case (.failure(let error), .success):
                        Issue.record("\(context): production refuses what the oracle applies (\(error)): \(mutated.json.jsonText)")
                    }
                }
                held[index] = fresh
            }
        }
        print("Apply oracle, seed \(seed): \(applied) deltas applied; corrupted: \(corrupted.refused) refused by both, \(corrupted.accepted) applied alike")
        #expect(applied > 150, "seed \(seed): too few deltas to prove anything")
        #expect(corrupted.refused > 50, "seed \(seed): too few corrupted deltas refused")
    }

    /// One random write through the API, mostly on what the viewer sees.
    private func randomWrite(_ server: TestServer, viewer: Int64, visible: FeedDocument, random: inout SplitMix64) throws {
        let videos = visible.sections.flatMap(\.items).compactMap { $0.id.hasPrefix("video:") ? Int64($0.id.dropFirst(6)) : nil }
        let video = videos.randomElement(using: &random) ?? Int64.random(in: 1...400, using: &random)
        let user = Int64.random(in: 1...60, using: &random)
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
            try server.request(
                "POST", "/v1/videos",
                json: [
                    "author_id": .int(user), "title": "new", "thumbnail_url": "https://cdn.example/t.jpg", "duration_seconds": 30,
                    "like_count": .int(Int64.random(in: 0...90_000, using: &random)),
                ])
        case 1: try server.request("PATCH", "/v1/videos/\(video)", json: ["title": .string("title \(random.next() % 1000)")])
        case 2: try server.request("PATCH", "/v1/videos/\(video)", json: ["like_count": .int(Int64.random(in: 0...100_000, using: &random))])
        case 3: try server.request("DELETE", "/v1/videos/\(video)")
        case 4: try server.request("PUT", "/v1/users/\(viewer)/follows/\(user)")
        case 5: try server.request("DELETE", "/v1/users/\(viewer)/follows/\(user)")
        case 6: try server.request("PATCH", "/v1/ads/\(Int.random(in: 1...5, using: &random))", json: ["active": .bool(Bool.random(using: &random))])
        default: try server.request("PUT", "/v1/users/\(user)/follows/\(Int64.random(in: 1...60, using: &random))")
        }
    }

    /// `delta` with one position changed: an integer outside the items' data, or a digit of a
    /// JSON Patch path.
    private func corrupt(_ delta: JSONValue, random: inout SplitMix64) -> JSONValue {
        var sites: [[PathElement]] = []
        func collect(_ value: JSONValue, _ path: [PathElement]) {
            switch value {
            case .int: sites.append(path)
            case .string(let text) where path.last == .key("path") || path.last == .key("from"):
                if text.contains(where: \.isNumber) { sites.append(path) }
            case .array(let elements):
                for (index, element) in elements.enumerated() { collect(element, path + [.index(index)]) }
            case .object(let members):
                for (key, member) in members where key != "data" && key != "change_count" { collect(member, path + [.key(key)]) }
            default: break
            }
        }
        collect(delta, [])
        guard let site = sites.randomElement(using: &random) else { return delta }
        let change = [-1, 1, 2, -2, 7].randomElement(using: &random)!
        return delta.replacing(at: site[...]) { value in
            switch value {
            case .int(let number): return .int(number + Int64(change))
            case .string(let text):
                // Change one number of the pointer.
                var tokens = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
                let numeric = tokens.indices.filter { Int(tokens[$0]) != nil }
                let token = numeric.randomElement(using: &random)!
                tokens[token] = String(Int(tokens[token])! + change)
                return .string(tokens.joined(separator: "/"))
            default: return value
            }
        }
    }
}

private enum PathElement: Equatable {
    case key(String)
    case index(Int)
}

extension JSONValue {
    fileprivate func replacing(at path: ArraySlice<PathElement>, _ change: (JSONValue) -> JSONValue) -> JSONValue {
        guard let first = path.first else { return change(self) }
        switch (self, first) {
        case (.object(var members), .key(let key)):
            members[key] = members[key]?.replacing(at: path.dropFirst(), change)
            return .object(members)
        case (.array(var elements), .index(let index)):
            elements[index] = elements[index].replacing(at: path.dropFirst(), change)
            return .array(elements)
        default:
            return self
        }
    }
}
