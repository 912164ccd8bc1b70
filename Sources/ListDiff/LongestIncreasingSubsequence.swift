/// Marks one longest strictly increasing subsequence of `sequence`.
///
/// Patience sorting: each value either extends the longest run found so far
/// or replaces the smallest pile top that is not smaller than it (binary
/// search). Values that extend the last pile, the common case for lists that
/// mostly kept their order, cost O(1).
///
///     longestIncreasingSubsequence(of: [3, 0, 1, 4, 2])
///     // [false, true, true, false, true]: 0, 1, 2
///
/// - Parameter sequence: Distinct integers.
/// - Returns: A flag per position of `sequence`, `true` for the members of
///   the subsequence. Among several longest subsequences, the one whose last
///   member comes first is chosen, deterministically.
/// - Complexity: O(*n* log *n*) worst case, O(*n*) when the sequence is
///   increasing, where *n* is the length of `sequence`.
@usableFromInline
internal func longestIncreasingSubsequence(of sequence: [Int]) -> [Bool] {
    let count = sequence.count
    var member = [Bool](repeating: false, count: count)
    guard count > 0 else { return member }
    // pileTop[p]: position (in `sequence`) of the top of pile p; pileValue[p]
    // is its value, kept alongside for cache-friendly binary searches.
    // previous[k]: the position of the top of the pile left of k's pile when k
    // was placed, i.e. the member before k in a longest run ending at k.
    let pileTop = UnsafeMutablePointer<Int>.allocate(capacity: count)
    let pileValue = UnsafeMutablePointer<Int>.allocate(capacity: count)
    let previous = UnsafeMutablePointer<Int>.allocate(capacity: count)
    defer {
        pileTop.deallocate()
        pileValue.deallocate()
        previous.deallocate()
    }
    var piles = 0
    sequence.withUnsafeBufferPointer { values in
        for k in 0..<count {
            let value = values[k]
            if piles == 0 || pileValue[piles &- 1] < value {
                previous[k] = piles > 0 ? pileTop[piles &- 1] : -1
                pileTop[piles] = k
                pileValue[piles] = value
                piles &+= 1
                continue
            }
            // The leftmost pile whose top value exceeds `value`.
            var low = 0
            var high = piles &- 1
            while low < high {
                let middle = (low &+ high) &>> 1
                if pileValue[middle] > value { high = middle } else { low = middle &+ 1 }
            }
            previous[k] = low > 0 ? pileTop[low &- 1] : -1
            pileTop[low] = k
            pileValue[low] = value
        }
    }
    member.withUnsafeMutableBufferPointer { member in
        var k = pileTop[piles &- 1]
        while k >= 0 {
            member[k] = true
            k = previous[k]
        }
    }
    return member
}
