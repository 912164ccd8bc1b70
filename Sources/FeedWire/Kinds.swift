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
}
