/// The position of an item in a two-level list: a section index and an item
/// index within that section.
///
/// The module's own index path (it imports nothing, not even Foundation).
/// It is deliberately not called `IndexPath`, so that it never clashes with
/// Foundation's in a file that imports both; converting is one line:
///
///     let path = ItemPath(section: 2, item: 5)
///     // UIKit: IndexPath(item: path.item, section: path.section)
///
/// Paths order by section, then by item.
public struct ItemPath: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The index of the section.
    public var section: Int

    /// The index of the item within its section.
    public var item: Int

    /// Creates the path of the `item`-th item of the `section`-th section.
    @inlinable
    public init(section: Int, item: Int) {
        self.section = section
        self.item = item
    }

    /// Returns whether `lhs` comes before `rhs`: by section, then by item.
    ///
    /// - Complexity: O(1)
    @inlinable
    public static func < (lhs: ItemPath, rhs: ItemPath) -> Bool {
        lhs.section != rhs.section ? lhs.section < rhs.section : lhs.item < rhs.item
    }

    /// The path as `[section, item]`.
    public var description: String {
        "[\(section), \(item)]"
    }
}
