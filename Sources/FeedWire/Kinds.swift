/// What a section is: the section controller a client draws it with. The raw value is what the
/// wire carries in `"kind"`.
public enum SectionKind: String, Sendable, Hashable, CaseIterable {
    /// The feed's title and the viewer.
    case header
    /// Up to six videos in two columns.
    case videoGrid = "video_grid"
    /// A video grid whose last item is an ad (`stack_ads=true`).
    case videoGridStacked = "video_grid_stacked"
    /// One full-width ad.
    case ad
    /// The carousel of users to follow.
    case followSuggestions = "follow_suggestions"
    /// Shown instead of everything when there are no videos at all.
    case empty
}

/// What an item is: the cell a client draws it with. The raw value is what the wire carries in
/// `"kind"`.
public enum ItemKind: String, Sendable, Hashable, CaseIterable {
    /// A video with its author.
    case video
    /// An ad.
    case ad
    /// A user suggested to follow.
    case user
    /// The header's title and viewer.
    case header
    /// The empty state's message.
    case empty
    /// A section header with a title (the suggestions carousel's "Suggested for you").
    case sectionTitle = "section_title"
    /// A section footer leading to the whole list (the suggestions carousel's "See all").
    case seeAll = "see_all"
    /// A footer marking an ad as paid for, with its advertiser.
    case sponsored

    /// Whether this kind is a section's supplementary view (a header or footer, IGListKit's
    /// supplementary views) rather than a cell.
    public var isSupplementary: Bool {
        switch self {
        case .sectionTitle, .seeAll, .sponsored: true
        case .video, .ad, .user, .header, .empty: false
        }
    }
}
