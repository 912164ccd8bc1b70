import FeedStore
import Foundation
import GRDB
import SQLiteStore
import StoreOracle
import Testing

@Suite("Query plans")
struct QueryPlanTests {
    /// A seeded store, so the planner sees realistic tables.
    static func seededStore() throws -> SQLiteFeedStore {
        let store = try SQLiteFeedStore.temporary()
        try store.seed(DemoSeed(users: 100, videos: 2000, ads: 10, seed: 1))
        return store
    }

    /// The store's queries whose plans must use an index, and the oracle's, with sample arguments.
    static let indexedQueries: [(name: String, sql: String, arguments: StatementArguments)] =
        [
            ("activeAds", FeedQueries.activeAds, []),
            ("usersByIDs", FeedQueries.byIDs(User.table), ["[1,2]"]),
            ("videosByIDs", FeedQueries.byIDs(Video.table), ["[1,2]"]),
        ] + OracleQueries.indexed

    @Test("No hot query scans a table without an index")
    func noFullTableScans() throws {
        let store = try Self.seededStore()
        for query in Self.indexedQueries {
            let plan = try store.queryPlan(query.sql, arguments: query.arguments)
            #expect(!plan.isEmpty)
            // Scans of a stored table (or its aliases) must go through an index. Other scans are
            // of bounded transient things: the bound id list (json_each), the suggestions subquery.
            let tables: Set<Substring> = ["users", "videos", "ads", "follows", "snapshot_log", "first", "second", "own"]
            for line in plan where line.hasPrefix("SCAN ") && tables.contains(line.split(separator: " ")[1]) {
                #expect(
                    line.contains("USING INDEX") || line.contains("USING COVERING INDEX"),
                    "\(query.name): \(line)")
            }
        }
    }

    @Test("The oracle's followed feed seeks the author/time covering index and never sorts")
    func followedFeedUsesAuthorTimeIndex() throws {
        let store = try Self.seededStore()
        for sql in [OracleQueries.followedPageFirst, OracleQueries.followedPageAfter] {
            let arguments: [Int64] = sql == OracleQueries.followedPageFirst ? [1, 10] : [1, 0, 0, 10]
            let plan = try store.queryPlan(sql, arguments: .init(arguments)).joined(separator: "\n")
            #expect(plan.contains("SEARCH videos USING COVERING INDEX videos_by_author_time (author_id=?"), "\(plan)")
            #expect(!plan.contains("SCAN videos"), "\(plan)")
            #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
        }
    }

    @Test("The oracle's popular feed walks the popularity index without sorting")
    func popularFeedUsesPopularityIndex() throws {
        let store = try Self.seededStore()
        for sql in [OracleQueries.popular, OracleQueries.popularLimited] {
            let plan = try store.queryPlan(sql, arguments: sql == OracleQueries.popular ? [] : [10]).joined(separator: "\n")
            #expect(plan.contains("USING INDEX videos_by_popularity"), "\(plan)")
            #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
        }
    }

    @Test("The oracle's suggestions read only the viewer's follow edges through primary keys")
    func suggestionsUseFollowKeys() throws {
        let store = try Self.seededStore()
        let plan = try store.queryPlan(OracleQueries.suggestionsByMutuals, arguments: [1, 10])
        let text = plan.joined(separator: "\n")
        #expect(text.contains("SEARCH first USING PRIMARY KEY (follower_id=?)"), "\(text)")
        #expect(text.contains("SEARCH second USING PRIMARY KEY (follower_id=?)"), "\(text)")
        #expect(text.contains("SEARCH users USING INTEGER PRIMARY KEY (rowid=?)"), "\(text)")
        #expect(!text.contains("SCAN follows") && !text.contains("SCAN users"), "\(text)")
        let lookup = try store.queryPlan(FeedQueries.byIDs(User.table), arguments: ["[1,2]"]).joined(separator: "\n")
        #expect(lookup.contains("SEARCH users USING INTEGER PRIMARY KEY (rowid=?)"), "\(lookup)")
        let fill = try store.queryPlan(OracleQueries.usersByPopularity).joined(separator: "\n")
        #expect(fill.contains("users_by_popularity") && !fill.contains("TEMP B-TREE"), "\(fill)")
    }
}
