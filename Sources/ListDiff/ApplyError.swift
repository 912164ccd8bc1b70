/// Why an update could not be applied to a list: the update breaks one of
/// UIKit's batch-update rules, names a position that does not exist at that
/// moment, or does not add up to the new list.
///
///     do {
///       let rebuilt = try update.apply(to: old, newElements: new)
///     } catch {
///       print(error.kind, error.section as Any, error.index as Any, error.message)
///     }
public struct ApplyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The rule an update broke.
    public enum Kind: Hashable, Sendable {
        /// A position outside the list (or section) at that moment, or a value
        /// index outside the new list.
        case indexOutOfRange
        /// An old position used twice by one batch: deleted, reloaded or moved
        /// from more than once, or two of those.
        case duplicateSource
        /// A new position used twice by one batch: inserted or moved to more
        /// than once, or both.
        case duplicateDestination
        /// The result does not have the new list's number of elements: old
        /// count − deletes + inserts ≠ new count.
        case countMismatch
        /// An item operation names a section that the same batch inserts,
        /// deletes, reloads or moves.
        case operationInChangedSection
        /// A JSON Patch path that is not under the expected array, or whose
        /// last token is not an array index.
        case invalidPath
        /// An operation that lacks a member it needs (a JSON Patch `add` without
        /// a value, a `move` without `from`), or has a value of the wrong kind,
        /// or a sequential step with a count below one.
        case malformedOperation
    }

    /// The rule broken.
    public var kind: Kind

    /// The section concerned, for item-level problems of a sectioned list.
    public var section: Int?

    /// The position concerned, when there is one.
    public var index: Int?

    /// A sentence for people.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, section: Int? = nil, index: Int? = nil, _ message: String) {
        self.kind = kind
        self.section = section
        self.index = index
        self.message = message
    }

    /// The error's kind, position and message.
    public var description: String {
        var text = "ApplyError.\(kind)"
        if let section { text += " section \(section)" }
        if let index { text += " index \(index)" }
        return text + ": " + message
    }
}
