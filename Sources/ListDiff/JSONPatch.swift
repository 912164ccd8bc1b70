/// One operation of a JSON Patch (RFC 6902) on a JSON array.
///
/// The module has no JSON encoder; an operation says which element supplies
/// the value instead of carrying it, and the caller renders the JSON:
///
///     for operation in diff.jsonPatch(at: "/items").operations {
///       var object = ["op": operation.kind.rawValue, "path": operation.path.description]
///       if let from = operation.from { object["from"] = from.description }
///       if case .element(let index)? = operation.value { /* value: newItems[index] */ }
///     }
public struct JSONPatchOperation: Hashable, Sendable {
    /// The operation's `op` member.
    public enum Kind: String, Hashable, Sendable {
        /// Inserts ``JSONPatchOperation/value`` at ``JSONPatchOperation/path``.
        case add
        /// Removes the value at ``JSONPatchOperation/path``.
        case remove
        /// Removes the value at ``JSONPatchOperation/from`` and inserts it at
        /// ``JSONPatchOperation/path``, an index of the array without it.
        case move
        /// Replaces the value at ``JSONPatchOperation/path`` with
        /// ``JSONPatchOperation/value``.
        case replace
    }

    /// Which element of the new list is an operation's `value`.
    public enum Value: Hashable, Sendable {
        /// The element at this index of the new flat list.
        case element(Int)
        /// The section at this index of the new sectioned list, whole (its own
        /// fields and all its items).
        case section(Int)
        /// The item at this path of the new sectioned list.
        case item(ItemPath)
    }

    /// The operation (`op`).
    public var kind: Kind

    /// The location it applies to (`path`).
    public var path: JSONPointer

    /// For ``Kind/move``, the location of the value to move (`from`); `nil`
    /// otherwise.
    public var from: JSONPointer?

    /// For ``Kind/add`` and ``Kind/replace``, the element of the new list
    /// that is the operation's `value`; `nil` otherwise.
    public var value: Value?

    /// Creates an operation.
    @inlinable
    public init(kind: Kind, path: JSONPointer, from: JSONPointer? = nil, value: Value? = nil) {
        self.kind = kind
        self.path = path
        self.from = from
        self.value = value
    }
}

/// The changes of a list as a JSON Patch (RFC 6902): operations applied in
/// order to a JSON array, or, for a sectioned list, to an array of section
/// objects that each hold an array of items.
///
/// The order is that of ``SequentialUpdate`` with every run split into
/// single operations: `remove` from the highest index down, `move` in new
/// order, `add` from the lowest index up, `replace` from the lowest index up.
/// Every `add` and `replace` path ends with the index, in the new list, of
/// its value.
public struct JSONPatch: Hashable, Sendable {
    /// The operations, in the order they must be applied.
    public var operations: [JSONPatchOperation]

    /// Creates a patch from its operations.
    @inlinable
    public init(operations: [JSONPatchOperation]) {
        self.operations = operations
    }
}

/// Appends the JSON Patch operations equivalent to `step`, for an array at
/// `array`, with values identified by `value`.
internal func _appendJSONPatch(
    for step: SequentialOperation, array: JSONPointer,
    to operations: inout [JSONPatchOperation],
    value: (Int) -> JSONPatchOperation.Value
) {
    switch step {
    case let .remove(at, count):
        // Removing the same index `count` times removes the run.
        for index in (at..<(at + count)).reversed() {
            operations.append(JSONPatchOperation(kind: .remove, path: array.appending(index: index)))
        }
    case let .insert(at, count):
        for index in at..<(at + count) {
            operations.append(
                JSONPatchOperation(kind: .add, path: array.appending(index: index), value: value(index)))
        }
    case let .move(from, to):
        operations.append(
            JSONPatchOperation(
                kind: .move, path: array.appending(index: to), from: array.appending(index: from)))
    case let .change(at, count):
        for index in at..<(at + count) {
            operations.append(
                JSONPatchOperation(kind: .replace, path: array.appending(index: index), value: value(index)))
        }
    }
}

extension IndexDiff {
    /// The changes as a JSON Patch on the array at `array` (the document root
    /// by default).
    ///
    ///     // old [a b c d e] → new [a b c d]: one operation, remove "/items/4"
    ///     diff.jsonPatch(at: "/items").operations.first?.path.description
    ///
    /// - Parameter array: Where the array is in the patched document.
    /// - Returns: A patch whose `add` and `replace` values are
    ///   ``JSONPatchOperation/Value/element(_:)`` indexes into the new list.
    /// - Complexity: O(*d* + *i* + *u* log *u* + *v* log(*v* + *d*)) for *d*
    ///   deletes, *i* inserts, *u* updates and *v* moves, plus at most a scan
    ///   of the new list.
    public func jsonPatch(at array: JSONPointer = JSONPointer()) -> JSONPatch {
        var operations: [JSONPatchOperation] = []
        operations.reserveCapacity(changeCount)
        for step in _core.sequential.operations {
            _appendJSONPatch(for: step, array: array, to: &operations) { .element($0) }
        }
        return JSONPatch(operations: operations)
    }
}
