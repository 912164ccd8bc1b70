/// The answer of `GET /v1/users/{id}/feed/delta?since=…&format=…` (or of the `POST` variant):
/// what changed between the snapshot a client holds and the feed now, in one of three forms.
///
/// Every form carries a ``Header`` (the new snapshot id, the next cursor and the version of every
/// section of the new page); the changes themselves are a UIKit batch (``Batch``), ordered
/// Android-style steps (``Sequential``) or an RFC 6902 patch (``JSONPatch``). Apply any of them
/// with ``FeedDocument/applying(_:)``.
///
///     let delta = try FeedDelta(parsing: responseBody)
///     document = try document.applying(delta)
public enum FeedDelta: Hashable, Sendable {
    /// One `performBatchUpdates` worth of changes.
    case batch(Batch)
    /// Steps applied one after the other.
    case sequential(Sequential)
    /// A JSON Patch on the feed document.
    case jsonPatch(JSONPatch)

    /// The wire names of the three forms, the `format` query parameter.
    public enum Format: String, Hashable, Sendable, CaseIterable, Codable {
        /// UIKit batch updates: ``FeedDelta/Batch``.
        case batch
        /// Android `ListUpdateCallback` steps: ``FeedDelta/Sequential``.
        case sequential
        /// RFC 6902 JSON Patch: ``FeedDelta/JSONPatch``.
        case jsonpatch
    }

    /// The members every form carries.
    public struct Header: Hashable, Sendable {
        /// The snapshot id the delta starts from (the one the client holds).
        public var since: String
        /// The snapshot id of the feed after the delta.
        public var snapshot: String
        /// The next page's cursor after the delta (null on the last page).
        public var nextCursor: String?
        /// The version of every section of the new page, in order.
        public var sectionVersions: [String]
        /// How many changes the delta holds (inserts, deletes, moves and updates of sections and
        /// items), as the server counted them.
        public var changeCount: Int

        /// Creates a header.
        public init(since: String, snapshot: String, nextCursor: String?, sectionVersions: [String], changeCount: Int) {
            self.since = since
            self.snapshot = snapshot
            self.nextCursor = nextCursor
            self.sectionVersions = sectionVersions
            self.changeCount = changeCount
        }
    }

    /// The header of whichever form this is.
    public var header: Header {
        switch self {
        case .batch(let batch): batch.header
        case .sequential(let sequential): sequential.header
        case .jsonPatch(let patch): patch.header
        }
    }

    /// Which form this is.
    public var format: Format {
        switch self {
        case .batch: .batch
        case .sequential: .sequential
        case .jsonPatch: .jsonpatch
        }
    }
}

// MARK: - Shared pieces

extension FeedDelta {
    /// The position of an item: a section index and an item index within it. On the wire, a
    /// two-element array `[section, item]`.
    public struct ItemPath: Hashable, Sendable, Comparable, CustomStringConvertible {
        /// The section index.
        public var section: Int
        /// The item index within the section.
        public var item: Int

        /// Creates a path.
        public init(section: Int, item: Int) {
            self.section = section
            self.item = item
        }

        /// Orders by section, then item.
        public static func < (lhs: ItemPath, rhs: ItemPath) -> Bool {
            (lhs.section, lhs.item) < (rhs.section, rhs.item)
        }

        /// "[section, item]".
        public var description: String { "[\(section), \(item)]" }
    }

    /// A move from an old position to a new one. On the wire, `[from, to]`.
    public struct Move<Position: Hashable & Sendable>: Hashable, Sendable {
        /// The position before the batch (old index or path).
        public var from: Position
        /// The position after the batch (new index or path).
        public var to: Position

        /// Creates a move.
        public init(from: Position, to: Position) {
            self.from = from
            self.to = to
        }
    }
}

// MARK: - Batch

