import Deterministic
public import FeedStore

extension FeedStorage {
    /// A checksum of the whole content of the store: every row of `users`, `videos`, `ads` and
    /// `follows`, in primary key order, column by column (snapshots and versions excluded).
    ///
    /// Two stores with equal digests hold the same content, with overwhelming likelihood, on
    /// either backend (the values hashed are the records' ``StoredRecord/columnValues``). Used to
    /// check that seeding is deterministic and that a refused write changed nothing. It is a
    /// 64-bit FNV-1a hash, not a cryptographic one.
    ///
    /// - Returns: 16 lowercase hex digits.
    /// - Throws: ``FeedStoreError`` from the store.
    /// - Complexity: O(n) over every content row; about a second for 500,000 videos.
    public func contentDigest() throws(FeedStoreError) -> String {
        try reading { reader throws(FeedStoreError) in
            var hasher = StableHasher()
            func hash<Record: StoredRecord>(_ type: Record.Type) throws(FeedStoreError) {
                hasher.combine(lengthSuffixed: Record.table.utf8)
                try reader.forEach(Record.self) { record in
                    hasher.combine(UInt8(0x1E))
                    for value in record.columnValues { hasher.combine(value) }
                }
            }
            try hash(User.self)
            try hash(Video.self)
            try hash(Ad.self)
            try hash(Follow.self)
            let hex = String(hasher.state, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }
    }
}

/// The canonical byte encoding of column values the digest hashes.
extension StableHasher {
    /// The bytes, then their count (so adjacent texts cannot run into each other).
    fileprivate mutating func combine(lengthSuffixed bytes: some Sequence<UInt8>) {
        var count: Int64 = 0
        for byte in bytes {
            combine(byte)
            count += 1
        }
        combine(count)
    }

    /// A type tag, then the value's bytes (length-suffixed for text and blobs).
    fileprivate mutating func combine(_ value: ColumnValue) {
        switch value {
        case .null:
            combine(UInt8(0))
        case let .integer(integer):
            combine(UInt8(1))
            combine(integer)
        case let .text(string):
            combine(UInt8(3))
            combine(lengthSuffixed: string.utf8)
        case let .blob(data):
            combine(UInt8(4))
            combine(lengthSuffixed: data)
        }
    }
}
