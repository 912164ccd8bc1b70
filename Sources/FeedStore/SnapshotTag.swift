/// A snapshot id's first 8 bytes as a number, for comparing ids without reading their storage.
///
/// A snapshot id is 32 random hex digits, a heap object of its own; a search through a
/// viewer's ids that compared them read each one's storage, one cache miss per id. Two of a
/// viewer's snapshots share their first 8 digits about once in four billion, and only then are
/// the ids themselves compared.
package enum SnapshotTag {
    /// Up to the first 8 bytes of `id`, big-endian.
    package static func of(_ id: String) -> UInt64 {
        var tag: UInt64 = 0
        for byte in id.utf8.prefix(8) { tag = tag << 8 | UInt64(byte) }
        return tag
    }
}
