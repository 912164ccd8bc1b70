import DeltaFeedClient

#if canImport(Glibc)
import Glibc
#endif

/// A blocking HTTP/1.1 client over a raw socket, shared by the server test suites, so tests control every byte: keep-alive,
/// malformed request lines, slow senders.
public final class RawHTTPClient {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
        public func header(_ name: String) -> String? {
            headers.first(where: { $0.0.lowercased() == name.lowercased() })?.1
        }
    }

    public enum Failure: Error { case connect(Int32), closed, timeout, malformed(String) }

    public let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `port` on 127.0.0.1. `receiveBufferBytes` and `maximumSegmentBytes` are set
    /// before the connection is made, so the handshake carries them: a small receive window, and
    /// a small segment size, which keeps the server's send buffer small too (Linux sizes it by
    /// segments). With both, a client that stops reading fills every buffer between it and the
    /// server after a few tens of kilobytes.
    public init(port: Int, receiveTimeoutSeconds: Int = 10, receiveBufferBytes: Int32? = nil, maximumSegmentBytes: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var bytes = receiveBufferBytes {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
        }
        if var bytes = maximumSegmentBytes {
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_MAXSEG, &bytes, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 { let code = errno; close(fd); throw Failure.connect(code) }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends raw bytes; false if the peer is gone.
    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Sends a request and reads its response.
    public func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> Response {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        send(Array(text.utf8) + body)
        return try readResponse(isHead: method == "HEAD")
    }

    /// Reads one response, with the client's parser (`HTTPResponseParser`).
    public func readResponse(isHead: Bool = false) throws -> Response {
        var parsed: HTTPResponseParser.Head?
        while parsed == nil {
            do {
                parsed = try HTTPResponseParser.head(in: buffer)
            } catch {
                throw Failure.malformed(error.reason)
            }
            if parsed == nil { try fill() }
        }
        let head = parsed!
        buffer.removeFirst(head.bodyStart)
        let length: Int
        switch try? HTTPResponseParser.bodyFraming(of: head, method: isHead ? "HEAD" : "GET") {
        case .length(let count)?: length = count
        // This server always sends Content-Length; anything else is read as an empty body, and
        // what follows as the next response, which the test then sees as malformed.
        case .none?, .chunked?, .untilClose?, nil: length = 0
        }
        while buffer.count < length { try fill() }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return Response(status: head.status, headers: head.fields.map { ($0.name, $0.value) }, body: body)
    }

    /// True when the server closed the connection (read returns 0 or reset) within the timeout.
    public func waitForClose() -> Bool {
        var byte: UInt8 = 0
        while true {
            let count = recv(fd, &byte, 1, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { throw Failure.closed }
        if count < 0 { throw errno == EAGAIN ? Failure.timeout : Failure.closed }
        buffer.append(contentsOf: chunk[..<count])
    }

}
