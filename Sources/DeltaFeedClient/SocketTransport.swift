public import Foundation
import Gzip
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal blocking HTTP/1.1 client over POSIX sockets, for plain `http://` servers.
///
/// Each request opens a connection (`TCP_NODELAY`), writes the request in one go with
/// `Connection: close`, reads the response to its end (`Content-Length`, chunked, or until the
/// server closes) and closes the connection. It asks for gzip (`Accept-Encoding: gzip`, unless the
/// request names its own) and hands back the body decoded, with `content-encoding` still telling
/// how it travelled. No TLS, no redirects, no proxies: it is for talking to a deltafeed server on
/// the same host or network (tests, tools, server-to-server), where it is both faster and more
/// predictable than `URLSession`.
///
/// Why it exists next to ``URLSessionTransport`` (which works on Linux and is the default): it
/// needs nothing but the C library (no libcurl, no FoundationNetworking) and behaves the same on
/// every platform; one connection per request also means no stale kept-alive connection and no
/// delayed-ACK stall with servers that leave Nagle's algorithm on. Use ``URLSessionTransport``
/// for `https://`, proxies or HTTP/2.
public struct SocketTransport: FeedHTTPTransport {
    /// Seconds each connect, send and receive may block before the request fails.
    public var timeout: TimeInterval
    /// The largest response accepted, in bytes.
    public var maximumResponseSize: Int

    /// Creates a transport.
    ///
    /// - Parameters:
    ///   - timeout: seconds each socket operation may block (default 30).
    ///   - maximumResponseSize: the largest response accepted (default 64 MiB).
    public init(timeout: TimeInterval = 30, maximumResponseSize: Int = 64 << 20) {
        self.timeout = timeout
        self.maximumResponseSize = maximumResponseSize
    }

    /// Sends `request` on a new connection and reads the whole response.
    ///
    /// - Throws: ``FeedHTTPTransportError`` for a URL that is not `http://`, a host that does
    ///   not resolve, a refused connection, a timeout, or a response that is not HTTP/1.x.
    public func send(_ request: FeedHTTPRequest) throws -> FeedHTTPResponse {
        func failure(_ reason: String) -> FeedHTTPTransportError {
            FeedHTTPTransportError(reason: "\(request.method) \(request.url): \(reason)")
        }
        guard let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false),
            components.scheme?.lowercased() == "http", let host = components.host, !host.isEmpty
        else { throw failure("SocketTransport speaks plain http:// only") }
        let port = components.port ?? 80
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }

        var head = "\(request.method) \(target) HTTP/1.1\r\n"
        let hostHeader = host.contains(":") ? "[\(host)]" : host
        head += "Host: \(hostHeader)\(components.port.map { ":\($0)" } ?? "")\r\n"
        head += "Connection: close\r\n"
        if !request.headers.keys.contains(where: { $0.lowercased() == "accept-encoding" }) {
            head += "Accept-Encoding: gzip\r\n"
        }
        let body = request.body ?? []
        if request.body != nil || ["POST", "PUT", "PATCH"].contains(request.method) {
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            let lower = name.lowercased()
            guard lower != "host", lower != "connection", lower != "content-length" else { continue }
            guard !name.contains(where: { $0 == "\r" || $0 == "\n" || $0 == ":" }), !value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                throw failure("header \(name) contains a line break")
            }
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"

        let socket = try Socket.connect(host: host, port: port, timeout: timeout).get(orThrow: failure)
        defer { socket.close() }
        try socket.write(Array(head.utf8) + body).get(orThrow: failure)
        let raw = try socket.readToEnd(limit: maximumResponseSize).get(orThrow: failure)
        var response: FeedHTTPResponse
        do {
            response = try HTTPResponseParser.parse(raw, method: request.method)
        } catch {
            throw failure(error.reason)
        }
        if !response.body.isEmpty, let coding = response.header("Content-Encoding")?.lowercased(), coding == "gzip" || coding == "x-gzip" {
            do {
                response.body = try Gzip.decompress(response.body, limit: maximumResponseSize)
            } catch {
                throw failure("the gzip body does not decode: \(error)")
            }
        }
        return response
    }
}

/// A socket failure, carried as a value so the caller can prefix its context.
struct SocketError: Error {
    let reason: String
}

extension Result where Failure == SocketError {
    fileprivate func get(orThrow wrap: (String) -> FeedHTTPTransportError) throws(FeedHTTPTransportError) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let error): throw wrap(error.reason)
        }
    }
}

/// A connected, blocking TCP socket (``SocketTransport``'s, and the live streams').
struct Socket {
    let descriptor: Int32

