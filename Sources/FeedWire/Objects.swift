import Deterministic
public import JSONBytes

// The objects the API answers with, each written in one place: the user, video and ad objects
// inside feed items, the item and section envelopes, and the resources of the `/v1/users`,
// `/v1/videos` and `/v1/ads` routes. The writers read their values through the protocols below,
// which the store's records satisfy as they are (the same property names), so nothing is copied
// into wire types on the way out.

/// What a feed shows of a user: in a video's `author`, a suggestion's `user`, the header's
/// `viewer`.
public protocol UserFields {
    var id: Int64 { get }
    var handle: String { get }
    var displayName: String { get }
    var avatarURL: String? { get }
}

/// A user as `/v1/users` answers: the feed's user object, with the follow counts and the creation
/// time beside it.
public protocol UserResourceFields: UserFields {
    var followerCount: Int64 { get }
    var followingCount: Int64 { get }
    var createdAt: Int64 { get }
}

/// What a feed shows of a video.
public protocol VideoFields {
    var id: Int64 { get }
    var title: String { get }
    var thumbnailURL: String { get }
    var durationSeconds: Int64 { get }
    var likeCount: Int64 { get }
    var viewCount: Int64 { get }
    var createdAt: Int64 { get }
}

/// A video as `/v1/videos` answers: the feed's fields, its author and its last update.
public protocol VideoResourceFields: VideoFields {
    var authorID: Int64 { get }
    var updatedAt: Int64 { get }
}

/// What a feed shows of an ad.
public protocol AdFields {
    var id: Int64 { get }
    var advertiser: String { get }
    var title: String { get }
    var imageURL: String { get }
    var targetURL: String { get }
}

/// An ad as `/v1/ads` answers: the feed's fields, its weight, whether it runs, its last update.
public protocol AdResourceFields: AdFields {
    var weight: Int64 { get }
    var active: Bool { get }
    var updatedAt: Int64 { get }
}

/// A follow edge as `PUT /v1/users/{id}/follows/{followee}` answers.
public protocol FollowResourceFields {
    var followerID: Int64 { get }
    var followeeID: Int64 { get }
    var createdAt: Int64 { get }
}

extension JSONWriter {
    // MARK: Inside feed items
    //
    // An item's data is written in its canonical form: members sorted by name, no spaces,
    // strings escaped as `JSONWriter.string` does (RFC 8785's rules for the strings and integers
    // a feed holds). The item's version hashes exactly these bytes, so a client that patches
    // fields of an item can serialize its data the same way and check it reached the version the
    // server announced (`FeedDocument.Item.computedVersion`).

    /// `{"avatar_url":…|null,"display_name":…,"handle":…,"id":…}`.
    public mutating func user(_ user: some UserFields) {
        literal("{\"avatar_url\":")
        optionalString(user.avatarURL)
        literal(",\"display_name\":")
        string(user.displayName)
        literal(",\"handle\":")
        string(user.handle)
        literal(",\"id\":")
        int(user.id)
        literal("}")
    }

    /// A video item's data: `{"author":{user}|null,"video":{…}}`.
    public mutating func videoData(_ video: some VideoFields, author: (any UserFields)?) {
        literal("{\"author\":")
        if let author { user(author) } else { null() }
        literal(",\"video\":{\"created_at\":")
        int(video.createdAt)
        literal(",\"duration_seconds\":")
        int(video.durationSeconds)
        literal(",\"id\":")
        int(video.id)
        literal(",\"like_count\":")
        int(video.likeCount)
        literal(",\"thumbnail_url\":")
        string(video.thumbnailURL)
        literal(",\"title\":")
        string(video.title)
        literal(",\"view_count\":")
        int(video.viewCount)
        literal("}}")
    }

    /// An ad item's data: `{"advertiser":…,"id":…,"image_url":…,"target_url":…,"title":…}`.
    public mutating func adData(_ ad: some AdFields) {
        literal("{\"advertiser\":")
        string(ad.advertiser)
        literal(",\"id\":")
        int(ad.id)
        literal(",\"image_url\":")
        string(ad.imageURL)
        literal(",\"target_url\":")
        string(ad.targetURL)
        literal(",\"title\":")
        string(ad.title)
        literal("}")
    }

    /// A suggested user's data: `{"follower_count":…,"mutual_followees":…,"user":{user}}`.
    public mutating func suggestionData(_ suggested: some UserFields, followerCount: Int64, mutualFollowees: Int64) {
        literal("{\"follower_count\":")
        int(followerCount)
        literal(",\"mutual_followees\":")
        int(mutualFollowees)
        literal(",\"user\":")
        user(suggested)
        literal("}")
    }

    /// The header's data: `{"title":"For you","viewer":{user}}`.
    public mutating func headerData(viewer: some UserFields) {
        literal("{\"title\":\"For you\",\"viewer\":")
        user(viewer)
        literal("}")
    }

    /// The empty state's data.
    public static let emptyStateData = Array(#"{"message":"Follow people to fill your feed with their videos.","title":"Nothing here yet"}"#.utf8)

    // MARK: Envelopes

    /// The start of an item or a section, `{"id":…,"kind":…,"version":"…"`, left open for the
    /// members that follow; the version written as its 16 hex digits.
    public mutating func openEnvelope(id: String, kind: String, version: UInt64) {
        literal("{\"id\":")
        string(id)
        literal(",\"kind\":")
        string(kind)
        literal(",\"version\":\"")
        hexDigits(version)
        literal("\"")
    }

    /// Appends `value` as 16 lowercase hex digits (no quotes).
    public mutating func hexDigits(_ value: UInt64) {
        var digits: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &digits) { raw in
            let buffer = raw.bindMemory(to: UInt8.self)
            writeHex16(value, into: buffer)
            self.raw(bytes: UnsafeBufferPointer(buffer))
        }
    }

