// Executing sequential steps on an array, checking each position at the
// moment it is applied.

extension SequentialOperation {
    /// Applies this step to `list`, taking inserted and changed values from
    /// `newElements` at the same positions.
    internal func _apply<Element>(
        to list: inout [Element], newElements: [Element], section: Int?
    ) throws(ApplyError) {
        func check(_ condition: Bool, _ index: Int, _ message: String) throws(ApplyError) {
            if !condition { throw ApplyError(.indexOutOfRange, section: section, index: index, message) }
        }
        func checkCount(_ count: Int) throws(ApplyError) {
            if count < 1 {
                throw ApplyError(.malformedOperation, section: section, "\(self) has a count below one")
            }
        }
        switch self {
        case let .remove(at, count):
            try checkCount(count)
            try check(at >= 0 && at + count <= list.count, at, "\(self) on a list of \(list.count)")
            list.removeSubrange(at..<(at + count))
        case let .insert(at, count):
            try checkCount(count)
            try check(at >= 0 && at <= list.count, at, "\(self) on a list of \(list.count)")
            try check(at + count <= newElements.count, at, "\(self) past the new list's \(newElements.count)")
            list.insert(contentsOf: newElements[at..<(at + count)], at: at)
        case let .move(from, to):
            try check(from >= 0 && from < list.count, from, "\(self) on a list of \(list.count)")
            try check(to >= 0 && to < list.count, to, "\(self) on a list of \(list.count)")
            let element = list.remove(at: from)
            list.insert(element, at: to)
        case let .change(at, count):
            try checkCount(count)
            try check(at >= 0 && at + count <= list.count, at, "\(self) on a list of \(list.count)")
            try check(at + count <= newElements.count, at, "\(self) past the new list's \(newElements.count)")
            list.replaceSubrange(at..<(at + count), with: newElements[at..<(at + count)])
        }
    }
}

extension SequentialUpdate {
    /// Rebuilds the new list by applying the steps to the old one in order,
    /// checking that every position is valid at its moment.
    ///
    /// Inserted and changed values are read from `newElements` at the step's
    /// position, which the order of a ``SequentialUpdate`` makes the element's
    /// new index. The result equals `newElements` when the update is right.
    ///
    ///     let rebuilt = try diff.sequential.apply(to: old, newElements: new)
    ///
    /// - Parameters:
    ///   - old: The list before the change.
    ///   - newElements: The list after the change.
    /// - Returns: The rebuilt list.
    /// - Throws: ``ApplyError`` when a step names a position that does not
    ///   exist at its moment, or the result's count is not the new count.
    /// - Complexity: O(*s* × *n*) for *s* steps on lists of about *n*
    ///   elements: a reference, not a fast path.
    public func apply<Element>(to old: [Element], newElements: [Element]) throws(ApplyError) -> [Element] {
        var list = old
        for operation in operations {
            try operation._apply(to: &list, newElements: newElements, section: nil)
        }
        guard list.count == newElements.count else {
            throw ApplyError(.countMismatch, "the steps leave \(list.count) elements, the new list has \(newElements.count)")
        }
        return list
    }
}
