// Executing a JSON Patch on arrays, the way RFC 6902 defines it, with values
// taken from the new list.

/// Where a JSON Patch location points in a sectioned document.
private enum _Location: Equatable {
    case section(Int)
    case item(section: Int, item: Int)
}

/// The index that `pointer` names in the array at `array`, if it is one.
private func _index(of pointer: JSONPointer, in array: [String]) -> Int? {
    guard pointer.tokens.count == array.count + 1, pointer.tokens.starts(with: array) else { return nil }
    return JSONPointer.arrayIndex(pointer.tokens[array.count])
}

/// Where `pointer` points in a sectioned document laid out as `paths` says.
private func _location(of pointer: JSONPointer, _ paths: JSONPatchPaths) throws(ApplyError) -> _Location {
    let sections = paths.sections.tokens
    if let section = _index(of: pointer, in: sections) { return .section(section) }
    let tokens = pointer.tokens
    let items = paths.items.tokens
    if tokens.count == sections.count + 1 + items.count + 1, tokens.starts(with: sections),
        let section = JSONPointer.arrayIndex(tokens[sections.count]),
        tokens[(sections.count + 1)..<(tokens.count - 1)].elementsEqual(items),
        let item = JSONPointer.arrayIndex(tokens[tokens.count - 1])
    {
        return .item(section: section, item: item)
    }
    throw ApplyError(.invalidPath, "\(pointer) is neither a section nor an item under \(paths.sections)")
}

/// Applies one operation to an array at a known index, reading values with
/// `value`, which throws for a value of the wrong kind.
private func _apply<Element>(
    _ operation: JSONPatchOperation, at index: Int, from fromIndex: Int?,
    to list: inout [Element], section: Int?, value: (JSONPatchOperation.Value) throws(ApplyError) -> Element
) throws(ApplyError) {
    func check(_ condition: Bool, _ index: Int) throws(ApplyError) {
        if !condition {
            throw ApplyError(
                .indexOutOfRange, section: section, index: index,
                "\(operation.kind) \(operation.path) on an array of \(list.count)")
        }
    }
    func required() throws(ApplyError) -> JSONPatchOperation.Value {
        guard let value = operation.value else {
            throw ApplyError(.malformedOperation, section: section, index: index, "\(operation.kind) without a value")
        }
        return value
    }
    switch operation.kind {
    case .add:
        try check(index <= list.count, index)
        list.insert(try value(try required()), at: index)
    case .remove:
        try check(index < list.count, index)
        list.remove(at: index)
    case .replace:
        try check(index < list.count, index)
        list[index] = try value(try required())
    case .move:
        guard let fromIndex else {
            throw ApplyError(.malformedOperation, section: section, index: index, "move without from")
        }
        try check(fromIndex < list.count, fromIndex)
        let element = list.remove(at: fromIndex)
        try check(index <= list.count, index)
        list.insert(element, at: index)
    }
}

extension JSONPatch {
    /// Rebuilds the new list by applying the operations, in order, to the
    /// array at `array`, with `add` and `replace` values taken from
    /// `newElements` (``JSONPatchOperation/Value/element(_:)``).
    ///
    ///     let rebuilt = try diff.jsonPatch().apply(to: old, newElements: new)
    ///
    /// - Parameters:
    ///   - old: The array before the change.
    ///   - newElements: The array after the change.
    ///   - array: Where the array is in the document (the same pointer the
    ///     patch was made with).
    /// - Returns: The rebuilt array.
    /// - Throws: ``ApplyError`` for a path that is not an index of the array,
    ///   an index out of range at its moment, a missing or foreign value, or a
    ///   final count that is not the new count.
    /// - Complexity: O(*k* × *n*) for *k* operations on *n* elements.
    public func apply<Element>(
        to old: [Element], newElements: [Element], at array: JSONPointer = JSONPointer()
    ) throws(ApplyError) -> [Element] {
        func index(_ pointer: JSONPointer) throws(ApplyError) -> Int {
            guard let index = _index(of: pointer, in: array.tokens) else {
                throw ApplyError(.invalidPath, "\(pointer) is not an index of the array at '\(array)'")
            }
            return index
        }
        func value(_ value: JSONPatchOperation.Value) throws(ApplyError) -> Element {
            guard case let .element(index) = value, index >= 0 && index < newElements.count else {
                throw ApplyError(.malformedOperation, "value \(value) is not an element of the new list")
            }
            return newElements[index]
        }
        var list = old
        for operation in operations {
            let fromIndex: Int?
            if let from = operation.from { fromIndex = try index(from) } else { fromIndex = nil }
            try _apply(operation, at: try index(operation.path), from: fromIndex, to: &list, section: nil, value: value)
        }
        guard list.count == newElements.count else {
            throw ApplyError(.countMismatch, "the patch leaves \(list.count) elements, the new list has \(newElements.count)")
        }
        return list
    }

