/// How a diff decides that an element was updated, and which moves it
/// reports.
///
///     let exact = DiffOptions()                        // equality, minimal moves
///     let likeIGListKit = DiffOptions(moves: .heckel)  // IGListKit's move set
///     let cannotCompare = DiffOptions(mode: .identity) // every match is an update
public struct DiffOptions: Hashable, Sendable {
    /// How a pair of matched elements (same identifier) is judged updated.
    public enum Mode: Hashable, Sendable {
        /// A matched pair is an update when its contents differ
        /// (``Diffable/isContentEqual(to:)`` returns `false`).
        case equality

        /// A matched pair is an update unless both sides are the same object
        /// (`===`, for class instances); content equality is never called.
        ///
        /// This is IGListKit's "pointer personality", for callers that cannot
        /// compare contents: every matched value-type element is an update.
        case identity
    }

    /// Which set of moves is reported.
    public enum Moves: Hashable, Sendable {
        /// The fewest possible moves: the common elements minus a longest
        /// increasing subsequence of their old indexes taken in new order.
        ///
        /// Moving the last of n elements to the front is one move.
        case minimal

        /// IGListKit's move set (Heckel's algorithm with running insert and
        /// delete offsets): a common element is moved whenever its old index,
        /// shifted by the deletes before it and the inserts before its new
        /// index, is not its new index.
        ///
        /// Moving the last of n elements to the front is n moves.
        case heckel
    }

    /// How matched pairs are judged updated. The default is ``Mode-swift.enum/equality``.
    public var mode: Mode

    /// Which moves are reported. The default is ``Moves-swift.enum/minimal``.
    public var moves: Moves

    /// Creates options.
    ///
    /// - Parameters:
    ///   - mode: How matched pairs are judged updated.
    ///   - moves: Which moves are reported.
    @inlinable
    public init(mode: Mode = .equality, moves: Moves = .minimal) {
        self.mode = mode
        self.moves = moves
    }
}
