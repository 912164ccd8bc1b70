extension FeedDocument {
    /// Applies a sequential delta the way Android's `ListUpdateCallback` receives one: each
    /// step in order, against the list as the previous steps left it.
    ///
    /// - `remove(index, count)`: removes `count` elements from `index`
    ///   (`index + count ≤ current count`).
    /// - `insert(index, count, values)`: inserts the `count` values at `index`
    ///   (`index ≤ current count`).
    /// - `move(from, to)`: removes the element at `from`, then inserts it at `to`
    ///   (both `< current count`).
    /// - `change(index, count, values)`: replaces `count` elements from `index`.
    ///
    /// Item steps name their section by its index at that moment. Finally every section's
    /// version is set from `section_versions`, and the snapshot and cursor from the header.
    ///
    /// - Returns: The document after every step.
    /// - Throws: ``DeltaApplyError``: a position out of range at the moment of its step, an
    ///   unknown section, a `count` that differs from the values carried (or is not positive),
    ///   or a delta starting from another snapshot.
    public func applying(sequential: FeedDelta.Sequential) throws(DeltaApplyError) -> FeedDocument {
        try checkStart(sequential.header)
        var result = self
        for (offset, step) in sequential.operations.enumerated() {
            let name = "operations[\(offset)]"
            switch step {
            case .removeSections(let index, let count):
                try SequentialList.remove(&result.sections, index: index, count: count, name: name, section: nil)
            case .insertSections(let index, let count, let values):
                try SequentialList.insert(&result.sections, index: index, count: count, values: values, name: name, section: nil)
            case .moveSection(let from, let to):
                try SequentialList.move(&result.sections, from: from, to: to, name: name, section: nil)
            case .changeSections(let index, let count, let values):
                try SequentialList.change(&result.sections, index: index, count: count, values: values, name: name, section: nil)
            case .removeItems(let section, let index, let count):
                try result.checkSection(section, name: name)
                try SequentialList.remove(&result.sections[section].items, index: index, count: count, name: name, section: section)
            case .insertItems(let section, let index, let count, let values):
                try result.checkSection(section, name: name)
                try SequentialList.insert(&result.sections[section].items, index: index, count: count, values: values, name: name, section: section)
            case .moveItem(let section, let from, let to):
                try result.checkSection(section, name: name)
                try SequentialList.move(&result.sections[section].items, from: from, to: to, name: name, section: section)
            case .changeItems(let section, let index, let count, let values):
                try result.checkSection(section, name: name)
                try SequentialList.change(&result.sections[section].items, index: index, count: count, values: values, name: name, section: section)
            }
        }
        try result.finish(with: sequential.header)
        return result
    }

    private func checkSection(_ section: Int, name: String) throws(DeltaApplyError) {
        guard sections.indices.contains(section) else {
            throw .unknownSection(operation: name, section: section, count: sections.count)
        }
    }
}

/// The four `ListUpdateCallback` steps on one array, with bounds checks that name the step.
private enum SequentialList {
    static func outOfRange(_ name: String, section: Int?, index: Int, count: Int) -> DeltaApplyError {
        if let section {
            return .itemIndexOutOfRange(operation: name, section: section, index: index, count: count)
        }
        return .sectionIndexOutOfRange(operation: name, index: index, count: count)
    }

    static func checkCount(_ count: Int, values: Int?, name: String) throws(DeltaApplyError) {
        guard count > 0 else { throw .countMismatch("\(name): count \(count) must be positive") }
        if let values, values != count {
            throw .countMismatch("\(name): count \(count) but \(values) values")
        }
    }

    static func remove<T>(_ list: inout [T], index: Int, count: Int, name: String, section: Int?) throws(DeltaApplyError) {
        try checkCount(count, values: nil, name: name)
        guard index >= 0, index < list.count else { throw outOfRange(name, section: section, index: index, count: list.count) }
        guard index + count <= list.count else { throw outOfRange(name, section: section, index: index + count - 1, count: list.count) }
        list.removeSubrange(index..<index + count)
    }

    static func insert<T>(_ list: inout [T], index: Int, count: Int, values: [T], name: String, section: Int?) throws(DeltaApplyError) {
        try checkCount(count, values: values.count, name: name)
        guard index >= 0, index <= list.count else { throw outOfRange(name, section: section, index: index, count: list.count) }
        list.insert(contentsOf: values, at: index)
    }

    static func move<T>(_ list: inout [T], from: Int, to: Int, name: String, section: Int?) throws(DeltaApplyError) {
        guard from >= 0, from < list.count else { throw outOfRange(name, section: section, index: from, count: list.count) }
        guard to >= 0, to < list.count else { throw outOfRange(name, section: section, index: to, count: list.count) }
        let element = list.remove(at: from)
        list.insert(element, at: to)
    }

    static func change<T>(_ list: inout [T], index: Int, count: Int, values: [T], name: String, section: Int?) throws(DeltaApplyError) {
        try checkCount(count, values: values.count, name: name)
        guard index >= 0, index < list.count else { throw outOfRange(name, section: section, index: index, count: list.count) }
        guard index + count <= list.count else { throw outOfRange(name, section: section, index: index + count - 1, count: list.count) }
        list.replaceSubrange(index..<index + count, with: values)
    }
}
