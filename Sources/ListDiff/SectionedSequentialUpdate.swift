/// One step of a sectioned sequential update: a step on the list of
/// sections, or a step on the items of one section.
public enum SectionedSequentialOperation: Hashable, Sendable {
    /// A step on the list of sections. A `change` replaces the sections whole
    /// (own content and items) with the new list's sections at the same
    /// positions.
    case section(SequentialOperation)

    /// A step on the items of the section at index `section` at that moment
    /// (which is also its index in the new list of sections).
    case item(section: Int, SequentialOperation)
}

extension SectionedSequentialOperation: CustomStringConvertible {
    /// The step as written in Swift, such as `item(section: 2, move(from: 3, to: 0))`.
    public var description: String {
        switch self {
        case let .section(step): "section(\(step))"
        case let .item(section, step): "item(section: \(section), \(step))"
        }
    }
}

/// The changes of a sectioned list as steps applied one after the other.
///
/// First the section steps, in the order of ``SequentialUpdate`` (removes,
/// moves, inserts, changes), leaving the list of sections in its final
/// order; then, for each section present in both lists whose own content did
/// not change, in increasing order of section index, that section's item
/// steps (again removes, moves, inserts, changes). So every section index an
/// item step names, and every insert or change position, is also an index
/// into the new list.
///
///     for operation in diff.sequential.operations {
///       switch operation {
///       case let .section(step): apply(step, toSectionsOf: adapter)
///       case let .item(section, step): apply(step, toItemsOf: adapter, section: section)
///       }
///     }
public struct SectionedSequentialUpdate: Hashable, Sendable {
    /// The steps, in the order they must be applied.
    public var operations: [SectionedSequentialOperation]

    /// Creates a sectioned sequential update from its steps.
    @inlinable
    public init(operations: [SectionedSequentialOperation]) {
        self.operations = operations
    }
}

extension SectionedDiff {
    /// The changes as steps applied one after the other (see
    /// ``SectionedSequentialUpdate`` for their order and meaning).
    ///
    /// - Complexity: The sum of the costs of ``IndexDiff/sequential`` for the
    ///   sections and for each section present in both lists.
    public var sequential: SectionedSequentialUpdate {
        var operations = sections._core.sequential.operations.map { SectionedSequentialOperation.section($0) }
        for itemDiff in itemDiffs
        where itemDiff.items.hasChanges && !_isReplaced(oldSection: itemDiff.oldSection) {
            let section = itemDiff.newSection
            for step in itemDiff.items._core.sequential.operations {
                operations.append(.item(section: section, step))
            }
        }
        return SectionedSequentialUpdate(operations: operations)
    }
}

/// Where the sections and their items are in a sectioned JSON document.
///
/// With the defaults, a document `{"sections": [{"items": [...]}, ...]}` is
/// patched at `/sections/3` and `/sections/3/items/2`.
public struct JSONPatchPaths: Hashable, Sendable {
    /// The array of sections, from the document root.
    public var sections: JSONPointer

    /// The array of items, from a section object.
    public var items: JSONPointer

    /// Creates paths.
    ///
    /// - Parameters:
    ///   - sections: The array of sections, from the document root.
    ///   - items: The array of items, from a section object.
    @inlinable
    public init(
        sections: JSONPointer = JSONPointer(tokens: ["sections"]),
        items: JSONPointer = JSONPointer(tokens: ["items"])
    ) {
        self.sections = sections
        self.items = items
    }

    /// The pointer to the array of items of section `section`.
    ///
    /// - Complexity: O(*k*), the number of tokens.
    public func itemsArray(ofSection section: Int) -> JSONPointer {
        sections.appending(index: section).appending(items)
    }
}

extension SectionedDiff {
    /// The changes as a JSON Patch on a document holding an array of section
    /// objects, each holding an array of items.
    ///
    ///     diff.jsonPatch().operations.map(\.path.description)
    ///     // ["/sections/1", "/sections/0/items/2", ...]
    ///
    /// The operations are those of ``sequential``, one per element: a section
    /// `add` or `replace` has a ``JSONPatchOperation/Value/section(_:)`` value
    /// (the whole new section with its items), an item `add` or `replace` an
    /// ``JSONPatchOperation/Value/item(_:)`` value.
    ///
    /// - Parameter paths: Where sections and items are in the document.
    /// - Complexity: The cost of ``sequential`` plus one operation per changed
    ///   element.
    public func jsonPatch(paths: JSONPatchPaths = JSONPatchPaths()) -> JSONPatch {
        sequential.jsonPatch(paths: paths)
    }
}

extension SectionedSequentialUpdate {
    /// The steps as a JSON Patch on a document holding an array of section
    /// objects, each holding an array of items: one operation per element, as
    /// ``SectionedDiff/jsonPatch(paths:)`` describes.
    ///
    /// - Parameter paths: Where sections and items are in the document.
    /// - Complexity: One operation per changed element.
    public func jsonPatch(paths: JSONPatchPaths = JSONPatchPaths()) -> JSONPatch {
        var patch: [JSONPatchOperation] = []
        var itemsArrays: [Int: JSONPointer] = [:]
        for step in operations {
            switch step {
            case let .section(step):
                _appendJSONPatch(for: step, array: paths.sections, to: &patch) { .section($0) }
            case let .item(section, step):
                let array = itemsArrays[section] ?? paths.itemsArray(ofSection: section)
                itemsArrays[section] = array
                _appendJSONPatch(for: step, array: array, to: &patch) {
                    .item(ItemPath(section: section, item: $0))
                }
            }
        }
        return JSONPatch(operations: patch)
    }
}
