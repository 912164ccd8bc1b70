import Deterministic

/// 16 lowercase hex digits: written into the string's own storage (every item rendered, section
/// built and snapshot id made takes one or two).
public func hex16(_ value: UInt64) -> String {
    String(unsafeUninitializedCapacity: 16) { buffer in
        writeHex16(value, into: buffer)
        return 16
    }
}

/// Whether `text` is exactly `count` lowercase hex digits.
public func isLowercaseHex(_ text: String, count: Int) -> Bool {
    // Every snapshot id a request or a live event names is checked.
    withUTF8Bytes(of: text) { bytes in
        bytes.count == count && bytes.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// `hex16(first) + hex16(second)`, written into one string's storage (a snapshot id).
public func hex32(_ first: UInt64, _ second: UInt64) -> String {
    String(unsafeUninitializedCapacity: 32) { buffer in
        writeHex16(first, into: UnsafeMutableBufferPointer(rebasing: buffer[0..<16]))
        writeHex16(second, into: UnsafeMutableBufferPointer(rebasing: buffer[16..<32]))
        return 32
    }
}
