/// Unsigned LEB128 varints (7 bits a byte, low first, the high bit set on all but the last) and
/// their zigzag form for signed values: the integers of the stored binary forms, snapshot
/// structures (`SnapshotCoding`) and the SQLite snapshot log's row directories.
package enum LEB128 {
    /// Appends `value` as a varint.
    @inlinable
    package static func append(_ value: UInt64, to out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    /// Appends `value` zigzagged (small negative numbers stay short) as a varint.
    @inlinable
    package static func appendZigZag(_ value: Int64, to out: inout [UInt8]) {
        append(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &out)
    }

    /// The varint at `position` of `bytes`, moving `position` past it; nil when the bytes end
    /// first or it runs past 64 bits.
    @inlinable
    package static func read(_ bytes: [UInt8], at position: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.count, shift < 64 {
            let byte = bytes[position]
            position += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// The signed value of a zigzagged varint.
    @inlinable
    package static func zigZagDecoded(_ raw: UInt64) -> Int64 {
        Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }
}
