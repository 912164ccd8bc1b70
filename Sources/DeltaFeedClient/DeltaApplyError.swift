/// Why a delta cannot be applied to a document. Applying never half-succeeds: the apply
/// functions return a new document or throw one of these, and the original is untouched.
///
/// A client that gets one should fetch the whole feed again (and report it: the server sent a
/// delta that does not fit the snapshot it claims to start from).
public enum DeltaApplyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The delta starts from snapshot `since`, the document is snapshot `document`.
    case snapshotMismatch(document: String, since: String)
    /// A section index outside the list it names: the old list for deletes, reloads and move
    /// sources; the new list for inserts and move destinations; the list at that moment for a
    /// sequential step. `operation` says which (`sections.deletes`, `operations[2]`…).
    case sectionIndexOutOfRange(operation: String, index: Int, count: Int)
    /// An item index outside its section's item list (old, new or current, as above).
    case itemIndexOutOfRange(operation: String, section: Int, index: Int, count: Int)
    /// An item operation names a section that does not exist (`count` sections there are).
    case unknownSection(operation: String, section: Int, count: Int)
    /// An item operation names a section that the same batch inserts, deletes, reloads or
    /// moves: such sections come whole, so their items cannot have operations of their own.
    case itemOperationInWholeSection(operation: String, section: Int)
    /// An item move from one section to another (items never change sections).
    case itemMoveAcrossSections(from: FeedDelta.ItemPath, to: FeedDelta.ItemPath)
    /// The same position named twice where that is not allowed (deleted and moved, inserted
    /// twice, two moves to one place…).
    case conflictingOperations(String)
    /// Counts that do not add up: old − deletes + inserts ≠ new, or a step's `count` different
    /// from the number of values it carries.
    case countMismatch(String)
    /// The payloads do not match the operations: an insert or reload without its section or
    /// item, a payload for a position no operation names, or at another position than the one
    /// the operations give.
    case payloadMismatch(String)
    /// JSON Patch operation number `operation` (from 0) cannot be applied.
    case patchFailed(operation: Int, reason: String)
    /// The patched JSON is no longer a feed document.
    case invalidDocument(String)
    /// The operations applied, but the result disagrees with the delta's own header (its
    /// section versions, snapshot or cursor).
    case resultMismatch(String)

    /// A sentence saying what is wrong.
    public var description: String {
        switch self {
        case .snapshotMismatch(let document, let since):
            "the delta starts from snapshot \(since) but the document is snapshot \(document)"
        case .sectionIndexOutOfRange(let operation, let index, let count):
            "\(operation): section index \(index) is out of range (\(count) sections)"
        case .itemIndexOutOfRange(let operation, let section, let index, let count):
            "\(operation): item index \(index) is out of range in section \(section) (\(count) items)"
        case .unknownSection(let operation, let section, let count):
            "\(operation): there is no section \(section) (\(count) sections)"
        case .itemOperationInWholeSection(let operation, let section):
            "\(operation): section \(section) is inserted, deleted, reloaded or moved whole; its items cannot have operations"
        case .itemMoveAcrossSections(let from, let to):
            "items.moves: \(from) → \(to) moves an item between sections"
        case .conflictingOperations(let reason):
            "conflicting operations: \(reason)"
        case .countMismatch(let reason):
            "counts do not add up: \(reason)"
        case .payloadMismatch(let reason):
            "payloads do not match the operations: \(reason)"
        case .patchFailed(let operation, let reason):
            "patch[\(operation)]: \(reason)"
        case .invalidDocument(let reason):
            "the patched JSON is not a feed document: \(reason)"
        case .resultMismatch(let reason):
            "the result disagrees with the delta's header: \(reason)"
        }
    }
}

extension FeedDocument {
    /// Applies a delta of any form (see ``applying(batch:)``, ``applying(sequential:)`` and
    /// ``applying(jsonPatch:)``).
    ///
    /// - Returns: The document after the delta, equal to what a fresh fetch returns.
    /// - Throws: ``DeltaApplyError``; the document is never half-updated.
    public func applying(_ delta: FeedDelta) throws(DeltaApplyError) -> FeedDocument {
        switch delta {
        case .batch(let batch): try applying(batch: batch)
        case .sequential(let sequential): try applying(sequential: sequential)
        case .jsonPatch(let patch): try applying(jsonPatch: patch)
        }
    }

    /// Checks that a delta starts from this document's snapshot.
    func checkStart(_ header: FeedDelta.Header) throws(DeltaApplyError) {
        guard header.since == snapshot else { throw .snapshotMismatch(document: snapshot, since: header.since) }
    }

    /// Copies the header into a document whose sections are in their final order: every
    /// section's version from `section_versions`, the snapshot and the cursor.
    mutating func finish(with header: FeedDelta.Header) throws(DeltaApplyError) {
        guard header.sectionVersions.count == sections.count else {
            throw .countMismatch("section_versions has \(header.sectionVersions.count) versions for \(sections.count) sections")
        }
        for index in sections.indices {
            sections[index].version = header.sectionVersions[index]
        }
        snapshot = header.snapshot
        nextCursor = header.nextCursor
    }
}
