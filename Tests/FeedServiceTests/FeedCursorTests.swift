import Testing

// @testable: `FeedCursor` is internal to the service (clients see only its text), and these tests
// pin that text digit by digit.
@testable import FeedService

/// Cursors are written digit by digit: they must stay what `String(_:radix: 36)` wrote, since
/// clients hold cursors across server versions, and decode back to their offset.
@Suite("Feed cursors")
struct FeedCursorTests {
    @Test("A cursor is o and the offset in base 36, and decodes to the offset")
    func baseThirtySix() {
        var offsets = Array(0...1_400)
        for power in [36, 1_296, 46_656, 1_679_616, 60_466_176, 2_176_782_336] {
            offsets += [power - 1, power, power + 1]
        }
        for offset in offsets {
            let cursor = FeedCursor.encode(offset: offset)
            #expect(cursor == "o" + String(offset, radix: 36), "\(offset)")
            if cursor.utf8.count <= 8 { #expect(FeedCursor.decode(cursor) == offset) }
        }
    }
}
