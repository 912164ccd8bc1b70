import ListDiff
import Testing

// The example of docs/ListDiff.md and of the README, kept true by running it.

private struct Post: Diffable, Equatable {
    var id: Int
    var text: String
    var diffIdentifier: Int { id }  // content equality is `==`, since Post is Equatable
}

@Suite("Documentation example")
struct DocumentationExampleTests {
    @Test("When the documented example runs that it prints what the docs say") func whenTheDocumentedExampleRuns_thatItPrintsWhatTheDocsSay() throws {
        let old = [Post(id: 1, text: "hello"), Post(id: 2, text: "world"), Post(id: 3, text: "bye")]
        let new = [Post(id: 3, text: "bye"), Post(id: 1, text: "hello!"), Post(id: 4, text: "new")]

        let diff = IndexDiff(old: old, new: new)
        #expect("\(diff.deletes)" == "[1]")
        #expect("\(diff.inserts)" == "[2]")
        #expect("\(diff.updates)" == "[0]")
        #expect("\(diff.moves)" == "[2 -> 0]")

        #expect("\(diff.batch)" == "BatchUpdate(deletes: [1], inserts: [2], moves: [2 -> 0], reloads: [0])")
        #expect(
            "\(diff.sequential.operations)"
                == "[remove(at: 1, count: 1), move(from: 1, to: 0), insert(at: 2, count: 1), change(at: 1, count: 1)]")
        let lines = diff.jsonPatch(at: "/posts").operations.map { operation in
            "\(operation.kind) \(operation.path) \(operation.from?.description ?? "-") \(operation.value.map { "\($0)" } ?? "-")"
        }
        #expect(
            lines == [
                "remove /posts/1 - -",
                "move /posts/0 /posts/1 -",
                "add /posts/2 - element(2)",
                "replace /posts/1 - element(1)",
            ])

        let rebuilt = try diff.batch.apply(to: old, newElements: new)
        #expect(rebuilt == new)
        #expect(try diff.sequential.apply(to: old, newElements: new) == new)
        #expect(try diff.jsonPatch(at: "/posts").apply(to: old, newElements: new, at: "/posts") == new)
    }

    @Test("When rows are not diffable that the closure entry point diffs them by key") func whenRowsAreNotDiffable_thatTheClosureEntryPointDiffsThemByKey() {
        let oldRows: [(key: String, value: Int)] = [("a", 1), ("b", 2)]
        let newRows: [(key: String, value: Int)] = [("b", 3), ("a", 1)]
        let diff = IndexDiff(
            old: oldRows, new: newRows,
            identifier: { $0.key }, isContentEqual: { $0 == $1 })
        #expect(diff.updates == [1])
        #expect(diff.moves.count == 1)
    }
}

@Suite("README example")
struct ReadmeExampleTests {
    @Test("When the readme example runs that it prints what the readme says") func whenTheReadmeExampleRuns_thatItPrintsWhatTheReadmeSays() throws {
        let old = [Post(id: 1, text: "hello"), Post(id: 2, text: "world"), Post(id: 3, text: "bye")]
        let new = [Post(id: 3, text: "bye"), Post(id: 1, text: "hello!"), Post(id: 4, text: "new")]
        let diff = IndexDiff(old: old, new: new)
        #expect("\(diff.batch)" == "BatchUpdate(deletes: [1], inserts: [2], moves: [2 -> 0], reloads: [0])")
        #expect(
            "\(diff.sequential.operations)"
                == "[remove(at: 1, count: 1), move(from: 1, to: 0), insert(at: 2, count: 1), change(at: 1, count: 1)]")
        #expect(
            "\(diff.jsonPatch(at: "/posts").operations.map { "\($0.kind) \($0.path)" })"
                == #"["remove /posts/1", "move /posts/0", "add /posts/2", "replace /posts/1"]"#)
        let rebuilt = try diff.batch.apply(to: old, newElements: new)
        #expect(rebuilt == new)
    }
}
