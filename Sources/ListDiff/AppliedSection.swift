/// A section rebuilt by an apply function: the section value (its own
/// fields) and its items, as they stand after the update.
///
/// For a section the update did not replace, `section` is the old section
/// value (its own content is unchanged) and `items` the rebuilt items; for an
/// inserted or replaced section, both come from the new list.
public struct AppliedSection<Section, Item> {
    /// The section value.
    public var section: Section

    /// The section's items after the update.
    public var items: [Item]

    /// Creates a rebuilt section.
    @inlinable
    public init(section: Section, items: [Item]) {
        self.section = section
        self.items = items
    }
}

extension AppliedSection: Equatable where Section: Equatable, Item: Equatable {}
extension AppliedSection: Hashable where Section: Hashable, Item: Hashable {}
extension AppliedSection: Sendable where Section: Sendable, Item: Sendable {}
