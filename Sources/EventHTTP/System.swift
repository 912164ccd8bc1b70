import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: which one, and errno.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The call that failed (`bind`, `listen`…).
    public var call: String
    /// The errno it left.
    public var errno: Int32

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Runs a system call, retrying on EINTR and turning -1 into a ``SystemError``.
/// Every return code of the server's own system calls passes through here.
@discardableResult
func systemCall(_ name: String, _ body: () -> Int32) throws(SystemError) -> Int32 {
    switch retryingInterrupts(body) {
    case .success(let result):
        return result
    case .failure(let error):
        // EBADF and EFAULT mean the server passed a wrong fd or pointer: a bug, not a condition.
        precondition(error.code != EBADF && error.code != EFAULT, "\(name): \(error)")
        throw SystemError(call: name, errno: error.code)
    }
}

/// Nanoseconds on the monotonic clock.
@inline(__always)
package func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

func systemProcessorCount() -> Int {
    Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
}

/// A bound, listening, non-blocking TCP socket with SO_REUSEPORT, so every worker can have one
/// on the same address and the kernel balances connections between them.
///
/// - Returns: the file descriptor and the port actually bound (useful when asked for port 0).
/// - Throws: ``SystemError`` when the address does not parse or a call fails.
package func makeListeningSocket(host: String, port: Int, backlog: Int32) throws(SystemError) -> (fd: Int32, port: Int) {
    // A numeric address only (no name lookup), IPv4 or IPv6, parsed by the C library.
    var hints = addrinfo()
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE
    #if canImport(Glibc)
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
    hints.ai_socktype = SOCK_STREAM
    #endif
    var found: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &found) == 0, let info = found?.pointee, let address = info.ai_addr else {
        throw SystemError(call: "getaddrinfo(\(host))", errno: EINVAL)
    }
    defer { freeaddrinfo(found) }
    var storage = sockaddr_storage()
    let length = info.ai_addrlen
    let family = info.ai_family
    withUnsafeMutableBytes(of: &storage) { raw in raw.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
    #if canImport(Glibc)
    let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    #else
    let streamType = SOCK_STREAM
    #endif
    let fd = try systemCall("socket") { socket(family, streamType, 0) }
    do {
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        try systemCall("setsockopt(SO_REUSEADDR)") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, size) }
        try systemCall("setsockopt(SO_REUSEPORT)") { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, size) }
        // Accepted sockets inherit it on Linux. Without it, a response written in two pieces
        // (headers, then a body past one segment) waits for the client's delayed ACK: 40 ms.
        try systemCall("setsockopt(TCP_NODELAY)") { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, size) }
        try systemCall("bind(\(host):\(port))") {
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
        }
        try systemCall("listen") { listen(fd, backlog) }
        var bound = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        try systemCall("getsockname") {
            withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &boundLength) }
            }
        }
        let boundPort: UInt16 = withUnsafeBytes(of: bound) { raw in
            // sin_port and sin6_port sit at the same offset, right after the family.
            raw.load(fromByteOffset: 2, as: UInt16.self)
        }
        return (fd, Int(UInt16(bigEndian: boundPort)))
    } catch {
        close(fd)
        throw error
    }
}

/// Shuts a connected socket down in both directions so its event loop sees EOF and frees it.
func shutdownSocket(_ fd: Int32) {
    // ENOTCONN when the peer already left: nothing to do either way.
    _ = shutdown(fd, Int32(SHUT_RDWR))
}
