/// An element that changed place: its position in the old list and its
/// position in the new list.
///
/// `Position` is `Int` for flat lists and sections, ``ItemPath`` for items of
/// a sectioned list.
///
///     let move = Move(from: 4, to: 0)  // old index 4 is new index 0
public struct Move<Position: Hashable>: Hashable {
    /// The element's position in the old list.
    public var from: Position

    /// The element's position in the new list.
    public var to: Position

    /// Creates a move from an old position to a new position.
    @inlinable
    public init(from: Position, to: Position) {
        self.from = from
        self.to = to
    }
}

extension Move: Sendable where Position: Sendable {}

extension Move: CustomStringConvertible {
    /// The move as `from -> to`.
    public var description: String {
        "\(from) -> \(to)"
    }
}
