import FeedStore
import Gzip

/// What a row of `snapshot_log` holds besides its body: its tombstones (applied first) and its
/// stored entries, in the order of their bytes in the body.
///
/// Encoding, gzipped as a whole (the ids are hex, the viewers and orders close together: about
/// half the bytes): a version byte (1), then the tombstone count and each tombstone (kind byte, viewer,
/// id, target row), then the stored count and each entry (kind byte, viewer, id, created at,
/// order, length). Integers are LEB128 varints, signed ones zigzagged; an id is its length (one
/// byte, at most 128) and its ASCII bytes. The body is the stored entries' bytes, one after the
/// other, as one gzip member (empty when they are all empty).
package struct RowDirectory: Equatable, Sendable {
    package var tombstones: [SnapshotLog.Tombstone]
    package var stored: [SnapshotLog.StoredEntry]

    /// Why a row could not be read.
    package struct Malformed: Error, CustomStringConvertible {
        package var description: String
    }

    func encoded() -> [UInt8] {
        Self.compress(raw())
    }

    private func raw() -> [UInt8] {
        var out: [UInt8] = [1]
        Self.unsigned(UInt64(tombstones.count), to: &out)
        for tombstone in tombstones {
            out.append(tombstone.kind.rawValue)
            Self.signed(tombstone.viewer, to: &out)
            Self.text(tombstone.id, to: &out)
            Self.signed(tombstone.target, to: &out)
        }
        Self.unsigned(UInt64(stored.count), to: &out)
        for entry in stored {
            out.append(entry.kind.rawValue)
            Self.signed(entry.viewer, to: &out)
            Self.text(entry.id, to: &out)
            Self.signed(entry.createdAt, to: &out)
            Self.unsigned(entry.order, to: &out)
            Self.unsigned(UInt64(entry.length), to: &out)
        }
        return out
    }

    init(tombstones: [SnapshotLog.Tombstone], stored: [SnapshotLog.StoredEntry]) {
        self.tombstones = tombstones
        self.stored = stored
    }

    init(decoding compressed: [UInt8]) throws(Malformed) {
        let bytes: [UInt8]
        do {
            bytes = try Gzip.decompress(compressed, limit: 1 << 30)
        } catch {
            throw Malformed(description: "row directory: \(error)")
        }
        var reader = Reader(bytes: bytes)
        guard try reader.byte() == 1 else { throw Malformed(description: "unknown row version") }
        var tombstones: [SnapshotLog.Tombstone] = []
        for _ in 0..<(try reader.count()) {
            tombstones.append(.init(kind: try reader.kind(), viewer: try reader.signed(), id: try reader.text(), target: try reader.signed()))
        }
        var stored: [SnapshotLog.StoredEntry] = []
        for _ in 0..<(try reader.count()) {
            stored.append(
                .init(
                    kind: try reader.kind(), viewer: try reader.signed(), id: try reader.text(), createdAt: try reader.signed(), order: try reader.unsigned(),
                    length: try reader.count()))
        }
        guard reader.offset == bytes.count else { throw Malformed(description: "trailing bytes in a row directory") }
        self.init(tombstones: tombstones, stored: stored)
    }

    /// The bytes of the stored entry at `index`, from the row's `body`.
    func bytes(at index: Int, body: [UInt8]) throws(Malformed) -> [UInt8] {
        let content = try self.content(body: body)
        let start = stored[..<index].reduce(0) { $0 + $1.length }
        return Array(content[start..<start + stored[index].length])
    }

    /// Every stored entry's bytes, one after the other, from the row's `body`.
    func content(body: [UInt8]) throws(Malformed) -> [UInt8] {
        let total = stored.reduce(0) { $0 + $1.length }
        let content: [UInt8]
        if total == 0 {
            content = []
        } else {
            do {
                content = try Gzip.decompress(body, limit: total)
            } catch {
                throw Malformed(description: "row body: \(error)")
            }
        }
        guard content.count == total else { throw Malformed(description: "row body of \(content.count) bytes, directory says \(total)") }
        return content
    }

    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        // Level 1 (libdeflate): a batch's rows keep 11 % of their bytes at 50 writes/s and 22 %
        // at 500, about 7 % more than level 6, in 42–58 % of its time; the maintenance thread
        // that writes them spent about a third of itself at level 6 at 500 writes/s
        // (BENCHMARKS, session 28; an earlier "a third more bytes" was zlib's level 1).
        guard let compressed = Gzip.compress(bytes, level: 1) else { preconditionFailure("gzip refused a valid level") }
        return compressed
    }

    private static func unsigned(_ value: UInt64, to out: inout [UInt8]) {
        LEB128.append(value, to: &out)
    }

    private static func signed(_ value: Int64, to out: inout [UInt8]) {
        LEB128.appendZigZag(value, to: &out)
    }

    private static func text(_ value: String, to out: inout [UInt8]) {
        let utf8 = Array(value.utf8)
        out.append(UInt8(utf8.count))
        out.append(contentsOf: utf8)
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func byte() throws(Malformed) -> UInt8 {
            guard offset < bytes.count else { throw Malformed(description: "row directory ends early") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func unsigned() throws(Malformed) -> UInt64 {
            guard let value = LEB128.read(bytes, at: &offset) else { throw Malformed(description: "a varint runs past the row directory or 64 bits") }
            return value
        }

        mutating func signed() throws(Malformed) -> Int64 {
            LEB128.zigZagDecoded(try unsigned())
        }

        mutating func count() throws(Malformed) -> Int {
            let value = try unsigned()
            guard value <= UInt64(Int32.max) else { throw Malformed(description: "count out of range") }
            return Int(value)
        }

        mutating func kind() throws(Malformed) -> SnapshotLog.Kind {
            guard let kind = SnapshotLog.Kind(rawValue: try byte()) else { throw Malformed(description: "unknown entry kind") }
            return kind
        }

        mutating func text() throws(Malformed) -> String {
            let length = Int(try byte())
            guard offset + length <= bytes.count else { throw Malformed(description: "row directory ends early") }
            defer { offset += length }
            return String(decoding: bytes[offset..<offset + length], as: UTF8.self)
        }
    }
}
