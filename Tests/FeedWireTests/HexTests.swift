import FeedWire
import JSONBytes
import Testing

@Suite("Hex digits")
struct HexTests {
    @Test("Versions are 16 lowercase hex digits, zero-padded, as a string and written into JSON")
    func versionsAreSixteenLowercaseHexDigits() {
        var generator = SystemRandomNumberGenerator()
        let values: [UInt64] = [0, 1, 0xabc, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, .max] + (0..<200).map { _ in generator.next() }
        for value in values {
            let digits = String(value, radix: 16)
            let expected = String(repeating: "0", count: 16 - digits.count) + digits
            #expect(hex16(value) == expected)
            #expect(isLowercaseHex(hex16(value), count: 16))
            var writer = JSONWriter()
            writer.hexDigits(value)
            #expect(writer.bytes == Array(expected.utf8))
        }
    }

    @Test("A section's envelope carries the same version text as the section")
    func sectionEnvelopesCarryTheirVersionText() throws {
        let item = FeedItem(id: "ad:1", kind: .ad, capacity: 16) { $0.raw("{}") }
        let section = FeedSection(id: "ad-slot-0", kind: .ad, columns: 1, items: [item])
        var writer = JSONWriter()
        section.write(to: &writer, layout: nil)
        let text = String(decoding: writer.bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"id":"ad-slot-0","kind":"ad","version":"\#(section.versionText)","#))
        #expect(section.versionText == hex16(section.version))
    }
}

@Suite("Hex checks and snapshot-id digits")
struct HexCheckTests {
    @Test("isLowercaseHex: exactly the count, digits and a–f only")
    func lowercaseHex() {
        #expect(isLowercaseHex("0123456789abcdef", count: 16))
        #expect(!isLowercaseHex("0123456789abcdeF", count: 16), "uppercase")
        #expect(!isLowercaseHex("0123456789abcdeg", count: 16))
        #expect(!isLowercaseHex("0123456789abcde", count: 16), "short")
        #expect(!isLowercaseHex("0123456789abcdef0", count: 16), "long")
        #expect(!isLowercaseHex("0123456789abcdé", count: 16), "non-ASCII of the same byte count")
        #expect(isLowercaseHex("", count: 0))
        #expect(isLowercaseHex(String("x0123456789abcdefx".dropFirst().dropLast()), count: 16), "a substring's copy")
    }

    @Test("hex32 is the two values' hex16 one after the other")
    func hex32IsTwoHex16s() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let (first, second): (UInt64, UInt64) = (generator.next(), generator.next())
            #expect(hex32(first, second) == hex16(first) + hex16(second))
        }
        #expect(hex32(0, .max) == String(repeating: "0", count: 16) + String(repeating: "f", count: 16))
    }
}