    static func connect(host: String, port: Int, timeout: TimeInterval) -> Result<Socket, SocketError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .failure(SocketError(reason: "cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(first) }
        var lastError = "no address for \(host)"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let descriptor = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard descriptor >= 0 else {
                lastError = "socket: \(String(cString: strerror(errno)))"
                continue
            }
            var seconds = timeval(tv_sec: time_t(timeout), tv_usec: suseconds_t((timeout - timeout.rounded(.down)) * 1_000_000))
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
            _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            #if canImport(Darwin)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            if let error = connectOnce(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen, timeout: timeout) {
                lastError = "connect to \(host):\(port): \(error)"
            } else {
                return .success(Socket(descriptor: descriptor))
            }
            _ = Glue.close(descriptor)
        }
        return .failure(SocketError(reason: lastError))
    }

    /// Connects, once. A connect a signal interrupts goes on in the kernel (calling it again
    /// answers EALREADY or EISCONN), so after EINTR this waits for its outcome instead.
    private static func connectOnce(
        _ descriptor: Int32, _ address: UnsafePointer<sockaddr>!, _ length: socklen_t, timeout: TimeInterval
    ) -> SystemCallError? {
        if Glue.connect(descriptor, address, length) == 0 { return nil }
        let code = errno
        guard code == EINTR else { return SystemCallError(code: code) }
        var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        switch retryingInterrupts({ poll(&poller, 1, Int32(max(1, timeout * 1000))) }) {
        case .failure(let error): return error
        case .success(0): return SystemCallError(code: ETIMEDOUT)
        case .success: break
        }
        var pending: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &pending, &size) == 0 else { return SystemCallError(code: errno) }
        return pending == 0 ? nil : SystemCallError(code: pending)
    }

    func write(_ bytes: [UInt8]) -> Result<Void, SocketError> {
        var offset = 0
        while offset < bytes.count {
            let sent = retryingInterrupts {
                bytes.withUnsafeBytes { raw in Glue.send(descriptor, raw.baseAddress! + offset, raw.count - offset) }
            }
            switch sent {
            case .success(let count):
                offset += count
            case .failure(let error):
                return .failure(SocketError(reason: error.code == EAGAIN || error.code == EWOULDBLOCK ? "send timed out" : "send: \(error)"))
            }
        }
        return .success(())
    }

    /// Reads until the server closes the connection (it was asked to, with `Connection: close`).
    func readToEnd(limit: Int) -> Result<[UInt8], SocketError> {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count: Int
            switch retryingInterrupts({ chunk.withUnsafeMutableBytes { Glue.recv(descriptor, $0.baseAddress!, $0.count) } }) {
            case .success(let read):
                count = read
            case .failure(let error):
                // A server that sent a complete response may reset instead of closing cleanly.
                if error.code == ECONNRESET, HTTPResponseParser.isComplete(received) { return .success(received) }
                return .failure(
                    SocketError(reason: error.code == EAGAIN || error.code == EWOULDBLOCK ? "no response within the timeout" : "recv: \(error)"))
            }
            if count == 0 { return .success(received) }
            received.append(contentsOf: chunk[0..<count])
            guard received.count <= limit else { return .failure(SocketError(reason: "response larger than \(limit) bytes")) }
        }
    }

    /// Receives what has arrived (blocking until something has, the receive timeout passes or
    /// the connection ends) into `buffer`, from its start.
    ///
    /// - Returns: How many bytes were read: 0 when the peer closed the connection (or the
    ///   socket was shut down); `EAGAIN` / `EWOULDBLOCK` when the receive timeout passed.
    func receive(into buffer: inout [UInt8]) -> Result<Int, SystemCallError> {
        retryingInterrupts { buffer.withUnsafeMutableBytes { Glue.recv(descriptor, $0.baseAddress!, $0.count) } }
    }

    /// How long a receive may block before it fails with `EAGAIN`.
    func setReceiveTimeout(_ timeout: TimeInterval) {
        var seconds = timeval(tv_sec: time_t(timeout), tv_usec: suseconds_t((timeout - timeout.rounded(.down)) * 1_000_000))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() {
        _ = Glue.close(descriptor)
    }
}

/// The C functions whose names the wrapper's own methods shadow.
private enum Glue {
    static func connect(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
        Darwin.connect(descriptor, address, length)
        #elseif canImport(Musl)
        Musl.connect(descriptor, address, length)
        #else
        Glibc.connect(descriptor, address, length)
        #endif
    }

    static func send(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
        Darwin.send(descriptor, buffer, count, 0)
        #elseif canImport(Musl)
        Musl.send(descriptor, buffer, count, Int32(MSG_NOSIGNAL))
        #else
        Glibc.send(descriptor, buffer, count, Int32(MSG_NOSIGNAL))
        #endif
    }

    static func recv(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
        Darwin.recv(descriptor, buffer, count, 0)
        #elseif canImport(Musl)
        Musl.recv(descriptor, buffer, count, 0)
        #else
        Glibc.recv(descriptor, buffer, count, 0)
        #endif
    }

    static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        Darwin.close(descriptor)
        #elseif canImport(Musl)
        Musl.close(descriptor)
        #else
        Glibc.close(descriptor)
        #endif
    }
}

/// Reads HTTP/1.x responses: the head (status line and fields) as soon as it is all there, and
/// how the body is framed. Shared by ``SocketTransport`` (one response read to the end of the
/// connection) and the server tests' raw-socket client (responses read one by one from a kept-alive
/// connection).
public enum HTTPResponseParser {
    public struct ParseError: Error {
        public let reason: String
    }

