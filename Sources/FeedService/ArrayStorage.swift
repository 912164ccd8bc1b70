extension Array {
    /// Whether both are the same array storage (a copy not written to since: equal without
    /// comparing their elements), not merely equal elements; two empty arrays may share the one
    /// empty storage.
    ///
    /// Compares the references to the storage without following them: an array here is that
    /// one reference (no Objective-C bridging on Linux), where `withUnsafeBufferPointer` reads
    /// the count from the storage, a cache miss for an array not touched for a while.
    func sharesStorage(with other: [Element]) -> Bool {
        unsafeBitCast(self, to: UnsafeRawPointer.self) == unsafeBitCast(other, to: UnsafeRawPointer.self)
    }
}
