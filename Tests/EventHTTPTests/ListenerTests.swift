import EventHTTP
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Listening sockets")
struct ListenerTests {
    func option(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, level, name, &value, &length)
        return value
    }

    /// Without TCP_NODELAY a feed response (headers, then a body larger than a segment) waited
    /// for the client's delayed ACK: 40 ms a request, 358 req/s instead of 10,800 under wrk.
    @Test("Listener disables nagle so accepted sockets inherit it") func listenerDisablesNagleSoAcceptedSocketsInheritIt() throws {
        let listener = try makeListeningSocket(host: "127.0.0.1", port: 0, backlog: 16)
        defer { close(listener.fd) }
        #expect(option(listener.fd, Int32(IPPROTO_TCP), TCP_NODELAY) != 0)
        #expect(option(listener.fd, SOL_SOCKET, SO_REUSEPORT) != 0)
        #expect(listener.port > 0)
    }

    @Test("Second listener shares the port through reuse port") func secondListenerSharesThePortThroughReusePort() throws {
        let first = try makeListeningSocket(host: "127.0.0.1", port: 0, backlog: 16)
        defer { close(first.fd) }
        let second = try makeListeningSocket(host: "127.0.0.1", port: first.port, backlog: 16)
        defer { close(second.fd) }
        #expect(second.port == first.port)
    }

    @Test("Unparsable host is an error") func unparsableHostIsAnError() {
        #expect(throws: SystemError.self) { try makeListeningSocket(host: "not-an-address", port: 0, backlog: 16) }
    }
}