extension FeedDelta {
    /// UIKit batch updates: everything happens at once, as in one `performBatchUpdates`.
    ///
    /// Deletes and reloads name *old* positions, inserts name *new* positions, moves go from old
    /// to new. Item operations only name sections that stay in place (not inserted, deleted,
    /// reloaded or moved: those come whole). The payloads of inserted and reloaded sections and
    /// items come alongside, keyed by their positions.
    ///
    ///     collectionView.performBatchUpdates {
    ///         collectionView.deleteSections(IndexSet(batch.sections.deletes))
    ///         collectionView.insertSections(IndexSet(batch.sections.inserts))
    ///         collectionView.reloadSections(IndexSet(batch.sections.reloads))
    ///         for move in batch.sections.moves { collectionView.moveSection(move.from, toSection: move.to) }
    ///         collectionView.deleteItems(at: batch.items.deletes.map(indexPath))
    ///         // … inserts, reloads, moves
    ///     }
    public struct Batch: Hashable, Sendable {
        /// The common members.
        public var header: Header
        /// Section-level operations.
        public var sections: SectionChanges
        /// Item-level operations.
        public var items: ItemChanges
        /// The new sections, one per ``SectionChanges/inserts`` index.
        public var insertedSections: [InsertedSection]
        /// The replacements of reloaded sections, one per ``SectionChanges/reloads`` index.
        public var reloadedSections: [ReloadedSection]
        /// The new items, one per ``ItemChanges/inserts`` path.
        public var insertedItems: [InsertedItem]
        /// The replacements of reloaded items, one per ``ItemChanges/reloads`` path.
        public var reloadedItems: [ReloadedItem]

        /// Creates a batch delta.
        public init(
            header: Header, sections: SectionChanges = SectionChanges(), items: ItemChanges = ItemChanges(),
            insertedSections: [InsertedSection] = [], reloadedSections: [ReloadedSection] = [],
            insertedItems: [InsertedItem] = [], reloadedItems: [ReloadedItem] = []
        ) {
            self.header = header
            self.sections = sections
            self.items = items
            self.insertedSections = insertedSections
            self.reloadedSections = reloadedSections
            self.insertedItems = insertedItems
            self.reloadedItems = reloadedItems
        }
    }

    /// Section operations of a ``Batch``.
    public struct SectionChanges: Hashable, Sendable {
        /// Old indexes of the sections to delete.
        public var deletes: [Int]
        /// New indexes of the sections to insert.
        public var inserts: [Int]
        /// Sections to move, old index to new index.
        public var moves: [Move<Int>]
        /// Old indexes of the sections to replace whole.
        public var reloads: [Int]

        /// Creates section operations.
        public init(deletes: [Int] = [], inserts: [Int] = [], moves: [Move<Int>] = [], reloads: [Int] = []) {
            self.deletes = deletes
            self.inserts = inserts
            self.moves = moves
            self.reloads = reloads
        }
    }

    /// Item operations of a ``Batch``.
    public struct ItemChanges: Hashable, Sendable {
        /// Old paths of the items to delete.
        public var deletes: [ItemPath]
        /// New paths of the items to insert.
        public var inserts: [ItemPath]
        /// Items to move, old path to new path (within one section).
        public var moves: [Move<ItemPath>]
        /// Old paths of the items to replace.
        public var reloads: [ItemPath]

        /// Creates item operations.
        public init(deletes: [ItemPath] = [], inserts: [ItemPath] = [], moves: [Move<ItemPath>] = [], reloads: [ItemPath] = []) {
            self.deletes = deletes
            self.inserts = inserts
            self.moves = moves
            self.reloads = reloads
        }
    }

    /// An inserted section and its new index.
    public struct InsertedSection: Hashable, Sendable {
        /// The new index.
        public var index: Int
        /// The whole section.
        public var section: FeedDocument.Section

        /// Creates an inserted section.
        public init(index: Int, section: FeedDocument.Section) {
            self.index = index
            self.section = section
        }
    }

    /// A reloaded section: its old index, where it ends up, and its new content.
    public struct ReloadedSection: Hashable, Sendable {
        /// The old index (the one in ``SectionChanges/reloads``).
        public var oldIndex: Int
        /// The new index.
        public var index: Int
        /// The whole new section.
        public var section: FeedDocument.Section

        /// Creates a reloaded section.
        public init(oldIndex: Int, index: Int, section: FeedDocument.Section) {
            self.oldIndex = oldIndex
            self.index = index
            self.section = section
        }
    }

    /// An inserted item and its new path.
    public struct InsertedItem: Hashable, Sendable {
        /// The new path.
        public var path: ItemPath
        /// The item.
        public var item: FeedDocument.Item

