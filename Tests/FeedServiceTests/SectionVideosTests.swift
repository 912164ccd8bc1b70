import FeedIndex
import Testing

// @testable: `SectionVideos` is internal to the page cache, and these tests check its lookups
// directly.
@testable import FeedService

/// A cached page's videos by section and item, kept in one array (``SectionVideos``): what a
/// patch or a shift looks up must be what the sections show.
@Suite("A page's videos by section and item")
struct SectionVideosTests {
    let a = VideoRef(id: 1, author: 10)
    let b = VideoRef(id: 2, author: 20)
    let c = VideoRef(id: 3, author: 30)

    @Test("Each section's items are its own, and positions it lacks have no video")
    func sectionsKeepTheirItems() {
        let videos = SectionVideos([[a, b], [nil], [], [c, nil]])
        #expect(videos.sectionCount == 4)
        #expect(Array(videos.items(of: 0)) == [a, b])
        #expect(Array(videos.items(of: 1)) == [nil])
        #expect(videos.items(of: 2).isEmpty)
        #expect(Array(videos.items(of: 3)) == [c, nil])
        #expect(videos.video(section: 0, item: 1) == b)
        #expect(videos.video(section: 3, item: 0) == c)
        #expect(videos.video(section: 3, item: 1) == nil)
        #expect(videos.video(section: 0, item: 2) == nil)
        #expect(videos.video(section: 0, item: -1) == nil)
        #expect(videos.video(section: 4, item: 0) == nil)
    }

    @Test("A section shown with more or fewer items moves the sections after it, not those before")
    func replacingASectionMovesTheRest() {
        var videos = SectionVideos([[a], [b], [c]])
        videos.replace(section: 1, with: [c, a, nil])
        #expect(videos == SectionVideos([[a], [c, a, nil], [c]]))
        #expect(videos.video(section: 2, item: 0) == c)
        videos.replace(section: 0, with: [])
        #expect(videos == SectionVideos([[], [c, a, nil], [c]]))
        videos.replace(section: 2, with: [b, b])
        #expect(videos == SectionVideos([[], [c, a, nil], [b, b]]))
        #expect(videos.video(section: 1, item: 2) == nil)
    }

    @Test("The videos a write touches are found where the sections show them, empty sections and other items passed over")
    func videosTouchedAreFoundInTheirSections() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let sections = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                (0..<Int.random(in: 0...6, using: &generator)).map { _ -> VideoRef? in
                    Bool.random(using: &generator) && Int.random(in: 0..<4, using: &generator) == 0
                        ? nil : VideoRef(id: Int64.random(in: 1...6, using: &generator), author: Int64.random(in: 10...13, using: &generator))
                }
            }
            // Up to 12 ids: one video, a few, and more than the few the pass compares one by one.
            let videos = Set((0..<Int.random(in: 0...6, using: &generator)).map { _ in Int64.random(in: 1...6, using: &generator) })
            let authors = Set((0..<Int.random(in: 0...6, using: &generator)).map { _ in Int64.random(in: 10...13, using: &generator) })
            var expected: [[Int]] = []
            for (section, items) in sections.enumerated() {
                for (item, ref) in items.enumerated() {
                    if let ref, videos.contains(ref.id) || authors.contains(ref.author) { expected.append([section, item, Int(ref.id)]) }
                }
            }
            var found: [[Int]] = []
            SectionVideos(sections).forEach(touchedBy: SectionVideos.Touched(videos: videos, authors: authors)) { section, item, ref in
                found.append([section, item, Int(ref.id)])
            }
            #expect(found == expected, "\(sections) videos \(videos) authors \(authors)")
        }
    }
}