    /// A feed page: `{"snapshot":…,"viewer":…,"sections":[…],"next_cursor":…|null}` and
    /// `"prefetch":{…}` when there is a hint, each of the `sections` written by `section`.
    public mutating func page<Section>(
        snapshot: String, viewer: Int64, sections: [Section], nextCursor: String?, prefetch: Prefetch? = nil,
        section: (inout JSONWriter, Section) -> Void
    ) {
        literal("{\"snapshot\":")
        string(snapshot)
        literal(",\"viewer\":")
        int(viewer)
        literal(",\"sections\":")
        array(sections, element: section)
        literal(",\"next_cursor\":")
        optionalString(nextCursor)
        if let prefetch {
            literal(",\"prefetch\":")
            self.prefetch(prefetch)
        }
        literal("}")
    }

    /// `{"index":…,"section":…}`.
    public mutating func prefetch(_ prefetch: Prefetch) {
        literal("{\"index\":")
        int(prefetch.index)
        literal(",\"section\":")
        string(prefetch.section)
        literal("}")
    }

    /// The members every delta form starts with, left open for the form's own:
    /// `{"snapshot":…,"next_cursor":…,"section_versions":{"3":"…"},"change_count":…`,
    /// `next_cursor` only when it changed (`nextCursor` nil: it did not) and `section_versions`
    /// (new section index → version) only when it has any. What the request said, the form and
    /// the snapshot it starts from, is not repeated.
    public mutating func openDelta(
        snapshot: String, nextCursor: String??, sectionVersions: [(index: Int, version: UInt64)], changeCount: Int
    ) {
        literal("{\"snapshot\":")
        string(snapshot)
        if let nextCursor {
            literal(",\"next_cursor\":")
            optionalString(nextCursor)
        }
        if !sectionVersions.isEmpty {
            literal(",\"section_versions\":{")
            for (position, entry) in sectionVersions.enumerated() {
                raw(position == 0 ? "\"" : ",\"")
                int(entry.index)
                literal("\":\"")
                hexDigits(entry.version)
                literal("\"")
            }
            literal("}")
        }
        literal(",\"change_count\":")
        int(changeCount)
    }

    // MARK: Resources (keys in sorted order; absent optionals left out)

    /// A user at `/v1/users`: the user object the feed shows, with the counts and creation time
    /// beside it (as a suggestion's data has its follower count beside it),
    /// `{"user":{user},"follower_count":…,"following_count":…,"created_at":…}`.
    public mutating func resource(_ profile: some UserResourceFields) {
        literal("{\"user\":")
        user(profile)
        literal(",\"follower_count\":")
        int(profile.followerCount)
        literal(",\"following_count\":")
        int(profile.followingCount)
        literal(",\"created_at\":")
        int(profile.createdAt)
        literal("}")
    }

    /// A video at `/v1/videos`.
    public mutating func resource(_ video: some VideoResourceFields) {
        var first = true
        member("author_id", &first) { $0.int(video.authorID) }
        member("created_at", &first) { $0.int(video.createdAt) }
        member("duration_seconds", &first) { $0.int(video.durationSeconds) }
        member("id", &first) { $0.int(video.id) }
        member("like_count", &first) { $0.int(video.likeCount) }
        member("thumbnail_url", &first) { $0.string(video.thumbnailURL) }
        member("title", &first) { $0.string(video.title) }
        member("updated_at", &first) { $0.int(video.updatedAt) }
        member("view_count", &first) { $0.int(video.viewCount) }
        literal("}")
    }

    /// An ad at `/v1/ads`.
    public mutating func resource(_ ad: some AdResourceFields) {
        var first = true
        member("active", &first) { $0.bool(ad.active) }
        member("advertiser", &first) { $0.string(ad.advertiser) }
        member("id", &first) { $0.int(ad.id) }
        member("image_url", &first) { $0.string(ad.imageURL) }
        member("target_url", &first) { $0.string(ad.targetURL) }
        member("title", &first) { $0.string(ad.title) }
        member("updated_at", &first) { $0.int(ad.updatedAt) }
        member("weight", &first) { $0.int(ad.weight) }
        literal("}")
    }

    /// A follow edge.
    public mutating func resource(_ follow: some FollowResourceFields) {
        var first = true
        member("created_at", &first) { $0.int(follow.createdAt) }
        member("followee_id", &first) { $0.int(follow.followeeID) }
        member("follower_id", &first) { $0.int(follow.followerID) }
        literal("}")
    }

    /// `{` or `,` (the first member opens the object), the key, then the value.
    private mutating func member(_ name: String, _ first: inout Bool, value: (inout JSONWriter) -> Void) {
        raw(first ? "{" : ",")
        first = false
        key(name)
        value(&self)
    }
}

/// A record the write routes answer with: its resource object as a whole document. The store's
/// records conform by declaring it beside the fields protocol they satisfy.
public protocol WireResource {
    /// Writes the resource object.
    func writeResource(to json: inout JSONWriter)
}

extension WireResource {
    /// The resource object as a JSON document.
    public var resourceDocument: [UInt8] {
        var json = JSONWriter(capacity: 256)
        writeResource(to: &json)
        return json.bytes
    }
}

extension WireResource where Self: UserResourceFields {
    public func writeResource(to json: inout JSONWriter) { json.resource(self) }
}

extension WireResource where Self: VideoResourceFields {
    public func writeResource(to json: inout JSONWriter) { json.resource(self) }
}

extension WireResource where Self: AdResourceFields {
    public func writeResource(to json: inout JSONWriter) { json.resource(self) }
}

extension WireResource where Self: FollowResourceFields {
    public func writeResource(to json: inout JSONWriter) { json.resource(self) }
}
