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
    text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}
