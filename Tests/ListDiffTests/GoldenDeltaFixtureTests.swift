import DeltaFixtures
import FeedWire
import Foundation
import JSONBytes
import ListDiff
import Testing

/// The fixtures in `Tests/Fixtures/deltas` (see FeedWireTests), applied with ListDiff's own apply
/// functions to the page's outline: sections and their items by id. The batch and the sequential
/// forms carry ListDiff's updates as they are; ListDiff rebuilds the outline of the page after
/// from the outline before. (The JSON Patch form's operations address the feed document itself:
/// FeedWire maps them onto ListDiff's JSON Patch apply, and its fixture test covers them.)
@Suite("Golden delta fixtures, applied by ListDiff")
struct GoldenDeltaFixtureTests {
    struct Outline: Equatable {
        var id: String
        var items: [String]
    }

    static func outline(_ document: FeedDocument) -> [Outline] {
        document.sections.map { Outline(id: $0.id, items: $0.items.map(\.id)) }
    }

    @Test("The batch and sequential forms of every fixture rebuild the outline of the page after", arguments: GoldenDeltaFixtures.names)
    func listDiffRebuildsTheOutline(name: String) throws {
        let fixture = try GoldenDeltaFixtures.load(name)
        let held = try FeedDocument(json: try #require(fixture["before"]))
        let before = Self.outline(held)
        let after = Self.outline(try FeedDocument(json: try #require(fixture["after"])))
        #expect(!after.isEmpty)
        guard case .batch(let batch) = try FeedDelta(json: try #require(fixture["deltas"]?["batch"]), format: .batch, since: held.snapshot),
            case .sequential(let sequential) = try FeedDelta(json: try #require(fixture["deltas"]?["sequential"]), format: .sequential, since: held.snapshot)
        else {
            Issue.record("\(name): the deltas are not in the forms their keys name")
            return
        }
        let fromBatch = try batch.update.apply(to: before, newSections: after) { $0.items }
        let batchOutline = fromBatch.map { Outline(id: $0.section.id, items: $0.items) }
        #expect(batchOutline == after, "\(name), batch")
        let steps = SectionedSequentialUpdate(operations: sequential.operations.compactMap(\.step))
        let fromSteps = try steps.apply(to: before, newSections: after) { $0.items }
        #expect(fromSteps.map { Outline(id: $0.section.id, items: $0.items) } == after, "\(name), sequential")
    }
}