    /// A response's status line and header fields.
    public struct Head: Sendable {
        public var status: Int
        /// The fields in order, repeated ones included, values trimmed of spaces.
        public var fields: [(name: String, value: String)]
        /// Where the body starts in the bytes parsed.
        public var bodyStart: Int

        /// The value of field `name` (any case); repeated fields joined with ", ".
        public func field(_ name: String) -> String? {
            let values = fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
    }

    /// How a response's body is delimited (RFC 9112 §6.3).
    public enum BodyFraming: Equatable, Sendable {
        /// No body: a HEAD answer, 1xx, 204 or 304.
        case none
        /// `Content-Length` bytes.
        case length(Int)
        /// `Transfer-Encoding: chunked`.
        case chunked
        /// Everything until the server closes the connection.
        case untilClose
    }

    /// The head of the response starting at `start`, or nil while its blank line has not arrived.
    ///
    /// - Throws: ``ParseError`` when the bytes are not an HTTP/1.x response.
    public static func head(in bytes: [UInt8], from start: Int = 0) throws(ParseError) -> Head? {
        guard let end = headEnd(in: bytes, from: start) else { return nil }
        let text = String(decoding: bytes[start..<end], as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...999).contains(status) else {
            throw ParseError(reason: "not an HTTP/1.x status line: \(statusLine.prefix(80))")
        }
        let fields = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].trimmingCharacters(in: .whitespaces), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return Head(status: status, fields: fields, bodyStart: end + 4)
    }

    /// How the body of a response to `method` with this head is delimited.
    ///
    /// - Throws: ``ParseError`` for a `Content-Length` that is not a non-negative integer.
    public static func bodyFraming(of head: Head, method: String) throws(ParseError) -> BodyFraming {
        if method == "HEAD" || (100...199).contains(head.status) || head.status == 204 || head.status == 304 { return .none }
        if head.field("transfer-encoding")?.lowercased().contains("chunked") == true { return .chunked }
        guard let lengthText = head.field("content-length") else { return .untilClose }
        guard let length = Int(lengthText), length >= 0 else { throw ParseError(reason: "invalid Content-Length \(lengthText)") }
        return .length(length)
    }

    /// Whether `bytes` hold a whole response with a `Content-Length` body.
    static func isComplete(_ bytes: [UInt8]) -> Bool {
        guard let head = try? head(in: bytes), case .length(let length)? = try? bodyFraming(of: head, method: "GET") else { return false }
        return bytes.count - head.bodyStart >= length
    }

    /// Parses a complete response read to the end of the connection (interim 1xx responses
    /// skipped).
    package static func parse(_ bytes: [UInt8], method: String) throws(ParseError) -> FeedHTTPResponse {
        var start = 0
        while true {
            guard let head = try head(in: bytes, from: start) else {
                throw ParseError(reason: bytes.count == start ? "the server closed the connection without a response" : "incomplete response head")
            }
            // Interim responses (100 Continue, 103 Early Hints) precede the real one.
            if (100...199).contains(head.status) {
                start = head.bodyStart
                continue
            }
            let rest = bytes[head.bodyStart...]
            let body: [UInt8]
            switch try bodyFraming(of: head, method: method) {
            case .none: body = []
            case .chunked: body = try dechunk(rest)
            case .length(let length):
                guard rest.count >= length else { throw ParseError(reason: "the connection closed after \(rest.count) of \(length) body bytes") }
                body = Array(rest.prefix(length))
            case .untilClose: body = Array(rest)
            }
            var headers: [String: String] = [:]
            for (name, _) in head.fields where headers[name.lowercased()] == nil {
                headers[name.lowercased()] = head.field(name)
            }
            return FeedHTTPResponse(status: head.status, headers: headers, body: body)
        }
    }

    /// The index of the CR LF CR LF that ends the head starting at `start`.
    private static func headEnd(in bytes: [UInt8], from start: Int) -> Int? {
        var end = start
        while end + 4 <= bytes.count {
            if bytes[end] == 13, bytes[end + 1] == 10, bytes[end + 2] == 13, bytes[end + 3] == 10 { return end }
            end += 1
        }
        return nil
    }

    private static func dechunk(_ bytes: ArraySlice<UInt8>) throws(ParseError) -> [UInt8] {
        var body: [UInt8] = []
        var index = bytes.startIndex
        while true {
            guard let lineEnd = bytes[index...].firstIndex(of: 13), lineEnd + 1 < bytes.endIndex, bytes[lineEnd + 1] == 10 else {
                throw ParseError(reason: "truncated chunk size")
            }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw ParseError(reason: "invalid chunk size \(sizeText.prefix(20))")
            }
            index = lineEnd + 2
            if size == 0 { return body }
            guard bytes.endIndex - index >= size + 2 else { throw ParseError(reason: "truncated chunk") }
            body.append(contentsOf: bytes[index..<index + size])
            index += size + 2
        }
    }
}
