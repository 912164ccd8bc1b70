import FeedService
import FeedStore
import Foundation
import HTTPTestSupport
import Testing

/// Parts of openapi.yaml that the contract test can only sample, checked here exhaustively
/// against the server's own rules.
@Suite("openapi.yaml agrees with the server")
struct ContractTextTests {
    static let specification: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)) ?? ""
    }()

    /// The `pattern:` of the schema under the component parameter `name`.
    static func parameterPattern(_ name: String) -> String? {
        let lines = specification.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0 == "    \(name):" }) else { return nil }
        for line in lines[(start + 1)...] {
            if !line.hasPrefix("      ") { break }  // the next parameter
            let trimmed = line.drop(while: { $0 == " " })
            guard trimmed.hasPrefix("pattern: ") else { continue }
            var value = trimmed.dropFirst("pattern: ".count)
            if value.first == "'" || value.first == "\"" { value = value.dropFirst().dropLast() }
            return String(value)
        }
        return nil
    }

    /// The `pattern:` of the component schema `name`, a YAML double-quoted scalar that may be
    /// folded with escaped line breaks. Code points from U+0080 up come back as `\u{…}` escapes,
    /// so Swift's regex parser cannot merge a literal combining mark with its neighbour.
    static func schemaPattern(_ name: String) throws -> String {
        guard let start = specification.range(of: "\n    \(name):\n"),
            let open = specification.range(of: "pattern: \"", range: start.upperBound..<specification.endIndex)
        else {
            throw TestFailure("openapi.yaml has no schema \(name) with a double-quoted pattern")
        }
        var result = ""
        var iterator = specification.unicodeScalars[open.upperBound...].makeIterator()
        var pushedBack: Unicode.Scalar?
        func nextScalar() -> Unicode.Scalar? {
            defer { pushedBack = nil }
            return pushedBack ?? iterator.next()
        }
        let scalars = AnyIterator(nextScalar)
        func hex(_ count: Int) throws -> Unicode.Scalar {
            var text = ""
            for _ in 0..<count { if let next = scalars.next() { text.unicodeScalars.append(next) } }
            guard let value = UInt32(text, radix: 16), let scalar = Unicode.Scalar(value) else { throw TestFailure("bad escape \(text)") }
            return scalar
        }
        func append(_ scalar: Unicode.Scalar) {
            if scalar.value < 0x80 { result.unicodeScalars.append(scalar) } else { result += "\\u{\(String(scalar.value, radix: 16))}" }
        }
        while let scalar = scalars.next() {
            switch scalar {
            case "\"": return result
            case "\\":
                switch scalars.next() {
                case "\\": result += "\\"
                case "\"": result += "\""
                case "u": append(try hex(4))
                case "U": append(try hex(8))
                case "\n":
                    // An escaped line break: the break and the next line's indentation vanish.
                    var next = scalars.next()
                    while next == " " { next = scalars.next() }
                    pushedBack = next
                case let other: throw TestFailure("unexpected YAML escape \\\(String(describing: other))")
                }
            default: append(scalar)
            }
        }
        throw TestFailure("unterminated pattern")
    }

    @Test("VisibleText's pattern admits exactly the text the server takes, code point by code point")
    func visibleTextPatternMatchesTheServer() throws {
        // Swift's regex parser refuses range bounds such as U+2000 (it decomposes canonically to
        // U+2002), so the pattern is read by ClassSequencePattern, which knows just its syntax.
        let pattern = try ClassSequencePattern(try ContractTextTests.schemaPattern("VisibleText"))
        func matches(_ text: String) -> Bool { pattern.wholeMatch(text) }
        func accepted(_ text: String) -> Bool { (try? Validate.title(text)) != nil }
        var mismatches: [String] = []
        // Every code point of the planes that hold marks, format characters and white space
        // (0, 1 and 14), and every 97th elsewhere.
        let planes = Array(0...0x1FFFF) + Array(0xE0000...0xE0FFF)
        let elsewhere = Array(stride(from: 0x20000, through: 0x10FFFF, by: 97))
        for value in planes + elsewhere {
            guard let scalar = Unicode.Scalar(UInt32(value)) else { continue }
            let alone = String(scalar)
            if matches(alone) != accepted(alone) {
                mismatches.append("U+\(String(value, radix: 16, uppercase: true)) alone: pattern \(matches(alone)), server \(accepted(alone))")
            }
            // Beside a visible letter and inside white space: controls are refused anywhere,
            // white space at the ends is trimmed, everything else is fine.
            if value % 7 == 0 || value < 0x3000 {
                for text in ["a" + alone, " \t" + alone + "b\n", alone + "\u{301}"] where matches(text) != accepted(text) {
                    mismatches.append(
                        "U+\(String(value, radix: 16, uppercase: true)) in \(text.debugDescription): pattern \(matches(text)), server \(accepted(text))")
                }
            }
            if mismatches.count > 20 { break }
        }
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
    }

    /// Cursors to try: every string the server issues for a 240-video feed, and near misses.
    static var candidateCursors: [String] {
        var candidates: [String] = []
        let digits = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        for offset in 0...500 { candidates.append("o" + String(offset, radix: 36)) }
        var generator = SystemRandomNumberGenerator()
        for length in 0...9 {
            for _ in 0..<200 {
                var body = String((0..<length).map { _ in digits.randomElement(using: &generator)! })
                switch Int.random(in: 0..<6, using: &generator) {
                case 0: body = "+" + body
                case 1: body = "-" + body
                case 2: body = "-" + String(repeating: "0", count: length)
                default: break
                }
                candidates.append("o" + body)
            }
        }
        candidates += [
            "", "o", "O1", "p1", " o1", "o1 ", "o_1", "o1.5", "o+", "o-", "o+-1", "o٣", "o１", "ozzzzzzz", "o0000000", "o+zzzzzz", "o-000000", "o-0000000",
        ]
        return candidates
    }

    @Test("The feed cursor's pattern admits exactly the cursors the server accepts")
    func cursorPatternMatchesTheServer() throws {
        let pattern = try #require(ContractTextTests.parameterPattern("Cursor"), "openapi.yaml gives the Cursor parameter no pattern")
        let regex = try Regex(pattern)
        for cursor in ContractTextTests.candidateCursors {
            let accepted = FeedParameters.offset(fromCursor: cursor) != nil
            let matches = (try? regex.wholeMatch(in: cursor)) != nil
            #expect(
                matches == accepted,
                "cursor \(cursor.debugDescription): server \(accepted ? "accepts" : "refuses"), pattern \(matches ? "matches" : "does not")")
        }
    }

    @Test("Cursors the pattern admits are answered 200 by the server, others 400 invalid_cursor")
    func cursorsOverHTTP() throws {
        let fixture = try BadInputFixture()
        for (cursor, status) in [("o2", 200), ("o%2B2", 200), ("ozzzzzzz", 200), ("o-0", 200), ("o-1", 400), ("o12345678", 400), ("O2", 400)] {
            let response = try fixture.client().request("GET", "/v1/users/1/feed?limit=2&cursor=\(cursor)")
            #expect(response.status == status, "\(cursor): \(response.bodyText)")
        }
    }
}

