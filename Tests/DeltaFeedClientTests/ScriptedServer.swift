import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let streamSocket = Int32(SOCK_STREAM.rawValue)
private let noSignal = Int32(MSG_NOSIGNAL)
#else
private let streamSocket = SOCK_STREAM
private let noSignal: Int32 = 0
#endif

/// A loopback TCP server whose answers a test writes byte for byte: for cuts, silences and
/// events a real server does not send on demand. Each connection's request head is recorded,
/// then `answer` says what to send and whether to close; a connection left open is watched
/// until the client closes it.
final class ScriptedServer: @unchecked Sendable {
    // @unchecked: the recorded state is guarded by `lock`.

    /// What to send on the connection with this index (from 0), given its request head.
    typealias Answer = @Sendable (_ index: Int, _ request: String) -> (bytes: [UInt8], close: Bool)

    let port: Int
    private let listener: Int32
    private let answer: Answer
    private let lock = NSLock()
    private var _requests: [String] = []
    private var _closedByClient: Set<Int> = []
    private var open: [Int32] = []
    private var stopped = false

    init(answer: @escaping Answer) throws {
        self.answer = answer
        let descriptor = socket(AF_INET, streamSocket, 0)
        guard descriptor >= 0 else { throw LiveTestFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw LiveTestFailure("bind/listen: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// The request heads received, one per connection.
    var requests: [String] { lock.withLock { _requests } }
    /// The connections (by index) left open that the client then closed.
    var closedByClient: Set<Int> { lock.withLock { _closedByClient } }

    /// Stops accepting and closes every connection still open.
    func stop() {
        let descriptors = lock.withLock {
            stopped = true
            return open
        }
        _ = shutdown(listener, Int32(SHUT_RDWR))
        for descriptor in descriptors { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                break
            }
            if lock.withLock({ stopped }) {
                close(connection)
                break
            }
            Thread { [self] in serve(connection) }.start()
        }
        close(listener)
    }

    private func serve(_ connection: Int32) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.ends(with: Array("\r\n\r\n".utf8)) {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress!, $0.count, 0) }
            if count <= 0 {
                close(connection)
                return
            }
            received += buffer[0..<count]
        }
        let request = String(decoding: received, as: UTF8.self)
        let index = lock.withLock {
            _requests.append(request)
            open.append(connection)
            return _requests.count - 1
        }
        let (bytes, shouldClose) = answer(index, request)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { send(connection, $0.baseAddress! + sent, $0.count - sent, noSignal) }
            if count <= 0 { break }
            sent += count
        }
        if !shouldClose {
            // Held open: wait for the client to close (or stop() to shut it down).
            while buffer.withUnsafeMutableBytes({ recv(connection, $0.baseAddress!, $0.count, 0) }) > 0 {}
            lock.withLock {
                if !stopped { _closedByClient.insert(index) }
            }
        }
        lock.withLock { open.removeAll { $0 == connection } }
        close(connection)
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
