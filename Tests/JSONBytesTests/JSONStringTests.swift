import Foundation
import JSONBytes
import Testing

/// The one string escaper: runs that need no escape are copied whole, so these pin that every
/// byte of every run is still written, and every escape is RFC 8785's.
@Suite("JSON strings")
struct JSONStringTests {
    /// The escapes a byte at a time, as RFC 8785 spells them: the reference the writer must match.
    func reference(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
            case 0x08: out += Array(#"\b"#.utf8)
            case 0x0C: out += Array(#"\f"#.utf8)
            case 0x0A: out += Array(#"\n"#.utf8)
            case 0x0D: out += Array(#"\r"#.utf8)
            case 0x09: out += Array(#"\t"#.utf8)
            case 0..<0x20: out += Array(String(format: "\\u%04x", Int(byte)).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }

    func written(_ text: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.string(text)
        return writer.bytes
    }

    @Test("Fixed cases: plain runs, every escape, escapes at the ends and side by side, non-ASCII")
    func fixedCases() {
        let cases = [
            "", "a", "0123456789abcdef0123456789abcdef", "\"", "\\", "\"\\\"", "a\"b", "\u{08}\u{0C}\n\r\t", "\u{00}\u{01}\u{1F}",
            "line one\nline two", "\"quoted\" and \\escaped\\", "naïve café 🎬 clip", "\u{7F} stays", String(repeating: "x", count: 5_000) + "\n",
        ]
        for text in cases {
            #expect(written(text) == reference(text), "\(text.debugDescription)")
        }
        #expect(String(decoding: written("a\u{01}b"), as: UTF8.self) == #""a\u0001b""#)
    }

    @Test("Literals are appended as their bytes, one byte or many, non-ASCII included, after what was written")
    func literals() {
        var writer = JSONWriter()
        writer.literal("{")
        writer.literal("\"op\":")
        writer.string("é")
        writer.literal(",")
        writer.bool(true)
        writer.literal(",\"é\":")
        writer.null()
        writer.literal("}")
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"op":"é",true,"é":null}"#)
    }

    @Test("Random strings of plain text, escapes and non-ASCII write as the reference does and parse back as themselves")
    func randomStrings() throws {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["plain", " ", "\"", "\\", "\n", "\r", "\t", "\u{08}", "\u{0C}", "\u{00}", "\u{1B}", "é", "🎬", "{}", "/", "\u{7F}"]
        for _ in 0..<500 {
            let text = (0..<Int.random(in: 0...24, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let bytes = written(text)
            #expect(bytes == reference(text), "\(text.debugDescription)")
            let parsed = try JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed) as? String
            #expect(parsed == text, "\(text.debugDescription)")
        }
    }

    @Test("A string that is not contiguous UTF-8 in memory (bridged or a view's copy) is written the same")
    func substringsAndCopies() {
        let whole = "ab\"cd\\ef\ngh"
        let part = String(whole.dropFirst(2).dropLast(2))
        #expect(written(part) == reference(part))
    }
}
