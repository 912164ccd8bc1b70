import CZlib
import Synchronization

/// gzip (RFC 1952) over zlib: what the server answers with when a client sends
/// `Accept-Encoding: gzip`, and what a client reads back.
public enum Gzip {
    /// Why a gzip body could not be read.
    public enum DecodingError: Error, Equatable, Sendable {
        /// The bytes are not a complete gzip stream (zlib's message).
        case malformed(String)
        /// The body would decompress to more than the limit the caller set.
        case tooLarge(limit: Int)
    }

    /// `bytes` as one gzip member at `level` (1 fastest … 9 smallest), or nil if zlib refuses
    /// (it only does for an invalid level or out of memory).
    ///
    /// Streams are kept in a pool and reset between bodies, so a body does not allocate and free
    /// zlib's compressor state (about 260 KB) each time.
    public static func compress(_ bytes: [UInt8], level: Int) -> [UInt8]? {
        guard (1...9).contains(level) || level == Int(Z_DEFAULT_COMPRESSION) else { return nil }
        guard let stream = Deflater.take(level: Int32(level)) else { return nil }
        defer { Deflater.give(stream) }
        return stream.compress(bytes)
    }

    /// The bytes a gzip stream holds, refusing to produce more than `limit` bytes (so a small
    /// body cannot expand into gigabytes in the reader's memory).
    ///
    /// - Throws: ``DecodingError``.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(DecodingError) -> [UInt8] {
        var stream = z_stream()
        guard czlib_inflate_init(&stream, 15 + 16) == Z_OK else { throw .malformed("inflateInit2 failed") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var status: Int32 = Z_OK
        var consumedAll = false
        bytes.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            repeat {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[..<produced])
            } while status == Z_OK && output.count <= limit && (stream.avail_in > 0 || stream.avail_out == 0)
            consumedAll = stream.avail_in == 0
        }
        guard output.count <= limit else { throw .tooLarge(limit: limit) }
        guard status == Z_STREAM_END, consumedAll else {
            let message = stream.msg.map { String(cString: $0) } ?? (status == Z_OK || status == Z_BUF_ERROR ? "truncated" : "status \(status)")
            throw .malformed(message)
        }
        return output
    }
}

/// One zlib compressor, reset between bodies (see ``Gzip/compress(_:level:)``).
private final class Deflater: @unchecked Sendable {
    private let stream: UnsafeMutablePointer<z_stream>
    private(set) var level: Int32

    /// Streams not in use, at most a few per core.
    private static let pool = Mutex<[Deflater]>([])
    private static let poolLimit = 16

    private init?(level: Int32) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 15 bits of window, +16: a gzip header and trailer instead of zlib's.
        guard czlib_deflate_init(stream, level, 15 + 16) == Z_OK else {
            stream.deallocate()
            return nil
        }
        self.level = level
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// A stream at `level`, from the pool or new.
    static func take(level: Int32) -> Deflater? {
        if let pooled = pool.withLock({ $0.popLast() }) {
            if pooled.level != level {
                guard deflateParams(pooled.stream, level, Z_DEFAULT_STRATEGY) == Z_OK else { return Deflater(level: level) }
                pooled.level = level
            }
            return pooled
        }
        return Deflater(level: level)
    }

    /// Returns a stream to the pool (or lets it go when the pool is full).
    static func give(_ deflater: Deflater) {
        pool.withLock { pool in
            if pool.count < poolLimit { pool.append(deflater) }
        }
    }

    /// `bytes` as one gzip member; the stream is reset afterwards for the next body.
    func compress(_ bytes: [UInt8]) -> [UInt8]? {
        defer { deflateReset(stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(bytes.count))) + 32)
        let status: Int32 = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.pointee.avail_in = uInt(input.count)
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = uInt(out.count)
                return deflate(stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeLast(output.count - Int(stream.pointee.total_out))
        return output
    }
}
