import FeedWire

/// The binary form of a stored ``SnapshotStructure``, about half the size of its JSON and
/// written with plain byte copies:
///
///     0x01 viewer limit offset width+1|0 stack_ads(0|1) sectionCount
///       { id kind itemCount { id version } }
///
/// Integers are LEB128 varints (zigzag for the viewer); strings are a varint length and UTF-8
/// bytes; an item version of 16 lowercase hex digits is 8 bytes after a 0x00 tag, any other
/// text is a 0x01 tag and a string.
enum SnapshotCoding {
    static let formatByte: UInt8 = 0x01

    struct Malformed: Error {}

    static func encode(_ structure: SnapshotStructure) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + structure.sections.reduce(0) { $0 + 24 + $1.items.count * 24 })
        out.append(formatByte)
        let viewer = structure.viewer
        varint(UInt64(bitPattern: (viewer << 1) ^ (viewer >> 63)), to: &out)
        varint(UInt64(max(0, structure.parameters.limit)), to: &out)
        varint(UInt64(max(0, structure.parameters.offset)), to: &out)
        varint(structure.parameters.width.map { UInt64(max(0, $0)) + 1 } ?? 0, to: &out)
        out.append(structure.parameters.stackAds ? 1 : 0)
        varint(UInt64(structure.sections.count), to: &out)
        for section in structure.sections {
            string(section.id, to: &out)
            string(section.kind, to: &out)
            varint(UInt64(section.items.count), to: &out)
            for item in section.items {
                string(item.id, to: &out)
                if let version = hexValue(item.version) {
                    out.append(0)
                    for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: version >> UInt64(shift))) }
                } else {
                    out.append(1)
                    string(item.version, to: &out)
                }
            }
        }
        return out
    }

    package static func decode(_ bytes: [UInt8]) throws -> SnapshotStructure {
        var reader = Reader(bytes: bytes, position: 1)
        guard bytes.first == formatByte else { throw Malformed() }
        let zigzag = try reader.varint()
        let viewer = Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
        let limit = Int(try reader.varint())
        let offset = Int(try reader.varint())
        let width = try reader.varint()
        let stackAds = try reader.byte() == 1
        let parameters = FeedParameters(limit: limit, offset: offset, width: width == 0 ? nil : Int(width - 1), stackAds: stackAds)
        let sectionCount = Int(try reader.varint())
        guard sectionCount <= bytes.count else { throw Malformed() }
        var sections: [SnapshotStructure.Section] = []
        sections.reserveCapacity(sectionCount)
        for _ in 0..<sectionCount {
            let id = try reader.string()
            let kind = try reader.string()
            let itemCount = Int(try reader.varint())
            guard itemCount <= bytes.count else { throw Malformed() }
            var items: [SnapshotStructure.Item] = []
            items.reserveCapacity(itemCount)
            for _ in 0..<itemCount {
                let itemID = try reader.string()
                let version: String
                switch try reader.byte() {
                case 0:
                    var value: UInt64 = 0
                    for _ in 0..<8 { value = value << 8 | UInt64(try reader.byte()) }
                    version = hex16(value)
                case 1:
                    version = try reader.string()
                default:
                    throw Malformed()
                }
                items.append(SnapshotStructure.Item(id: itemID, version: version))
            }
            sections.append(SnapshotStructure.Section(id: id, kind: kind, items: items))
        }
        guard reader.position == bytes.count else { throw Malformed() }
        return SnapshotStructure(viewer: viewer, parameters: parameters, sections: sections)
    }

    private static func varint(_ value: UInt64, to out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    private static func string(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            varint(UInt64(bytes.count), to: &out)
            out.append(contentsOf: bytes)
        }
    }

    /// The value of exactly 16 lowercase hex digits, else nil.
    private static func hexValue(_ text: String) -> UInt64? {
        var text = text
        return text.withUTF8 { bytes -> UInt64? in
            guard bytes.count == 16 else { return nil }
            var value: UInt64 = 0
            for byte in bytes {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                default: return nil
                }
                value = value << 4 | UInt64(digit)
            }
            return value
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var position: Int

        mutating func byte() throws -> UInt8 {
            guard position < bytes.count else { throw Malformed() }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let next = try byte()
                guard shift < 64 else { throw Malformed() }
                value |= UInt64(next & 0x7F) << shift
                if next & 0x80 == 0 { return value }
                shift += 7
            }
        }

        mutating func string() throws -> String {
            let count = Int(try varint())
            guard count >= 0, count <= bytes.count - position else { throw Malformed() }
            defer { position += count }
            return String(decoding: bytes[position..<position + count], as: UTF8.self)
        }
    }
}
