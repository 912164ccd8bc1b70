public import Foundation
public import JSONBytes

/// The golden delta fixtures in `Tests/Fixtures/deltas`, for the test targets that apply them
/// (FeedWire's and ListDiff's; the web client's run is `scripts/apply-fixtures.mjs`). Written by
/// `DeltaFeedServerTests`' fixture writer.
public enum GoldenDeltaFixtures {
    /// `Tests/Fixtures/deltas`.
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/deltas")

    /// The fixture files, by name, sorted: adding a file adds a case to every test that applies them.
    public static let names: [String] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.sorted()
    }()

    /// The fixture `name`: `before`, `after`, and `deltas` by form.
    public static func load(_ name: String) throws -> JSONValue {
        try JSONValue(parsing: Array(try Data(contentsOf: directory.appendingPathComponent(name))))
    }
}
