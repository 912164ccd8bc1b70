import FeedIndex

/// For each section of a cached page, for each of its items, the video it shows (nil for the
/// other items): all in one array, with where each section ends.
///
/// A poll or live event that a write may touch looks through every video of its page. As an
/// array per section that read a dozen small arrays, each a cache miss in a page nobody had
/// asked for since (a like on a popular video touches thousands of pages one after another);
/// one array is read in a few consecutive lines.
struct SectionVideos: Sendable, Equatable {
    private var refs: [VideoRef?]
    /// Section i's items are `refs[ends[i - 1] ..< ends[i]]` (from 0 for the first).
    private var ends: [Int]

    init(_ sections: some Sequence<[VideoRef?]>) {
        refs = []
        ends = []
        for section in sections {
            refs.append(contentsOf: section)
            ends.append(refs.count)
        }
    }

    /// How many sections the page has.
    var sectionCount: Int { ends.count }

    /// The videos of section `section`'s items, in order (indexed from its start index).
    func items(of section: Int) -> ArraySlice<VideoRef?> {
        refs[range(of: section)]
    }

    /// Where section `section`'s items are in `refs`.
    private func range(of section: Int) -> Range<Int> {
        (section == 0 ? 0 : ends[section - 1])..<ends[section]
    }

    /// The video item `item` of section `section` shows; nil for another kind of item or a
    /// position the section does not have.
    func video(section: Int, item: Int) -> VideoRef? {
        guard ends.indices.contains(section) else { return nil }
        let items = self.items(of: section)
        guard item >= 0, item < items.count else { return nil }
        return items[items.startIndex + item]
    }

    /// Calls `body` with the section, item and video of each video whose id or author is one of
    /// `videos` or `authors`, in page order. A write touches one or two ids: comparing each of
    /// the page's videos with those in one pass over the array costs less than hashing it into
    /// sets, and a like (one video) compares one number per item.
    func forEach(showing videos: [Int64], orBy authors: [Int64], _ body: (_ section: Int, _ item: Int, _ video: VideoRef) -> Void) {
        refs.withUnsafeBufferPointer { refs in
            var section = 0
            for (index, ref) in refs.enumerated() {
                guard let ref else { continue }
                let shown: Bool
                if videos.count == 1 && authors.isEmpty {
                    shown = ref.id == videos[0]
                } else {
                    shown = videos.contains(ref.id) || authors.contains(ref.author)
                }
                guard shown else { continue }
                while ends[section] <= index { section += 1 }
                body(section, index - (section == 0 ? 0 : ends[section - 1]), ref)
            }
        }
    }

    /// Section `section` showing `items` instead.
    mutating func replace(section: Int, with items: [VideoRef?]) {
        let range = range(of: section)
        refs.replaceSubrange(range, with: items)
        let moved = items.count - range.count
        if moved != 0 {
            for later in section..<ends.count { ends[later] += moved }
        }
    }
}
