import CLibdeflate
import CZlib
import Synchronization

/// gzip (RFC 1952): what the server answers with when a client sends `Accept-Encoding: gzip`
/// (written with libdeflate), and what a client reads back (read with zlib, which streams and
/// can stop at a size limit).
public enum Gzip {
    /// Why a gzip body could not be read.
    public enum DecodingError: Error, Equatable, Sendable {
        /// The bytes are not a complete gzip stream (zlib's message).
        case malformed(String)
        /// The body would decompress to more than the limit the caller set.
        case tooLarge(limit: Int)
    }

    /// `bytes` as one gzip member at `level` (1 fastest … 9 smallest; -1, zlib's default, is 6),
    /// or nil for another level (or when out of memory).
    ///
    /// libdeflate writes the whole body in one call, with no stream to reset between bodies:
    /// on the server's deltas (0.3 to 7 KB) two to three times faster than zlib at the same
    /// level, and a few bytes smaller. Compressors are kept in a pool, so a body does not
    /// allocate one (hundreds of KB) each time. What it writes is plain gzip, read back with
    /// ``decompress(_:limit:)`` (zlib) or any gzip reader.
    public static func compress(_ bytes: [UInt8], level: Int) -> [UInt8]? {
        let level = level == -1 ? 6 : level
        guard (1...9).contains(level) else { return nil }
        guard let compressor = Compressor.take(level: Int32(level)) else { return nil }
        defer { Compressor.give(compressor) }
        return compressor.compress(bytes)
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

/// One libdeflate compressor at one level (see ``Gzip/compress(_:level:)``); not thread-safe,
/// so a body takes one from the pool and gives it back.
private final class Compressor: @unchecked Sendable {
    private let compressor: OpaquePointer
    let level: Int32

    /// Compressors not in use, at most a few per core, of any level.
    private static let pool = Mutex<[Compressor]>([])
    private static let poolLimit = 16

    private init?(level: Int32) {
        guard let compressor = libdeflate_alloc_compressor(level) else { return nil }
        self.compressor = compressor
        self.level = level
    }

    deinit {
        libdeflate_free_compressor(compressor)
    }

    /// A compressor at `level`, from the pool or new.
    static func take(level: Int32) -> Compressor? {
        let pooled = pool.withLock { pool -> Compressor? in
            guard let index = pool.lastIndex(where: { $0.level == level }) else { return nil }
            return pool.remove(at: index)
        }
        return pooled ?? Compressor(level: level)
    }

    /// Returns a compressor to the pool (or lets it go when the pool is full).
    static func give(_ compressor: Compressor) {
        pool.withLock { pool in
            if pool.count < poolLimit { pool.append(compressor) }
        }
    }

    /// `bytes` as one gzip member.
    func compress(_ bytes: [UInt8]) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: libdeflate_gzip_compress_bound(compressor, bytes.count))
        let written = bytes.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                libdeflate_gzip_compress(compressor, input.baseAddress, input.count, out.baseAddress, out.count)
            }
        }
        guard written > 0 else { return nil }
        output.removeLast(output.count - written)
        return output
    }
}
