import EventHTTP
import HTTPTestSupport
import Logging
import Synchronization
import Testing

/// A log handler that keeps every message, for tests that read the access log.
struct RecordingLogHandler: LogHandler {
    final class Store: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    let store: Store
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.lines.withLock { $0.append(event.message.description) }
    }
}

@Suite("Access log")
struct AccessLogTests {
    /// Before: the request target was logged raw, so `ESC[2J` cleared the operator's terminal.
    @Test("Control characters in the target are escaped") func controlCharactersInTheTargetAreEscaped() throws {
        let store = RecordingLogHandler.Store()
        try withTestServer(
            threads: 1,
            configure: { configuration in
                configuration.logger = Logger(label: "test") { _ in RecordingLogHandler(store: store) }
                configuration.logger.logLevel = .info
            }
        ) { server in
            let client = try RawHTTPClient(port: server.port)
            client.send("GET /x\u{1B}[2J\u{7F}\u{9B}\\ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 404)
        }
        let lines = store.all.filter { $0.hasPrefix("GET /x") }
        #expect(lines.count == 1)
        let line = lines.first ?? ""
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "raw control characters: \(line.debugDescription)")
        #expect(line.hasPrefix(#"GET /x\x1b[2J\x7f\u{9b}\\ 404"#), "\(line.debugDescription)")
    }
}
