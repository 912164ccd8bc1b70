import DeltaFixtures
import FeedWire
import Foundation
import JSONBytes
import Testing

/// The fixtures in `Tests/Fixtures/deltas`: a page, a write, the page after it and the delta in
/// all three forms as the server sent it. FeedWire's apply functions must rebuild the page after
/// from the page before, in every form. ListDiff's tests and the web client's
/// (`scripts/apply-fixtures.mjs`) apply the same files.
@Suite("Golden delta fixtures, applied by FeedWire")
struct GoldenDeltaFixtureTests {
    @Test("There are fixtures to apply")
    func fixturesExist() {
        #expect(GoldenDeltaFixtures.names.count >= 8, "found \(GoldenDeltaFixtures.names)")
    }

    @Test("Every form of every fixture's delta applied to the page before gives the page after", arguments: GoldenDeltaFixtures.names)
    func everyFormRebuildsThePageAfter(name: String) throws {
        let fixture = try GoldenDeltaFixtures.load(name)
        let before = try FeedDocument(json: try #require(fixture["before"]))
        let after = try FeedDocument(json: try #require(fixture["after"]))
        for format in FeedDelta.Format.allCases {
            let delta = try FeedDelta(
                json: try #require(fixture["deltas"]?[format.rawValue], "\(name) has no \(format.rawValue) delta"), format: format, since: before.snapshot)
            let rebuilt = try before.applying(delta)
            let same = rebuilt == after
            #expect(same, "\(name), \(format.rawValue): the rebuilt page differs from the page after")
        }
    }
}
