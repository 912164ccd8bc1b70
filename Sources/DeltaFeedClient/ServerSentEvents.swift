/// One event of a Server-Sent Events stream (`text/event-stream`), as the parser dispatches it
/// at the blank line that ends it.
public struct ServerSentEvent: Hashable, Sendable {
    /// The `event:` field, or `message` when the event named none.
    public var type: String
    /// The `data:` lines, joined with `\n`.
    public var data: String
    /// The stream's last `id:` up to this event (`""` when none was ever sent): what a client
    /// resends as `Last-Event-ID` when it reconnects. An `id:` stays in force for the events
    /// after it until another replaces it.
    public var lastEventID: String

    /// Creates an event.
    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// Reads a Server-Sent Events stream as its bytes arrive, in chunks cut anywhere, and hands back
/// each event once the blank line ending it has arrived. It follows the HTML standard's
/// "interpreting an event stream":
///
/// - lines end with CR LF, LF or CR (a CR LF cut between two chunks is one line break);
/// - a line starting with `:` is a comment (heartbeats): ignored;
/// - `field: value` (one space after the colon dropped), or `field` alone with an empty value;
///   `event`, `data` (lines joined with `\n`), `id` (ignored if it holds a NUL) and `retry`
///   (ASCII digits only, milliseconds: ``retry``) are read, other fields ignored;
/// - a blank line dispatches the event, unless it has no `data` line at all;
/// - a leading byte order mark is skipped; an event the stream ends in the middle of is dropped
///   (the parser simply never sees its blank line).
///
///     var parser = ServerSentEventParser()
///     for event in try parser.parse(chunk) { … }
///     parser.retry   // the reconnection delay the server asked for, if it did
public struct ServerSentEventParser: Sendable {
    /// The most bytes one line or one event's data may take: beyond, `parse(_:)` throws
    /// (a stream that never ends its line must not fill the memory).
    public let maximumEventSize: Int
    /// The reconnection delay in milliseconds the stream's last valid `retry:` asked for; nil
    /// before one.
    public private(set) var retry: Int?
    /// The last event ID of the stream as of the last blank line (`""` before any `id:`).
    public private(set) var lastEventID = ""

    /// The bytes of a line whose end has not arrived.
    private var line: [UInt8] = []
    /// Whether the previous chunk ended with a CR (an LF starting this one belongs to it).
    private var afterCR = false
    /// Whether no line has been read yet (a byte order mark may start the stream).
    private var atStart = true
    private var eventType = ""
    private var data: [UInt8] = []
    private var idBuffer = ""

    private static let lf = UInt8(ascii: "\n")
    private static let cr = UInt8(ascii: "\r")
    private static let colon = UInt8(ascii: ":")
    private static let space = UInt8(ascii: " ")

    /// Why the parser gave up.
    public struct Overflow: Error, Hashable, Sendable, CustomStringConvertible {
        /// The limit passed.
        public let limit: Int

        /// A sentence saying so.
        public var description: String { "a Server-Sent Events line or event is larger than \(limit) bytes" }
    }

    /// Creates a parser at the start of a stream.
    ///
    /// - Parameter maximumEventSize: the largest line or event data accepted (default 64 MiB).
    public init(maximumEventSize: Int = 64 << 20) {
        self.maximumEventSize = maximumEventSize
    }

    /// Reads the next bytes of the stream.
    ///
    /// - Returns: The events the bytes complete, in order (often none).
    /// - Throws: ``Overflow`` when a line or an event's data passes ``maximumEventSize``.
    public mutating func parse(_ bytes: [UInt8]) throws(Overflow) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        var index = bytes.startIndex
        if afterCR, index < bytes.endIndex {
            afterCR = false
            if bytes[index] == Self.lf { index += 1 }
        }
        var lineStart = index
        while let end = bytes[index...].firstIndex(where: { $0 == Self.lf || $0 == Self.cr }) {
            if line.isEmpty {
                try take(bytes[lineStart..<end], into: &events)
            } else {
                line.append(contentsOf: bytes[lineStart..<end])
                let whole = line
                line.removeAll(keepingCapacity: true)
                try take(whole[...], into: &events)
            }
            index = end + 1
            if bytes[end] == Self.cr {
                if index == bytes.endIndex {
                    afterCR = true
                } else if bytes[index] == Self.lf {
                    index += 1
                }
            }
            lineStart = index
        }
        if lineStart < bytes.endIndex {
            line.append(contentsOf: bytes[lineStart...])
            guard line.count <= maximumEventSize else { throw Overflow(limit: maximumEventSize) }
        }
        return events
    }

    /// Reads a string's UTF-8 bytes (for tests and tools).
    public mutating func parse(_ text: String) throws(Overflow) -> [ServerSentEvent] {
        try parse(Array(text.utf8))
    }

    /// Handles one line, without its line break.
    private mutating func take(_ line: ArraySlice<UInt8>, into events: inout [ServerSentEvent]) throws(Overflow) {
        var line = line
        if atStart {
            atStart = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line = line.dropFirst(3) }
        }
        guard let first = line.first else {
            dispatch(into: &events)
            return
        }
        if first == Self.colon { return }
        let name: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: Self.colon) {
            name = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == Self.space { value = value.dropFirst() }
        } else {
            name = line
            value = []
        }
        if name.elementsEqual("data".utf8) {
            data.append(contentsOf: value)
            data.append(Self.lf)
            guard data.count <= maximumEventSize else { throw Overflow(limit: maximumEventSize) }
        } else if name.elementsEqual("event".utf8) {
            eventType = String(decoding: value, as: UTF8.self)
        } else if name.elementsEqual("id".utf8) {
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        } else if name.elementsEqual("retry".utf8) {
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let milliseconds = Int(String(decoding: value, as: UTF8.self))
            {
                retry = milliseconds
            }
        }
    }

    /// The blank line: the event gathered so far, if it has data.
    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        lastEventID = idBuffer
        defer {
            data.removeAll(keepingCapacity: true)
            eventType = ""
        }
        guard !data.isEmpty else { return }
        data.removeLast()
        events.append(ServerSentEvent(type: eventType.isEmpty ? "message" : eventType, data: String(decoding: data, as: UTF8.self), lastEventID: idBuffer))
    }
}
