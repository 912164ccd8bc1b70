/// Writes `value` as 16 lowercase hex digits at the start of `buffer` (16 bytes at least): the
/// text of every item version, section version and snapshot id half.
@inlinable
public func writeHex16(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>) {
    for index in 0..<16 {
        let nibble = UInt8(truncatingIfNeeded: value >> UInt64(60 - 4 * index)) & 0xF
        buffer[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
    }
}
