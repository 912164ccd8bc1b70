import Algorithms

/// A sorted multiset-free collection of keys with O(log n + c) insert and remove (c, the chunk
/// size, bounds the elements moved) and in-order iteration: the order behind "most liked videos
/// first" and "most followed users first", which change with every like and follow.
///
/// Keys live in a list of sorted chunks of at most ``chunkLimit`` keys: an insert or removal
/// shifts one chunk, never the whole collection, so a million keys cost microseconds per update
/// where one sorted array would move megabytes.
package struct SortedKeys<Key: Comparable>: Sequence {
    /// The most keys one chunk holds before it splits in two.
    package static var chunkLimit: Int { 512 }

    private var chunks: [[Key]] = []
    /// The number of keys.
    package private(set) var count = 0

    /// An empty collection.
    package init() {}

    /// A collection of `keys`, which must be sorted ascending with no duplicates.
    package init(sorted keys: [Key]) {
        let size = Self.chunkLimit / 2
        var start = 0
        while start < keys.count {
            let end = Swift.min(start + size, keys.count)
            chunks.append(Array(keys[start..<end]))
            start = end
        }
        count = keys.count
    }

    package var isEmpty: Bool { count == 0 }

    /// Inserts `key`; returns false when it was already present.
    @discardableResult
    package mutating func insert(_ key: Key) -> Bool {
        guard !chunks.isEmpty else {
            chunks = [[key]]
            count = 1
            return true
        }
        let chunk = chunkIndex(for: key)
        let position = Self.lowerBound(of: key, in: chunks[chunk])
        if position < chunks[chunk].count, chunks[chunk][position] == key { return false }
        chunks[chunk].insert(key, at: position)
        count += 1
        if chunks[chunk].count > Self.chunkLimit {
            let half = chunks[chunk].count / 2
            let upper = Array(chunks[chunk][half...])
            chunks[chunk].removeSubrange(half...)
            chunks.insert(upper, at: chunk + 1)
        }
        return true
    }

    /// Removes `key`; returns false when it was not present.
    @discardableResult
    package mutating func remove(_ key: Key) -> Bool {
        guard !chunks.isEmpty else { return false }
        let chunk = chunkIndex(for: key)
        let position = Self.lowerBound(of: key, in: chunks[chunk])
        guard position < chunks[chunk].count, chunks[chunk][position] == key else { return false }
        chunks[chunk].remove(at: position)
        count -= 1
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
        return true
    }

    /// Whether `key` is present.
    package func contains(_ key: Key) -> Bool {
        guard !chunks.isEmpty else { return false }
        let chunk = chunks[chunkIndex(for: key)]
        let position = Self.lowerBound(of: key, in: chunk)
        return position < chunk.count && chunk[position] == key
    }

    /// The chunk that holds `key` or where it belongs: the first whose last key is not smaller.
    private func chunkIndex(for key: Key) -> Int {
        Swift.min(chunks.count - 1, chunks.partitioningIndex { !($0[$0.count - 1] < key) })
    }

    private static func lowerBound(of key: Key, in chunk: [Key]) -> Int {
        chunk.partitioningIndex { !($0 < key) }
    }

    /// Iterates in ascending order.
    package struct Iterator: IteratorProtocol {
        fileprivate let chunks: [[Key]]
        fileprivate var chunk = 0
        fileprivate var position = 0

        package mutating func next() -> Key? {
            while chunk < chunks.count {
                if position < chunks[chunk].count {
                    defer { position += 1 }
                    return chunks[chunk][position]
                }
                chunk += 1
                position = 0
            }
            return nil
        }
    }

    package func makeIterator() -> Iterator { Iterator(chunks: chunks) }
}
