import Foundation
import HTTPTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A test's raw view of a `text/event-stream` answer: one socket, the status and headers, then
/// the body's events (and comments) as they arrive, de-chunked and parsed by hand so that the
/// tests see exactly what the server wrote.
final class EventStreamReader {
    struct Event: Equatable {
        var name = "message"
        var id: String?
        var data = ""
    }

    /// What the body held, in order.
    enum Part: Equatable {
        case event(Event)
        case comment(String)
        case retry(Int)
    }

    /// The connection (HTTPTestSupport's), read here by hand.
    private let connection: RawHTTPClient
    private var fd: Int32 { connection.fd }
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    private var raw: [UInt8] = []
    private var body: [UInt8] = []
    private var chunked = false
    /// The body ended (the last chunk, or the connection closed).
    private(set) var ended = false
    private var parts: [Part] = []

    /// Connects to `port` and sends `method path` with `headers`. A reader made `narrow` has
    /// small socket buffers at both ends (``RawHTTPClient``'s receive buffer and segment size):
    /// when it stops reading, the server soon cannot write to it.
    init(port: Int, path: String, headers: [String: String] = [:], method: String = "GET", narrow: Bool = false) throws {
        connection = try RawHTTPClient(port: port, receiveBufferBytes: narrow ? 4096 : nil, maximumSegmentBytes: narrow ? 536 : nil)
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        guard connection.send(request + "\r\n") else { throw TestFailure("the request could not be sent") }
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Reads until the head has arrived; throws after `timeout` seconds.
    func readHead(timeout: Double = 10) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while status == 0 {
            // In small reads: a slow reader's test must not take much of the body with the head.
            guard try receive(until: deadline, atMost: 256) else { throw TestFailure("no head in \(timeout) s") }
            guard let end = find([13, 10, 13, 10], in: raw) else { continue }
            let head = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
            status = Int(head[0].split(separator: " ")[1]) ?? -1
            for line in head.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            chunked = headers["transfer-encoding"] == "chunked"
            raw.removeSubrange(..<(end + 4))
            decodeBody()
        }
    }

    /// The next part of the body, waiting up to `timeout` seconds; nil when none came (or the
    /// body ended).
    func next(timeout: Double = 10) throws -> Part? {
        if status == 0 { try readHead(timeout: timeout) }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while parts.isEmpty {
            if ended { return nil }
            guard try receive(until: deadline) else { return nil }
            decodeBody()
        }
        return parts.removeFirst()
    }

    /// The next event, skipping comments and `retry:`.
    func nextEvent(timeout: Double = 10) throws -> Event? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let part = try next(timeout: left) else { return nil }
            if case .event(let event) = part { return event }
        }
    }

    /// Whether the body ended within `timeout` seconds (parts before the end are dropped).
    func endsWithin(_ timeout: Double) throws -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !ended {
            parts.removeAll()
            guard try receive(until: deadline) else { return ended }
            decodeBody()
        }
        return true
    }

    /// The whole body as text so far (for HEAD and error answers).
    func bodyText(timeout: Double = 5) throws -> String {
        let deadline = Date(timeIntervalSinceNow: timeout)
        let length = Int(headers["content-length"] ?? "") ?? 0
        while body.count < length, try receive(until: deadline) { decodeBody() }
        return String(decoding: body, as: UTF8.self)
    }

    /// Receives what the socket has, waiting until `deadline`; false on timeout or end.
    private func receive(until deadline: Date, atMost limit: Int = 65536) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = max(0, Int32(deadline.timeIntervalSinceNow * 1000))
        guard poll(&descriptor, 1, milliseconds) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            ended = true
            return false
        }
        raw.append(contentsOf: buffer[..<count])
        return true
    }

    private func decodeBody() {
        guard status != 0 else { return }
        if chunked {
            while let lineEnd = find([13, 10], in: raw) {
                let size = Int(String(decoding: raw[..<lineEnd], as: UTF8.self), radix: 16) ?? 0
                guard raw.count >= lineEnd + 2 + size + 2 else { break }
                body.append(contentsOf: raw[(lineEnd + 2)..<(lineEnd + 2 + size)])
                raw.removeSubrange(..<(lineEnd + 2 + size + 2))
                if size == 0 { ended = true }
            }
        } else {
            body.append(contentsOf: raw)
            raw.removeAll()
        }
        guard headers["content-type"]?.hasPrefix("text/event-stream") == true else { return }
        // Events end with a blank line.
        while let end = find([10, 10], in: body) {
            let block = String(decoding: body[..<end], as: UTF8.self)
            body.removeSubrange(..<(end + 2))
            var event = Event()
            var hasEvent = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    parts.append(.comment(String(line.dropFirst())))
                } else if line.hasPrefix("retry: ") {
                    parts.append(.retry(Int(line.dropFirst(7)) ?? -1))
                } else if line.hasPrefix("event: ") {
                    event.name = String(line.dropFirst(7))
                    hasEvent = true
                } else if line.hasPrefix("id: ") {
                    event.id = String(line.dropFirst(4))
                } else if line.hasPrefix("data: ") {
                    event.data += (event.data.isEmpty ? "" : "\n") + line.dropFirst(6)
                    hasEvent = true
                }
            }
            if hasEvent { parts.append(.event(event)) }
        }
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}
