package import Deterministic
package import FeedStore

/// Where ads go in a viewer's feed and which ad each slot shows.
///
/// A PRNG seeded by the viewer id and the ad inventory's epoch draws the gaps between ads (in
/// grid sections) and a weighted choice of ad per slot. The same viewer with the same inventory
/// gets the same placement on every refresh, so new videos slide past ads instead of the ads
/// jumping around; changing the inventory (the epoch) reshuffles.
package struct AdPlacement {
    /// Grid sections before the first ad: 2…3. Between ads: 3…5.
    package static let firstGap = 2...3
    package static let gap = 3...5

    /// For each grid-section index after which an ad goes, the ad to show.
    package static func slots(viewer: Int64, inventory: AdInventory, gridSections: Int) -> [(afterGrid: Int, ad: Ad)] {
        let ads = inventory.ads.filter { $0.active && $0.weight > 0 }
        guard !ads.isEmpty, gridSections > 0 else { return [] }
        var random = SplitMix64(seed: UInt64(bitPattern: viewer) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(bitPattern: inventory.epoch))
        let totalWeight = ads.reduce(0) { $0 + $1.weight }
        var slots: [(afterGrid: Int, ad: Ad)] = []
        var position = Int(random.next(in: UInt64(firstGap.lowerBound)...UInt64(firstGap.upperBound))) - 1
        var previous: Int64 = -1
        while position < gridSections {
            var pick = Int64(random.next(in: 0...UInt64(totalWeight - 1)))
            var chosen = ads[0]
            for ad in ads {
                if pick < ad.weight { chosen = ad; break }
                pick -= ad.weight
            }
            if chosen.id == previous, ads.count > 1 {
                // Never the same ad twice in a row: take the next one in inventory order.
                let index = ads.firstIndex(where: { $0.id == chosen.id })!
                chosen = ads[(index + 1) % ads.count]
            }
            previous = chosen.id
            slots.append((position, chosen))
            position += Int(random.next(in: UInt64(gap.lowerBound)...UInt64(gap.upperBound)))
        }
        return slots
    }
}

extension SplitMix64 {
    /// A value in `range`.
    package mutating func next(in range: ClosedRange<UInt64>) -> UInt64 {
        range.lowerBound + next(below: range.upperBound - range.lowerBound + 1)
    }
}
