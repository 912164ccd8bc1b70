import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Decodes a `Transfer-Encoding: chunked` body as its bytes arrive, in pieces cut anywhere
/// (``SocketTransport`` reads whole responses and dechunks them at once; a live stream cannot
/// wait for the end).
package struct ChunkedBodyDecoder: Sendable {
    private enum State: Sendable {
        /// Reading a chunk-size line (hex size, optional `;extensions`, CR LF).
        case size
        /// Inside a chunk: this many data bytes to go.
        case data(Int)
        /// After a chunk's data: its CR, then its LF.
        case dataCR
        case dataLF
        /// After the last (zero) chunk: trailer fields, up to a blank line.
        case trailers
        case done
    }

    private var state = State.size
    /// The bytes of the size or trailer line being read.
    private var line: [UInt8] = []

    /// Whether the last chunk and the trailers have arrived: the body is complete.
    package var isFinished: Bool {
        if case .done = state { return true }
        return false
    }

    package init() {}

    /// Decodes the next bytes of the body (bytes past its end are ignored).
    ///
    /// - Returns: The data they carry (possibly none).
    /// - Throws: ``HTTPResponseParser/ParseError`` for a size that is not hex, a chunk not
    ///   followed by CR LF, or a size or trailer line longer than 4 KiB.
    package mutating func decode(_ bytes: ArraySlice<UInt8>) throws(HTTPResponseParser.ParseError) -> [UInt8] {
        var output: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            switch state {
            case .done:
                return output
            case .data(let remaining):
                let end = min(bytes.endIndex, index + remaining)
                output.append(contentsOf: bytes[index..<end])
                state = remaining - (end - index) == 0 ? .dataCR : .data(remaining - (end - index))
                index = end
            case .dataCR:
                guard bytes[index] == 13 else { throw HTTPResponseParser.ParseError(reason: "a chunk's data is not followed by CR LF") }
                state = .dataLF
                index += 1
            case .dataLF:
                guard bytes[index] == 10 else { throw HTTPResponseParser.ParseError(reason: "a chunk's data is not followed by CR LF") }
                state = .size
                index += 1
            case .size, .trailers:
                guard let lineFeed = bytes[index...].firstIndex(of: 10) else {
                    line.append(contentsOf: bytes[index...])
                    index = bytes.endIndex
                    guard line.count <= 4096 else { throw HTTPResponseParser.ParseError(reason: "a chunk-size or trailer line longer than 4 KiB") }
                    continue
                }
                line.append(contentsOf: bytes[index..<lineFeed])
                index = lineFeed + 1
                if line.last == 13 { line.removeLast() }
                let text = String(decoding: line, as: UTF8.self)
                line.removeAll(keepingCapacity: true)
                if case .trailers = state {
                    if text.isEmpty { state = .done }
                    continue
                }
                let sizeText = (text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                    .trimmingCharacters(in: .whitespaces)
                guard !sizeText.isEmpty, sizeText.count <= 15, let size = Int(sizeText, radix: 16), size >= 0 else {
                    throw HTTPResponseParser.ParseError(reason: "invalid chunk size \(text.prefix(20))")
                }
                state = size == 0 ? .trailers : .data(size)
            }
        }
        return output
    }
}

/// Lets another thread stop a thread that is blocked on a socket or sleeping between attempts:
/// ``cancel()`` shuts the attached socket down (its blocked `recv` returns at once) and ends the
/// sleep. The socket is closed by its own thread, after ``detach()``, so its descriptor is never
/// shut down after it was closed and perhaps reused.
final class SocketCancellation: @unchecked Sendable {
    // @unchecked: every member is guarded by `condition`.
    private let condition = NSCondition()
    private var cancelled = false
    private var descriptor: Int32?

    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    /// Marks the work cancelled, shuts down the attached socket and wakes a sleep.
    func cancel() {
        condition.lock()
        defer { condition.unlock() }
        cancelled = true
        if let descriptor { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
        condition.broadcast()
    }

    /// Attaches the socket a thread is about to block on.
    ///
    /// - Returns: false when the work is cancelled already (the caller closes the socket).
    func attach(_ socket: Socket) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !cancelled else { return false }
        descriptor = socket.descriptor
        return true
    }

    /// Detaches the socket before its thread closes it.
    func detach() {
        condition.lock()
        defer { condition.unlock() }
        descriptor = nil
    }

    /// Sleeps for `seconds` unless cancelled first.
    ///
    /// - Returns: false when cancelled (before or during the sleep).
    func sleep(_ seconds: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !cancelled {
            if !condition.wait(until: deadline) { return !cancelled }
        }
        return false
    }
}

/// The body of a response read as it arrives, whatever its framing.
struct StreamingBody {
    private let framing: HTTPResponseParser.BodyFraming
    private var chunked = ChunkedBodyDecoder()
    private var remaining: Int

    init(framing: HTTPResponseParser.BodyFraming) {
        self.framing = framing
        if case .length(let length) = framing { remaining = length } else { remaining = 0 }
    }

    /// Whether the whole body has arrived (never, for a body read until the server closes).
    var isComplete: Bool {
        switch framing {
        case .none: true
        case .length: remaining == 0
        case .chunked: chunked.isFinished
        case .untilClose: false
        }
    }

    /// The body's data in the next bytes read from the connection.
    mutating func decode(_ bytes: ArraySlice<UInt8>) throws(HTTPResponseParser.ParseError) -> [UInt8] {
        switch framing {
        case .none:
            return []
        case .length:
            let taken = bytes.prefix(remaining)
            remaining -= taken.count
            return Array(taken)
        case .chunked:
            return try chunked.decode(bytes)
        case .untilClose:
            return Array(bytes)
        }
    }
}
