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
