/// SplitMix64, a small, fast, deterministic pseudo-random generator (Steele, Lea & Flood, 2014).
///
/// The same seed gives the same sequence on every platform and Swift version: the helpers below
/// use only integer arithmetic and exactly-rounded floating point, never the standard library's
/// `random(in:using:)` (whose algorithm is not specified). Not cryptographically secure.
public struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    /// The internal state; the whole future sequence depends only on it.
    public private(set) var state: UInt64

    /// Creates a generator whose sequence is determined by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `0..<bound` (Lemire's multiply-and-reject method, unbiased).
    /// Returns 0 when `bound` is 0.
    public mutating func next(below bound: UInt64) -> UInt64 {
        guard bound > 0 else { return 0 }
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold {
                product = next().multipliedFullWidth(by: bound)
            }
        }
        return product.high
    }

    /// A uniform integer in `range`.
    public mutating func next(in range: ClosedRange<Int>) -> Int {
        let width = UInt64(bitPattern: Int64(range.upperBound) &- Int64(range.lowerBound)) &+ 1
        if width == 0 { return Int(truncatingIfNeeded: next()) }  // the full Int64 range
        return range.lowerBound &+ Int(truncatingIfNeeded: next(below: width))
    }

    /// A uniform `Double` in `0..<1` with 53 random bits.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// `true` with probability `percent`/100.
    public mutating func chance(percent: Int) -> Bool {
        next(below: 100) < UInt64(max(0, percent))
    }

    /// A uniformly chosen element of a non-empty collection.
    public mutating func pick<C: RandomAccessCollection>(_ collection: C) -> C.Element where C.Index == Int {
        collection[collection.startIndex + Int(next(below: UInt64(collection.count)))]
    }

    /// Shuffles `array` in place (Fisher–Yates).
    public mutating func shuffle<T>(_ array: inout [T]) {
        guard array.count > 1 else { return }
        for i in stride(from: array.count - 1, to: 0, by: -1) {
            let j = Int(next(below: UInt64(i + 1)))
            array.swapAt(i, j)
        }
    }
}
