/// A value that a diff can match across two lists and compare for changes.
///
/// A diffable element has two notions of sameness. Its ``diffIdentifier``
/// says *which* element of the other list it is (the row with the same
/// primary key, the same user, the same post); ``isContentEqual(to:)`` says
/// whether that element still *looks the same*. Two elements with equal
/// identifiers and unequal content are reported as an **update**; equal
/// identifiers and equal content are no change (or a move, if the element
/// changed place).
///
///     struct User: Diffable {
///       var id: Int
///       var name: String
///
///       var diffIdentifier: Int { id }
///       func isContentEqual(to other: User) -> Bool { name == other.name }
///     }
///
/// Identifiers do not have to be unique within a list: the k-th occurrence of
/// an identifier in the old list is matched with its k-th occurrence in the
/// new list (see ``IndexDiff``).
///
/// Types that are `Equatable` get ``isContentEqual(to:)`` for free, as `==`.
public protocol Diffable {
    /// The type of the value that identifies an element across both lists.
    associatedtype DiffID: Hashable

    /// The value that identifies this element across the old and the new list.
    ///
    /// Two elements with the same identifier are the same element, perhaps in a
    /// different place, perhaps with different content.
    var diffIdentifier: DiffID { get }

    /// Returns whether this element shows the same content as `other`, an
    /// element with the same ``diffIdentifier``.
    ///
    /// Only called on pairs with equal identifiers, and only in the
    /// ``DiffOptions/Mode-swift.enum/equality`` mode.
    func isContentEqual(to other: Self) -> Bool
}

extension Diffable where Self: Equatable {
    /// Returns `self == other`: an `Equatable` element's content is the whole
    /// value.
    ///
    /// - Complexity: The cost of `==`.
    @inlinable
    public func isContentEqual(to other: Self) -> Bool {
        self == other
    }
}

/// A section of a two-level list: a diffable value (its header, its own
/// fields) that holds an ordered list of diffable items.
///
/// ``SectionedDiff`` matches sections by ``Diffable/diffIdentifier`` and,
/// for every section present in both lists, diffs the section's items.
/// Items never move between sections: an item that leaves one section and
/// appears in another is a delete in the first and an insert in the second.
///
/// The section's own ``Diffable/isContentEqual(to:)`` should compare the
/// section's own fields only, not its items: a section whose content differs
/// is replaced whole in every output form (reloaded, changed, replaced), so
/// its item changes are not listed separately.
///
///     struct Feed: DiffableSection {
///       var id: String
///       var title: String
///       var items: [User]
///
///       var diffIdentifier: String { id }
///       func isContentEqual(to other: Feed) -> Bool { title == other.title }
///     }
public protocol DiffableSection: Diffable {
    /// The type of the section's items.
    associatedtype Item: Diffable

    /// The section's items, in display order.
    var items: [Item] { get }
}
