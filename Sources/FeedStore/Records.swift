public import Foundation

// Time convention, for every record of this module: instants are `Int64` Unix time in
// milliseconds (UTC), named `…At`. Milliseconds keep ordering exact and indexes compact, and they
// encode to JSON as plain integers.

// MARK: - User

/// A person who posts videos and follows other people. Row of the `users` table.
///
/// `followerCount` and `followingCount` are maintained by the database (triggers on `follows`),
/// so they are always consistent with the follow graph.
public struct User: Sendable, Hashable, Codable, Identifiable {
    /// Primary key, assigned by the store, never reused after a deletion.
    public var id: Int64
    /// Unique handle, `[a-z0-9_]{1,30}`.
    public var handle: String
    /// Name shown under thumbnails, 1…60 characters.
    public var displayName: String
    /// Avatar image URL (`http://` or `https://`), or `nil` when the user has none.
    public var avatarURL: String?
    /// How many users follow this one.
    public var followerCount: Int64
    /// How many users this one follows.
    public var followingCount: Int64
    /// Creation time, Unix milliseconds.
    public var createdAt: Int64

    /// Memberwise initializer (the store creates users through ``FeedStorage/createUser(handle:displayName:avatarURL:)``).
    public init(
        id: Int64, handle: String, displayName: String, avatarURL: String?,
        followerCount: Int64 = 0, followingCount: Int64 = 0, createdAt: Int64
    ) {
        self.id = id
        self.handle = handle
        self.displayName = displayName
        self.avatarURL = avatarURL
        self.followerCount = followerCount
        self.followingCount = followingCount
        self.createdAt = createdAt
    }

    /// The snake_case column names, also used as `Codable` keys.
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case handle
        case displayName = "display_name"
        case avatarURL = "avatar_url"
        case followerCount = "follower_count"
        case followingCount = "following_count"
        case createdAt = "created_at"
    }
}

extension User: StoredRecord {
    /// The table name, `users`.
    public static let table = "users"
    /// The primary key.
    public static let keyColumns = ["id"]
}

// MARK: - Video

/// A short video shown in the feed grid. Row of the `videos` table.
public struct Video: Sendable, Hashable, Codable, Identifiable {
    /// Primary key, assigned by the store, never reused after a deletion.
    public var id: Int64
    /// The author, a ``User/id``.
    public var authorID: Int64
    /// Title, 1…200 characters, trimmed.
    public var title: String
    /// Thumbnail image URL (`http://` or `https://`).
    public var thumbnailURL: String
    /// Length in seconds, 1…36000.
    public var durationSeconds: Int64
    /// Number of likes, ≥ 0. Popularity order is `likeCount` descending, then `id` descending.
    public var likeCount: Int64
    /// Number of views, ≥ 0.
    public var viewCount: Int64
    /// Creation time, Unix milliseconds. Feed order is `createdAt` descending, then `id` descending.
    public var createdAt: Int64
    /// Time of the last update (equal to `createdAt` until the first update), Unix milliseconds.
    public var updatedAt: Int64

    /// Memberwise initializer (the store creates videos through ``FeedStorage/createVideo(authorID:title:thumbnailURL:durationSeconds:)``).
    public init(
        id: Int64, authorID: Int64, title: String, thumbnailURL: String, durationSeconds: Int64,
        likeCount: Int64 = 0, viewCount: Int64 = 0, createdAt: Int64, updatedAt: Int64
    ) {
        self.id = id
        self.authorID = authorID
        self.title = title
        self.thumbnailURL = thumbnailURL
        self.durationSeconds = durationSeconds
        self.likeCount = likeCount
        self.viewCount = viewCount
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The snake_case column names, also used as `Codable` keys.
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case authorID = "author_id"
        case title
        case thumbnailURL = "thumbnail_url"
        case durationSeconds = "duration_seconds"
        case likeCount = "like_count"
        case viewCount = "view_count"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

extension Video: StoredRecord {
    /// The table name, `videos`.
    public static let table = "videos"
    /// The primary key.
    public static let keyColumns = ["id"]
}

// MARK: - Ad

/// An advertisement the service drops into feeds. Row of the `ads` table.
public struct Ad: Sendable, Hashable, Codable, Identifiable {
    /// Primary key, assigned by the store, never reused after a deletion.
    public var id: Int64
    /// Who pays for the ad, 1…100 characters.
    public var advertiser: String
    /// Headline, 1…200 characters.
    public var title: String
    /// Creative image URL (`http://` or `https://`).
    public var imageURL: String
    /// Click-through URL (`http://` or `https://`).
    public var targetURL: String
    /// Relative selection weight, 1…1000.
    public var weight: Int64
    /// Whether the ad may be shown. Only active ads are returned by ``SQLiteReader/activeAds()``.
    public var active: Bool
    /// Time of creation or last update, Unix milliseconds.
    public var updatedAt: Int64

    /// Memberwise initializer (the store creates ads through ``FeedStorage/createAd(advertiser:title:imageURL:targetURL:weight:active:)``).
    public init(
        id: Int64, advertiser: String, title: String, imageURL: String, targetURL: String,
        weight: Int64, active: Bool, updatedAt: Int64
    ) {
        self.id = id
        self.advertiser = advertiser
        self.title = title
        self.imageURL = imageURL
        self.targetURL = targetURL
        self.weight = weight
        self.active = active
        self.updatedAt = updatedAt
    }

    /// The snake_case column names, also used as `Codable` keys.
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case advertiser
        case title
        case imageURL = "image_url"
        case targetURL = "target_url"
        case weight
        case active
        case updatedAt = "updated_at"
    }
}

extension Ad: StoredRecord {
    /// The table name, `ads`.
    public static let table = "ads"
    /// The primary key.
    public static let keyColumns = ["id"]
}

/// The active ads and the epoch of the ad inventory they were read at.
public struct AdInventory: Sendable, Hashable, Codable {
    /// A counter that changes (increases) with every ad write: create, update, delete, seed.
    /// Equal epochs mean an identical inventory, so the service can cache ad placement per epoch.
    public var epoch: Int64
    /// The ads with `active = true`, ordered by `id` ascending.
    public var ads: [Ad]