    /// Rebuilds the new sectioned list by applying the operations, in order,
    /// to a document of sections laid out as `paths` says; section values come
    /// whole from `newSections`, item values from their items.
    ///
    ///     let rebuilt = try diff.jsonPatch().apply(to: old, newSections: new) { $0.items }
    ///
    /// - Parameters:
    ///   - old: The sections before the change.
    ///   - newSections: The sections after the change.
    ///   - paths: Where sections and items are in the document.
    ///   - items: A section's items.
    /// - Returns: The rebuilt sections.
    /// - Throws: ``ApplyError`` for a path that is neither a section nor an
    ///   item, an index out of range at its moment, a missing or foreign
    ///   value, a move between a section and an item, or final counts that
    ///   differ from the new list's.
    /// - Complexity: O(*k* × *n*) for *k* operations on *n* elements.
    public func apply<Section, Item>(
        to old: [Section], newSections: [Section], paths: JSONPatchPaths = JSONPatchPaths(),
        items: (Section) -> [Item]
    ) throws(ApplyError) -> [AppliedSection<Section, Item>] {
        var list = old.map { AppliedSection(section: $0, items: items($0)) }
        let new = newSections.map { AppliedSection(section: $0, items: items($0)) }
        func sectionValue(_ value: JSONPatchOperation.Value) throws(ApplyError) -> AppliedSection<Section, Item> {
            guard case let .section(index) = value, index >= 0 && index < new.count else {
                throw ApplyError(.malformedOperation, "value \(value) is not a section of the new list")
            }
            return new[index]
        }
        func itemValue(_ value: JSONPatchOperation.Value) throws(ApplyError) -> Item {
            guard case let .item(path) = value, path.section >= 0 && path.section < new.count,
                path.item >= 0 && path.item < new[path.section].items.count
            else {
                throw ApplyError(.malformedOperation, "value \(value) is not an item of the new list")
            }
            return new[path.section].items[path.item]
        }
        for operation in operations {
            let location = try _location(of: operation.path, paths)
            let from = try operation.from.map { (pointer) throws(ApplyError) in try _location(of: pointer, paths) }
            switch (location, from) {
            case let (.section(index), nil):
                try _apply(operation, at: index, from: nil, to: &list, section: nil, value: sectionValue)
            case let (.section(index), .section(fromIndex)?):
                try _apply(operation, at: index, from: fromIndex, to: &list, section: nil, value: sectionValue)
            case let (.item(section, item), nil):
                guard section < list.count else {
                    throw ApplyError(.indexOutOfRange, section: section, "\(operation.path) names no section")
                }
                try _apply(operation, at: item, from: nil, to: &list[section].items, section: section, value: itemValue)
            case let (.item(section, item), .item(fromSection, fromItem)?):
                guard section < list.count, fromSection < list.count else {
                    throw ApplyError(.indexOutOfRange, section: max(section, fromSection), "\(operation) names no section")
                }
                if section == fromSection {
                    try _apply(operation, at: item, from: fromItem, to: &list[section].items, section: section, value: itemValue)
                } else {
                    // RFC 6902 move across arrays: remove from one, add to the other.
                    guard fromItem < list[fromSection].items.count else {
                        throw ApplyError(.indexOutOfRange, section: fromSection, index: fromItem, "move from \(operation.from!)")
                    }
                    let moved = list[fromSection].items.remove(at: fromItem)
                    guard item <= list[section].items.count else {
                        throw ApplyError(.indexOutOfRange, section: section, index: item, "move to \(operation.path)")
                    }
                    list[section].items.insert(moved, at: item)
                }
            default:
                throw ApplyError(
                    .malformedOperation, "\(operation.kind) from \(operation.from?.description ?? "nil") to \(operation.path) mixes sections and items")
            }
        }
        try _checkCounts(list, new)
        return list
    }

    /// Rebuilds the new list of ``DiffableSection`` values; see
    /// ``apply(to:newSections:paths:items:)``.
    ///
    /// - Complexity: O(*k* × *n*) for *k* operations on *n* elements.
    public func apply<Section: DiffableSection>(
        to old: [Section], newSections: [Section], paths: JSONPatchPaths = JSONPatchPaths()
    ) throws(ApplyError) -> [AppliedSection<Section, Section.Item>] {
        try apply(to: old, newSections: newSections, paths: paths) { $0.items }
    }
}
