import ArgumentParser
import DeltaFeedClient
import Foundation
import Synchronization

/// The base URLs given on the command line.
enum ProveTargets {
    /// Splits `values` at commas, trims them and checks each is an `http://host[:port]` URL
    /// (a trailing slash dropped). Order is kept, duplicates are refused.
    static func parse(_ values: [String], option: String) throws -> [URL] {
        let pieces = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !pieces.isEmpty else { throw ValidationError("\(option) needs at least one URL.") }
        var seen: Set<String> = []
        return try pieces.map { piece in
            var text = piece
            while text.hasSuffix("/") { text.removeLast() }
            guard !text.isEmpty else { throw ValidationError("\(option): an empty URL in \(values.joined(separator: ",")).") }
            guard let url = URL(string: text), url.scheme == "http", let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil
            else {
                throw ValidationError("\(option) must be an http:// URL such as http://127.0.0.1:8080, not \(piece).")
            }
            guard seen.insert(url.absoluteString).inserted else { throw ValidationError("\(option): \(url.absoluteString) is given twice.") }
            return url
        }
    }
}

// MARK: - Transport

/// Sends each request to the next base URL in turn (or to one, when pinned), retries 503s after
/// their Retry-After, and counts what came back.
final class ProveTransport: FeedHTTPTransport {
    /// Whose requests these are: a client's (every answer counts) or the proof's own probes of
    /// one replica (convergence, read-back), which may find it down without anyone failing.
    enum Role {
        case client
        case probe
    }

    let bases: [URL]
    let role: Role
    /// The base the clients were created with; replaced by the chosen one in every request.
    let primary: URL
    let counters: ProveCounters
    private let next: Atomic<Int>
    /// What actually sends: plain sockets (a test passes a fake server).
    private let inner: any FeedHTTPTransport
    /// 503 answers retried per request before the 503 counts.
    static let maximumRetries = 30

    init(
        bases: [URL], counters: ProveCounters, offset: Int = 0, role: Role = .client, inner: any FeedHTTPTransport = SocketTransport(timeout: 10)
    ) {
        precondition(!bases.isEmpty)
        self.inner = inner
        self.bases = bases
        self.role = role
        self.primary = bases[0]
        self.counters = counters
        self.next = Atomic(offset)
    }

    func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse {
        let isRead = request.method == "GET" || request.method == "HEAD" || request.url.path.hasSuffix("/feed/delta")
        var attempt = 0
        while true {
            let base = bases[abs(next.wrappingAdd(1, ordering: .relaxed).oldValue) % bases.count]
            var routed = request
            routed.url = rebased(request.url, onto: base)
            let response: FeedHTTPResponse
            do {
                response = try inner.send(routed)
            } catch {
                guard role == .client else { throw error }
                counters.update {
                    $0.requests += 1
                    if isRead { $0.readNoResponse += 1 } else { $0.writeNoResponse += 1 }
                }
                throw error
            }
            counters.update { $0.requests += 1 }
            guard role == .client else { return response }
            if response.status == 503, attempt < Self.maximumRetries {
                attempt += 1
                let code = (try? response.json())?["error"]?["code"].flatMap { if case .string(let code) = $0 { code } else { nil } }
                let retryAfter = response.header("Retry-After").flatMap(Double.init)
                counters.update {
                    $0.retried503 += 1
                    $0.codes503[code ?? "(no code)", default: 0] += 1
                    if retryAfter == nil { $0.missingRetryAfter += 1 }
                }
                let seconds = retryAfter ?? 1
                Thread.sleep(forTimeInterval: min(max(seconds, 0.05), 5))
                continue
            }
            if response.status >= 500 {
                let body = String(decoding: response.body.prefix(200), as: UTF8.self)
                counters.update { if isRead { $0.read5xx += 1 } else { $0.write5xx += 1 } }
                counters.fail("\(request.method) \(routed.url.absoluteString) answered \(response.status): \(body)", as: .counted)
            }
            if response.status == 410 { counters.update { $0.gone += 1 } }
            return response
        }
    }

    private func rebased(_ url: URL, onto base: URL) -> URL {
        let text = url.absoluteString
        let prefix = primary.absoluteString
        guard base != primary, text.hasPrefix(prefix) else { return url }
        return URL(string: base.absoluteString + text.dropFirst(prefix.count)) ?? url
    }
}