        /// Creates an inserted item.
        public init(path: ItemPath, item: FeedDocument.Item) {
            self.path = path
            self.item = item
        }
    }

    /// A reloaded item: its old path, where it ends up, and its new content.
    public struct ReloadedItem: Hashable, Sendable {
        /// The old path (the one in ``ItemChanges/reloads``).
        public var oldPath: ItemPath
        /// The new path.
        public var path: ItemPath
        /// The new item.
        public var item: FeedDocument.Item

        /// Creates a reloaded item.
        public init(oldPath: ItemPath, path: ItemPath, item: FeedDocument.Item) {
            self.oldPath = oldPath
            self.path = path
            self.item = item
        }
    }
}

// MARK: - Sequential

extension FeedDelta {
    /// Steps applied strictly in order, each position valid at the moment it is applied
    /// (Android's `ListUpdateCallback`: `onRemoved`, `onInserted`, `onMoved`, `onChanged`).
    ///
    /// Section steps come first and leave the sections in their final order; then item steps,
    /// each naming a section by its (new) index.
    public struct Sequential: Hashable, Sendable {
        /// The common members.
        public var header: Header
        /// The steps, in the order they must be applied.
        public var operations: [Operation]

        /// Creates a sequential delta.
        public init(header: Header, operations: [Operation]) {
            self.header = header
            self.operations = operations
        }
    }

    /// One step of a ``Sequential`` delta. Counts travel with the values so a client can check
    /// they agree.
    public enum Operation: Hashable, Sendable {
        /// Removes `count` sections starting at `index`.
        case removeSections(index: Int, count: Int)
        /// Inserts `sections` (`count` of them) at `index`.
        case insertSections(index: Int, count: Int, sections: [FeedDocument.Section])
        /// Removes the section at `from` and inserts it at `to` (an index of the list without it).
        case moveSection(from: Int, to: Int)
        /// Replaces `count` sections starting at `index` with `sections`.
        case changeSections(index: Int, count: Int, sections: [FeedDocument.Section])
        /// Removes `count` items of section `section` starting at `index`.
        case removeItems(section: Int, index: Int, count: Int)
        /// Inserts `items` (`count` of them) into section `section` at `index`.
        case insertItems(section: Int, index: Int, count: Int, items: [FeedDocument.Item])
        /// Moves an item of section `section` from `from` to `to` (remove, then insert).
        case moveItem(section: Int, from: Int, to: Int)
        /// Replaces `count` items of section `section` starting at `index` with `items`.
        case changeItems(section: Int, index: Int, count: Int, items: [FeedDocument.Item])
    }
}

// MARK: - JSON Patch

extension FeedDelta {
    /// An RFC 6902 JSON Patch on the feed document (`/sections/3`, `/sections/3/items/2`,
    /// `/sections/3/version`, `/snapshot`, `/next_cursor`), for clients that keep the feed as
    /// JSON (web). Apply it with ``JSONValue/applying(patch:)`` or
    /// ``FeedDocument/applying(jsonPatch:)``.
    public struct JSONPatch: Hashable, Sendable {
        /// The common members.
        public var header: Header
        /// The operations, in order.
        public var operations: [PatchOperation]

        /// Creates a JSON Patch delta.
        public init(header: Header, operations: [PatchOperation]) {
            self.header = header
            self.operations = operations
        }
    }
}

/// One RFC 6902 operation.
public struct PatchOperation: Hashable, Sendable {
    /// The `op` member.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// Inserts into an array, or sets an object member.
        case add
        /// Removes an array element or an object member.
        case remove
        /// Replaces an existing value.
        case replace
        /// Removes the value at `from` and adds it at `path`.
        case move
        /// Adds a copy of the value at `from` at `path`.
        case copy
        /// Fails unless the value at `path` equals `value`.
        case test
    }

    /// The operation.
    public var op: Kind
    /// The JSON Pointer (RFC 6901) the operation applies to.
    public var path: String
    /// The source pointer of `move` and `copy`.
    public var from: String?
    /// The value of `add`, `replace` and `test` (`.null` is a value; nil means absent).
    public var value: JSONValue?

    /// Creates an operation.
    public init(op: Kind, path: String, from: String? = nil, value: JSONValue? = nil) {
        self.op = op
        self.path = path
        self.from = from
        self.value = value
    }
}
