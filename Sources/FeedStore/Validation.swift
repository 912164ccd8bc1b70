import Deterministic

/// Input rules shared by every write. Each check throws ``FeedStoreError/invalid(field:reason:)``
/// naming the snake_case column, and returns the normalized value to store.
package enum Validate {
    /// Longest accepted URL, in UTF-8 bytes.
    static let maximumURLLength = 2048

    /// How long a text field may be, counted on the text as sent: characters, meaning Unicode
    /// code points (what JSON Schema's `maxLength` counts, so openapi.yaml states the limit
    /// exactly), and UTF-8 bytes (what it costs to store and to send in every feed that shows
    /// it). Counting grapheme clusters instead let 200 letters carrying 2,400 combining accents
    /// each pass as "200 characters" at 960,200 bytes.
    package struct TextLimit: Hashable, Sendable {
        var characters: Int
        var bytes: Int

        /// `characters` code points, and 4 bytes per character (the longest UTF-8 code point), so
        /// any text within the character limit is within the byte cap too.
        package static func characters(_ characters: Int) -> TextLimit {
            TextLimit(characters: characters, bytes: 4 * characters)
        }
    }

    /// Video and ad titles: 200 code points, 800 bytes.
    static let titleLimit = TextLimit.characters(200)
    /// Display names: 60 code points, 240 bytes.
    static let displayNameLimit = TextLimit.characters(60)
    /// Advertiser names: 100 code points, 400 bytes.
    static let advertiserLimit = TextLimit.characters(100)

    /// A handle: 1…30 of `a`–`z`, `0`–`9`, `_` (so at most 30 bytes, and never invisible).
    package static func handle(_ value: String, field: String = "handle") throws(FeedStoreError) -> String {
        let bytes = value.utf8
        guard !bytes.isEmpty else {
            throw .invalid(field: field, reason: "must not be empty")
        }
        guard bytes.count <= 30 else {
            throw .invalid(field: field, reason: "must be at most 30 characters")
        }
        for byte in bytes {
            let allowed =
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_")
            guard allowed else {
                throw .invalid(field: field, reason: "may contain only a-z, 0-9 and _")
            }
        }
        return value
    }

    /// Free text: at most `limit` characters (code points) and UTF-8 bytes as sent, then trimmed
    /// of surrounding white space, no control characters (so titles never break a one-line
    /// layout), and at least one character that shows (see ``isInvisible(_:)``).
    package static func text(_ value: String, field: String, limit: TextLimit) throws(FeedStoreError) -> String {
        // Bytes first: they are known without walking the text.
        guard value.utf8.count <= limit.bytes, value.unicodeScalars.count <= limit.characters else {
            throw .invalid(
                field: field,
                reason: "must be at most \(limit.characters) characters (Unicode code points, counted as sent) and \(limit.bytes) bytes of UTF-8")
        }
        let trimmed = value.trimmingWhitespace()
        guard !trimmed.isEmpty else {
            throw .invalid(field: field, reason: "must not be empty")
        }
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid(field: field, reason: "must not contain control characters")
        }
        guard trimmed.unicodeScalars.contains(where: { !isInvisible($0) }) else {
            throw .invalid(field: field, reason: "must contain a visible character, not only white space, format characters or combining marks")
        }
        return trimmed
    }

    /// Whether a scalar shows nothing on its own: white space and separators, control and format
    /// characters (U+200B zero width space, U+2060 word joiner, U+FEFF, bidi controls, soft
    /// hyphen, tags), combining marks (which need a base to show), default-ignorable code points
    /// (variation selectors, Hangul fillers) and U+2800 BRAILLE PATTERN BLANK. Text made only of
    /// these would render as nothing, so it is refused where a person must read the field.
    package static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        if properties.isWhitespace || properties.isDefaultIgnorableCodePoint || scalar == "\u{2800}" { return true }
        switch properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator,
            .nonspacingMark, .spacingMark, .enclosingMark:
            return true
        default:
            return false
        }
    }

    /// A URL: starts with `http://` or `https://` (lower case), has something after the scheme,
    /// contains no white space or control characters, at most 2048 bytes.
    package static func url(_ value: String, field: String) throws(FeedStoreError) -> String {
        // Compared as bytes: String's hasPrefix compares characters, and `/` followed by an
        // extending code point (an emoji modifier, a variation selector) is one character.
        let bytes = value.utf8
        let schemeLength: Int
        if bytes.starts(with: "https://".utf8) {
            schemeLength = "https://".utf8.count
        } else if bytes.starts(with: "http://".utf8) {
            schemeLength = "http://".utf8.count
        } else {
            throw .invalid(field: field, reason: "must start with http:// or https://")
        }
        let rest = bytes.dropFirst(schemeLength)
        guard let first = rest.first, first != UInt8(ascii: "/") else {
            throw .invalid(field: field, reason: "must name a host after the scheme")
        }
        guard value.utf8.count <= maximumURLLength else {
            throw .invalid(field: field, reason: "must be at most \(maximumURLLength) bytes")
        }
        let forbidden = value.unicodeScalars.contains { scalar in
            scalar.properties.isWhitespace || scalar.properties.generalCategory == .control
        }
        guard !forbidden else {
            throw .invalid(field: field, reason: "must not contain spaces or control characters")
        }
        return value
    }

    /// An integer within `range`.
    package static func integer(
        _ value: Int64, field: String, in range: ClosedRange<Int64>
    ) throws(FeedStoreError) -> Int64 {
        guard range.contains(value) else {
            if range.upperBound == Int64.max {
                throw .invalid(field: field, reason: "must be at least \(range.lowerBound)")
            }
            throw .invalid(field: field, reason: "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }

    /// Video titles and ad titles: 1…200 characters (code points), at most 800 bytes.
    package static func title(_ value: String) throws(FeedStoreError) -> String {
        try text(value, field: "title", limit: titleLimit)
    }

    /// Display names: 1…60 characters (code points), at most 240 bytes.
    package static func displayName(_ value: String) throws(FeedStoreError) -> String {
        try text(value, field: "display_name", limit: displayNameLimit)
    }

    /// Advertiser names: 1…100 characters (code points), at most 400 bytes.
    package static func advertiser(_ value: String) throws(FeedStoreError) -> String {
        try text(value, field: "advertiser", limit: advertiserLimit)
    }

    /// Video lengths: 1…36000 seconds (10 hours).
    package static func duration(_ value: Int64) throws(FeedStoreError) -> Int64 {
        try integer(value, field: "duration_seconds", in: 1...36_000)
    }

    /// Like and view counts: ≥ 0.
    package static func count(_ value: Int64, field: String) throws(FeedStoreError) -> Int64 {
        try integer(value, field: field, in: 0...Int64.max)
    }

    /// Ad weights: 1…1000.
    package static func weight(_ value: Int64) throws(FeedStoreError) -> Int64 {
        try integer(value, field: "weight", in: 1...1000)
    }

    /// Snapshot ids: 1…128 bytes of printable ASCII (a hex hash in practice).
    package static func snapshotID(_ value: String) throws(FeedStoreError) -> String {
        // Over the string's bytes in place: through the UTF-8 view, a byte at a time, checking
        // a 32-digit id took about 1,400 instructions (callgrind), and the maintenance thread
        // checks every snapshot it stores.
        let printable: Bool? = withUTF8Bytes(of: value) { bytes in
            guard !bytes.isEmpty, bytes.count <= 128 else { return nil }
            return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        }
        guard let printable else {
            throw .invalid(field: "id", reason: "must be 1 to 128 characters")
        }
        guard printable else {
            throw .invalid(field: "id", reason: "must be printable ASCII without spaces")
        }
        return value
    }
}

extension String {
    /// The string without leading and trailing white space (Unicode white space, new lines included).
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }
}
