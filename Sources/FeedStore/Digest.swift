import GRDB

extension FeedStore {
    /// A checksum of the whole content of the store: every row of `users`, `videos`, `ads` and
    /// `follows`, in primary key order, column by column (snapshots and versions excluded).
    ///
    /// Two stores with equal digests hold the same content, with overwhelming likelihood. Used to
    /// check that seeding is deterministic, and handy for operators comparing two databases.
    /// It is a 64-bit FNV-1a hash, not a cryptographic one.
    ///
    /// - Returns: 16 lowercase hex digits.
    /// - Throws: ``FeedStoreError/storage(code:message:)`` on SQLite failure.
    /// - Complexity: O(n) over every content row; about a second for 500,000 videos.
    public func contentDigest() throws(FeedStoreError) -> String {
        try typedRead { reader throws(FeedStoreError) in
            try mappingErrors {
                var hasher = FNV1a64()
                for sql in [
                    "SELECT * FROM users ORDER BY id",
                    "SELECT * FROM videos ORDER BY id",
                    "SELECT * FROM ads ORDER BY id",
                    "SELECT * FROM follows ORDER BY follower_id, followee_id",
                ] {
                    hasher.combine(string: sql)
                    let rows = try Row.fetchCursor(reader.db, sql: sql)
                    while let row = try rows.next() {
                        hasher.combine(byte: 0x1E)
                        for value in row.databaseValues {
                            hasher.combine(value)
                        }
                    }
                }
                return hasher.hexDigest
            }
        }
    }
}

/// 64-bit FNV-1a over a canonical byte encoding of SQLite values.
struct FNV1a64 {
    private(set) var state: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(byte: UInt8) {
        state = (state ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    mutating func combine(integer: Int64) {
        var bits = UInt64(bitPattern: integer)
        for _ in 0..<8 {
            combine(byte: UInt8(truncatingIfNeeded: bits))
            bits >>= 8
        }
    }

    mutating func combine(bytes: some Sequence<UInt8>) {
        var count: Int64 = 0
        for byte in bytes {
            combine(byte: byte)
            count += 1
        }
        combine(integer: count)
    }

    mutating func combine(string: String) {
        combine(bytes: string.utf8)
    }

    /// Type tag, then the value's bytes (length-suffixed for text and blobs).
    mutating func combine(_ value: DatabaseValue) {
        switch value.storage {
        case .null:
            combine(byte: 0)
        case let .int64(integer):
            combine(byte: 1)
            combine(integer: integer)
        case let .double(double):
            combine(byte: 2)
            combine(integer: Int64(bitPattern: double.bitPattern))
        case let .string(string):
            combine(byte: 3)
            combine(string: string)
        case let .blob(data):
            combine(byte: 4)
            combine(bytes: data)
        }
    }

    var hexDigest: String {
        let hex = String(state, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