    /// Creates an inventory value.
    public init(epoch: Int64, ads: [Ad]) {
        self.epoch = epoch
        self.ads = ads
    }
}

// MARK: - Follow

/// "`followerID` follows `followeeID`". Row of the `follows` table, keyed by both ids.
public struct Follow: Sendable, Hashable, Codable {
    /// The user who follows.
    public var followerID: Int64
    /// The user who is followed.
    public var followeeID: Int64
    /// When the follow was created, Unix milliseconds.
    public var createdAt: Int64

    /// The snake_case column names, also used as `Codable` keys.
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case followerID = "follower_id"
        case followeeID = "followee_id"
        case createdAt = "created_at"
    }
}

extension Follow: StoredRecord {
    /// The table name, `follows`.
    public static let table = "follows"
    /// The primary key.
    public static let keyColumns = ["follower_id", "followee_id"]
}

// MARK: - Snapshot

/// The structure of a feed a viewer was last given, as opaque bytes encoded by the service.
/// Row of the `snapshots` table, keyed by (`viewerID`, `id`).
///
/// The key includes the viewer because the id is a hash of the structure: two viewers shown the
/// same feed get the same id, and pruning one viewer's history must not delete the other's.
public struct StoredSnapshot: Sendable, Hashable, Codable {
    /// The hash the service computed for the structure (an ETag), 1…128 characters.
    public var id: String
    /// The viewer the snapshot was served to. An opaque number: not checked against `users`, so
    /// anonymous viewers can use a reserved value such as 0.
    public var viewerID: Int64
    /// When the snapshot was last saved (saving an equal id again refreshes it), Unix milliseconds.
    public var createdAt: Int64
    /// The encoded structure, stored and returned byte for byte.
    public var structure: Data

    /// Memberwise initializer (the store saves snapshots through `SQLiteFeedStore.saveSnapshot(id:viewer:structure:)`).
    public init(id: String, viewerID: Int64, createdAt: Int64, structure: Data) {
        self.id = id
        self.viewerID = viewerID
        self.createdAt = createdAt
        self.structure = structure
    }

    /// The snake_case column names, also used as `Codable` keys.
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case viewerID = "viewer_id"
        case id
        case createdAt = "created_at"
        case structure
    }
}

extension StoredSnapshot: StoredRecord {
    /// The table name, `snapshots`.
    public static let table = "snapshots"
    /// The primary key.
    public static let keyColumns = ["viewer_id", "id"]
}

// MARK: - Counts

/// Row counts of every table, from ``FeedStoreReader/counts()``.
public struct StoreCounts: Sendable, Hashable, Codable {
    /// Rows in `users`.
    public var users: Int
    /// Rows in `videos`.
    public var videos: Int
    /// Rows in `ads`.
    public var ads: Int
    /// Rows in `follows`.
    public var follows: Int
    /// Rows in `snapshots`.
    public var snapshots: Int

    /// Creates a counts value.
    public init(users: Int, videos: Int, ads: Int, follows: Int, snapshots: Int) {
        self.users = users
        self.videos = videos
        self.ads = ads
        self.follows = follows
        self.snapshots = snapshots
    }
}
