/// 16 lowercase hex digits.
public func hex16(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

/// Whether `text` is exactly `count` lowercase hex digits.
public func isLowercaseHex(_ text: String, count: Int) -> Bool {
    text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}
