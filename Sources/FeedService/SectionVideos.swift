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

    /// The videos a batch of writes touched, by id or by author, as ``forEach(touchedBy:_:)``
    /// compares them with a page's.
    enum Touched {
        /// One video (a like): one number compared per item.
        case video(Int64)
        /// A few ids: compared one by one, cheaper than hashing each item into sets.
        case few(videos: [Int64], authors: [Int64])
        /// Many ids.
        case many(videos: Set<Int64>, authors: Set<Int64>)

        init(videos: Set<Int64>, authors: Set<Int64>) {
            if videos.count == 1, authors.isEmpty, let video = videos.first {
                self = .video(video)
            } else if videos.count + authors.count <= 8 {
                self = .few(videos: Array(videos), authors: Array(authors))
            } else {
                self = .many(videos: videos, authors: authors)
            }
        }

        func contains(_ ref: VideoRef) -> Bool {
            switch self {
            case .video(let id): ref.id == id
            case .few(let videos, let authors): videos.contains(ref.id) || authors.contains(ref.author)
            case .many(let videos, let authors): videos.contains(ref.id) || authors.contains(ref.author)
            }
        }
    }

    /// Calls `body` with the section, item and video of each video `touched` contains, in page
    /// order: one pass over the page's one array.
    func forEach(touchedBy touched: Touched, _ body: (_ section: Int, _ item: Int, _ video: VideoRef) -> Void) {
        refs.withUnsafeBufferPointer { refs in
            var section = 0
            for (index, ref) in refs.enumerated() {
                guard let ref, touched.contains(ref) else { continue }
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