/// An anchored regular expression made only of bracket classes, each once or starred
/// (`^[…]*[^…][…]*$`), with `\xHH` and `\u{H…}` escapes, literal code points and ranges:
/// enough to read VisibleText's pattern exactly as RFC/ECMA-262 and Python's `re` read it.
struct ClassSequencePattern {
    struct Item {
        var ranges: [ClosedRange<UInt32>]
        var negated: Bool
        var starred: Bool

        func admits(_ scalar: Unicode.Scalar) -> Bool {
            ranges.contains { $0.contains(scalar.value) } != negated
        }
    }

    let items: [Item]

    init(_ pattern: String) throws {
        var scalars = Array(pattern.unicodeScalars)[...]
        guard scalars.popFirst() == "^", scalars.popLast() == "$" else { throw TestFailure("not anchored: \(pattern.prefix(40))") }
        func member() throws -> UInt32 {
            guard let first = scalars.popFirst() else { throw TestFailure("unterminated class") }
            guard first == "\\" else { return first.value }
            switch scalars.popFirst() {
            case "x":
                let digits = String(String.UnicodeScalarView(scalars.prefix(2)))
                scalars = scalars.dropFirst(2)
                guard let value = UInt32(digits, radix: 16) else { throw TestFailure("bad \\x\(digits)") }
                return value
            case "u":
                guard scalars.popFirst() == "{", let close = scalars.firstIndex(of: "}") else { throw TestFailure("bad \\u") }
                let digits = String(String.UnicodeScalarView(scalars[..<close]))
                scalars = scalars[scalars.index(after: close)...]
                guard let value = UInt32(digits, radix: 16) else { throw TestFailure("bad \\u{\(digits)}") }
                return value
            case let other: throw TestFailure("unsupported escape \\\(String(describing: other))")
            }
        }
        var items: [Item] = []
        while let open = scalars.popFirst() {
            guard open == "[" else { throw TestFailure("unsupported syntax at \(open)") }
            var item = Item(ranges: [], negated: false, starred: false)
            if scalars.first == "^" {
                item.negated = true
                scalars = scalars.dropFirst()
            }
            while scalars.first != "]" {
                let low = try member()
                if scalars.first == "-", scalars.dropFirst().first != "]" {
                    scalars = scalars.dropFirst()
                    let high = try member()
                    guard low <= high else { throw TestFailure("inverted range") }
                    item.ranges.append(low...high)
                } else {
                    item.ranges.append(low...low)
                }
            }
            scalars = scalars.dropFirst()
            if scalars.first == "*" {
                item.starred = true
                scalars = scalars.dropFirst()
            }
            items.append(item)
        }
        self.items = items
    }

    func wholeMatch(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        var memo: [Int: Bool] = [:]
        func match(_ item: Int, _ position: Int) -> Bool {
            let key = item * (scalars.count + 1) + position
            if let known = memo[key] { return known }
            let result: Bool
            if item == items.count {
                result = position == scalars.count
            } else if items[item].starred {
                result =
                    match(item + 1, position)
                    || (position < scalars.count && items[item].admits(scalars[position]) && match(item, position + 1))
            } else {
                result = position < scalars.count && items[item].admits(scalars[position]) && match(item + 1, position + 1)
            }
            memo[key] = result
            return result
        }
        return match(0, 0)
    }
}
