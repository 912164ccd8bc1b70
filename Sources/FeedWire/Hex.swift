/// 16 lowercase hex digits: written into the string's own storage (every item rendered, section
/// built and snapshot id made takes one or two).
public func hex16(_ value: UInt64) -> String {
    String(unsafeUninitializedCapacity: 16) { buffer in
        writeHex16(value, into: buffer)
        return 16
    }
}

/// Writes `value` as 16 lowercase hex digits at the start of `buffer` (16 bytes at least).
@inlinable
public func writeHex16(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>) {
    for index in 0..<16 {
        let nibble = UInt8(truncatingIfNeeded: value >> UInt64(60 - 4 * index)) & 0xF
        buffer[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
    }
}

/// Whether `text` is exactly `count` lowercase hex digits.
public func isLowercaseHex(_ text: String, count: Int) -> Bool {
    text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}
