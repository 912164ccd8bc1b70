import FeedWire
import Testing

@Suite("Patched arrays")
struct PatchedArrayTests {
    /// A class element, so sharing can be told from copying by identity.
    final class Box: Equatable, CustomStringConvertible {
        let value: Int
        init(_ value: Int) { self.value = value }
        static func == (left: Box, right: Box) -> Bool { left.value == right.value }
        var description: String { "\(value)" }
    }

    @Test("Random replacements, insertions and removals read the same as an array's")
    func matchesAnArray() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let count = Int.random(in: 0...24, using: &random)
            var expected = (0..<count).map { $0 * 10 }
            var patched = PatchedArray(expected)
            for step in 0..<40 {
                switch Int.random(in: 0..<10, using: &random) {
                case 0 where !expected.isEmpty:
                    let index = Int.random(in: expected.indices, using: &random)
                    expected.remove(at: index)
                    patched.remove(at: index)
                case 1:
                    let index = Int.random(in: 0...expected.count, using: &random)
                    expected.insert(-step, at: index)
                    patched.insert(-step, at: index)
                default:
                    guard !expected.isEmpty else { continue }
                    let index = Int.random(in: expected.indices, using: &random)
                    expected[index] = step * 1_000 + index
                    patched[index] = step * 1_000 + index
                }
                #expect(patched.count == expected.count)
                #expect(Array(patched) == expected, "after step \(step)")
                #expect(patched.array == expected)
                #expect(expected.indices.allSatisfy { patched[$0] == expected[$0] })
                #expect(patched == PatchedArray(expected) && patched.hashValue == PatchedArray(expected).hashValue)
            }
        }
    }

    @Test("A copy with an element replaced shares every other element with the original")
    func copiesShareTheUntouchedElements() {
        let original = PatchedArray((0..<20).map(Box.init))
        var patched = original
        patched[7] = Box(700)
        #expect(original[7].value == 7 && patched[7].value == 700)
        for index in original.indices where index != 7 {
            #expect(patched[index] === original[index])
            #expect(patched.sharesElement(at: index, with: original))
        }
        #expect(!patched.sharesElement(at: 7, with: original))
        // Replacing the same element again keeps one replacement; others add theirs.
        patched[7] = Box(701)
        patched[3] = Box(300)
        #expect(patched.map(\.value) == (0..<20).map { $0 == 7 ? 701 : $0 == 3 ? 300 : $0 })
        #expect(!patched.sharesElement(at: 3, with: original) && patched.sharesElement(at: 4, with: original))
        // An array with the same elements made on its own shares none of them.
        let separate = PatchedArray((0..<20).map(Box.init))
        #expect(separate == original && !separate.sharesElement(at: 0, with: original))
    }

    @Test("Past the most replaced elements it keeps, the array is folded into a new base")
    func foldsPastTheMostReplacements() {
        let original = PatchedArray((0..<20).map(Box.init))
        var patched = original
        for index in 0..<PatchedArray<Box>.maxReplaced { patched[index] = Box(-index) }
        #expect(patched.sharesElement(at: 19, with: original))
        patched[19] = Box(-19)
        // Folded: nothing is shared by the base any more, and every element is still right.
        #expect(!patched.sharesElement(at: 18, with: original))
        #expect(patched[18] === original[18])
        #expect(patched.map(\.value) == (0..<20).map { $0 < PatchedArray<Box>.maxReplaced || $0 == 19 ? -$0 : $0 })
        #expect(original.map(\.value) == Array(0..<20))
        // Room made for more replacements than it keeps folds those it has at once; room for a
        // few more does not.
        var few = original
        few[0] = Box(-1)
        few.reserveReplacements(2)
        #expect(few.sharesElement(at: 1, with: original))
        var many = few
        many.reserveReplacements(PatchedArray<Box>.maxReplaced)
        #expect(!many.sharesElement(at: 1, with: original) && many == few && many[1] === original[1])
    }

    @Test("Fields of an element are changed in place, through the subscript")
    func nestedMutation() {
        var sections = PatchedArray([[1, 2], [3, 4], [5]])
        let before = sections
        sections[1][0] = 30
        sections[1].append(40)
        #expect(sections == [[1, 2], [30, 4, 40], [5]])
        #expect(before == [[1, 2], [3, 4], [5]])
    }
}
