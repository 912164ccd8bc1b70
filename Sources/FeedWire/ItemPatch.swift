import Deterministic
public import JSONBytes

/// The fields of an item's `data` that changed between two versions of one item (same id, same
/// kind), sent instead of the whole item when a like count or a title moves.
///
/// On the wire it is the item's new `version` with either an RFC 7396 merge patch of its data
/// (`{"version":"…","patch":{"video":{"like_count":4321}}}`, in batch and sequential deltas) or
/// one JSON Patch `replace` per field (`/sections/1/items/0/data/video/like_count`). Only changes
/// both can say are patches: values replaced by values, never a member added or removed, never a
/// value set to `null` (a merge patch's `null` removes) and never an object or array replaced;
/// anything else sends the whole item.
///
/// The version is the hash of the item's kind and its data in canonical form, so a client that
/// applies a patch checks it reached the right item with ``FeedDocument/Item/computedVersion``.
public struct ItemPatch: Hashable, Sendable {
    /// One changed field: its place in `data` (member names, outermost first) and its new value.
    public struct Change: Hashable, Sendable {
        /// Member names from `data` down to the field.
        public var path: [String]
        /// The field's new value (a string, number or boolean).
        public var value: JSONValue

        /// Creates a change.
        public init(path: [String], value: JSONValue) {
            self.path = path
            self.value = value
        }
    }

    /// The item's version after the patch, 16 hex digits.
    public var version: String
    /// The changed fields, in the order of their paths.
    public let changes: [Change]
    /// ``mergePatch`` serialized, made once: a like on an item many pages show is one patch,
    /// written into every viewer's delta.
    public let mergePatchJSON: [UInt8]

    /// Creates a patch.
    public init(version: String, changes: [Change]) {
        self.version = version
        self.changes = changes
        mergePatchJSON = Self.mergePatch(of: changes).serialized()
    }

    /// The patch from one rendering of an item to another, or nil when the whole item should
    /// be sent: another id or kind, a change a patch cannot say (see the type's overview), no
    /// change at all, or a patch not smaller than the item.
    public init?(from old: FeedItem, to new: FeedItem) {
        guard old.id == new.id, old.kind == new.kind, old.version != new.version,
            let oldData = try? JSONValue(parsing: old.json)["data"], let newData = try? JSONValue(parsing: new.json)["data"],
            let changes = fieldChanges(from: oldData, to: newData, at: []), !changes.isEmpty
        else { return nil }
        self.init(version: new.versionText, changes: changes)
        // The patch and the version it carries against the item without its size.
        guard mergePatchJSON.count + 16 < new.json.count else { return nil }
    }

    /// The changes as an RFC 7396 merge patch of the item's `data`.
    public var mergePatch: JSONValue { Self.mergePatch(of: changes) }

    private static func mergePatch(of changes: [Change]) -> JSONValue {
        var root = JSONValue.object([:])
        for change in changes { root.setting(change.value, at: change.path[...]) }
        return root
    }

    /// Reads a merge patch back into changes, or nil when it says something a feed patch never
    /// says (a `null`, which would remove a member, or an empty object).
    public init?(version: String, mergePatch: JSONValue) {
        var changes: [Change] = []
        func collect(_ value: JSONValue, at path: [String]) -> Bool {
            switch value {
            case .null: return false
            case .object(let members):
                guard !members.isEmpty || path.isEmpty else { return false }
                for key in members.keys.sorted() where !collect(members[key]!, at: path + [key]) { return false }
                return true
            default:
                guard !path.isEmpty else { return false }
                changes.append(Change(path: path, value: value))
                return true
            }
        }
        guard case .object = mergePatch, collect(mergePatch, at: []), !changes.isEmpty else { return nil }
        self.init(version: version, changes: changes)
    }

    /// Applies the changes to an item's data: every field must exist and hold a value of the
    /// same kind (not an object or array) beforehand.
    ///
    /// - Returns: The data after the patch, or nil when a field is missing or not a value.
    public func applied(to data: JSONValue) -> JSONValue? {
        var data = data
        for change in changes {
            guard let current = data.value(at: change.path[...]), current.isPatchableField else { return nil }
            data.setting(change.value, at: change.path[...])
        }
        return data
    }
}

extension FeedDocument.Item {
    /// The version this item's kind and data hash to: 64-bit FNV-1a (``StableHasher``) over the
    /// kind, a 0xFF separator and the data's canonical JSON (members sorted by name, no spaces),
    /// as 16 hex digits. Equal to ``version`` for every item the server sends; a client checks it
    /// after applying an ``ItemPatch``.
    public var computedVersion: String {
        var hasher = StableHasher()
        hasher.combine(kind)
        hasher.combine(bytes: data.serialized())
        return hex16(hasher.state)
    }
}

/// The fields that differ between two data values as patch changes, or nil when the difference
/// is not one a patch can say.
private func fieldChanges(from old: JSONValue, to new: JSONValue, at path: [String]) -> [ItemPatch.Change]? {
    if old == new { return [] }
    switch (old, new) {
    case (.object(let oldMembers), .object(let newMembers)):
        guard oldMembers.count == newMembers.count else { return nil }
        var changes: [ItemPatch.Change] = []
        for key in newMembers.keys.sorted() {
            guard let oldValue = oldMembers[key], let found = fieldChanges(from: oldValue, to: newMembers[key]!, at: path + [key]) else {
                return nil
            }
            changes += found
        }
        return changes
    default:
        guard !path.isEmpty, old.isPatchableField, new.isPatchableField, new != .null else { return nil }
        return [ItemPatch.Change(path: path, value: new)]
    }
}

extension JSONValue {
    /// A value a patch may replace or set: not an object or array.
    fileprivate var isPatchableField: Bool {
        switch self {
        case .object, .array: false
        default: true
        }
    }

    fileprivate func value(at path: ArraySlice<String>) -> JSONValue? {
        guard let first = path.first else { return self }
        return self[first]?.value(at: path.dropFirst())
    }

    /// Sets the member at `path`, creating objects on the way (only ever called on objects).
    fileprivate mutating func setting(_ value: JSONValue, at path: ArraySlice<String>) {
        guard let first = path.first else {
            self = value
            return
        }
        guard case .object(var members) = self else { return }
        self = .null  // drop the reference so the members are changed in place
        var child = members.removeValue(forKey: first) ?? .object([:])
        child.setting(value, at: path.dropFirst())
        members[first] = child
        self = .object(members)
    }
}
