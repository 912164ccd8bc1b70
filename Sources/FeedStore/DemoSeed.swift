import Deterministic
import Foundation

/// The parameters of a deterministic demo database, for `SQLiteFeedStore.seed(_:progress:)`.
///
/// The same parameters always produce the same rows (same ids, texts, counts and times; the
/// tests compare content digests): every random choice comes from ``SplitMix64`` seeded with
/// ``seed``, and every time is an offset from ``baseTime``, never the current time.
///
/// What is generated:
/// - Users with handles like `sunny_otter` (`sunny_otter_2` on collision), display names like
///   "Maya Okafor", avatars `https://cdn.deltafeed.example/avatars/<id>.jpg`, created 90 to 30
///   days before ``baseTime``.
/// - A follow graph where each user follows ``followsPerUser`` others chosen with a Zipf law
///   (exponent 1) over a random popularity ranking: a handful of users are followed by most
///   people, most users by a few.
/// - Videos created during the 30 days before ``baseTime``, ids in creation order. Authors are
///   Zipf-distributed for 30% of videos (popular users post more) and uniform otherwise.
///   Titles from word lists, thumbnails `https://cdn.deltafeed.example/thumbs/<id>.jpg`,
///   durations mostly 5–60 s, views heavy-tailed (P(views ≥ x) ∝ 1/x) and scaled by the author's
///   follower count, likes 0.5–8.5% of views.
/// - Ads from fictional advertisers, images `https://cdn.deltafeed.example/ads/<id>.jpg`,
///   targets `https://ads.deltafeed.example/click/<id>`, 85% active, weights 10…1000.
public struct DemoSeed: Sendable, Hashable {
    /// 2025-01-01T00:00:00Z in Unix milliseconds, the default ``baseTime``.
    public static let defaultBaseTime: Int64 = 1_735_689_600_000

    /// Number of users. Default 2000.
    public var users: Int
    /// Number of videos. Default 50,000. Requires at least one user when positive.
    public var videos: Int
    /// Number of ads. Default 40.
    public var ads: Int
    /// The PRNG seed. Default 42.
    public var seed: UInt64
    /// The "now" of the demo world, Unix milliseconds: every generated time is before it.
    public var baseTime: Int64
    /// How many users each user follows (capped at `users - 1`). Default 5…50.
    public var followsPerUser: ClosedRange<Int>

    /// Creates seeding parameters; the defaults are the server's demo (2000 / 50,000 / 40, 42).
    public init(
        users: Int = 2000, videos: Int = 50_000, ads: Int = 40, seed: UInt64 = 42,
        baseTime: Int64 = DemoSeed.defaultBaseTime, followsPerUser: ClosedRange<Int> = 5...50
    ) {
        self.users = users
        self.videos = videos
        self.ads = ads
        self.seed = seed
        self.baseTime = baseTime
        self.followsPerUser = followsPerUser
    }

    /// Checks the parameters.
    package func validate() throws(FeedStoreError) {
        guard users >= 0 else { throw .invalid(field: "users", reason: "must be at least 0") }
        guard videos >= 0 else { throw .invalid(field: "videos", reason: "must be at least 0") }
        guard ads >= 0 else { throw .invalid(field: "ads", reason: "must be at least 0") }
        guard videos == 0 || users > 0 else {
            throw .invalid(field: "users", reason: "must be at least 1 to author videos")
        }
        guard followsPerUser.lowerBound >= 0 else {
            throw .invalid(field: "follows_per_user", reason: "must not be negative")
        }
        guard users <= 10_000_000 else { throw .invalid(field: "users", reason: "must be at most 10000000") }
        guard videos <= 100_000_000 else { throw .invalid(field: "videos", reason: "must be at most 100000000") }
        guard ads <= 1_000_000 else { throw .invalid(field: "ads", reason: "must be at most 1000000") }
    }
}

extension FeedStoreError {
    /// What seeding a store that has content throws.
    package static let notEmptyForSeeding = FeedStoreError.conflict(
        field: "database", reason: "the store already has content; seed only an empty store")
}

/// One demo load, shared by the stores: the rows of every table in load order (users, follows,
/// videos, ads), with the follower counts the triggers would maintain set directly (stores turn
/// them off during the load), and the progress reports every 1000 rows.
package struct DemoLoad {
    /// A table about to be loaded: its name and the columns each row gives, in order.
    package struct Table {
        package var name: String
        package var columns: [String]
    }

    private var generator: DemoGenerator
    private let users: [User]
    private let follows: [Follow]
    private let progress: ((Int, Int) -> Void)?
    /// Rows in all: users + follows + videos + ads.
    package let total: Int

    /// Validates `demo` and generates the users and the follow graph (videos come while loading).
    package init(_ demo: DemoSeed, progress: ((Int, Int) -> Void)?) throws(FeedStoreError) {
        try demo.validate()
        var generator = DemoGenerator(demo)
        var users = generator.makeUsers()
        let follows = generator.makeFollows()
        for follow in follows {
            users[Int(follow.followeeID - 1)].followerCount += 1
            users[Int(follow.followerID - 1)].followingCount += 1
        }
        self.generator = generator
        self.users = users
        self.follows = follows
        self.progress = progress
        total = users.count + follows.count + demo.videos + demo.ads
    }

    /// Hands every row to `row` (every column, ids included), calling `begin` before each table's
    /// rows and `finish` after the last, then reports (total, total).
    package mutating func run(
        begin: (Table) throws -> Void, row: ([ColumnValue]) throws -> Void, finish: () throws -> Void
    ) throws {
        var done = 0
        var lastReported = 0
        func add<Record: StoredRecord>(_ record: Record) throws {
            try row(record.columnValues)
            done += 1
            if let progress, done - lastReported >= 1000, done < total {
                lastReported = done
                progress(done, total)
            }
        }
        func table<Record: StoredRecord>(_ type: Record.Type) throws {
            try begin(Table(name: Record.table, columns: Record.columnNames))
        }
        try table(User.self)
        for user in users { try add(user) }
        try table(Follow.self)
        for follow in follows { try add(follow) }
        try table(Video.self)
        try generator.forEachVideo { try add($0) }
        try table(Ad.self)
        for ad in generator.makeAds() { try add(ad) }
        try finish()
        progress?(total, total)
    }
}

/// Generates the demo rows. All randomness flows through one ``SplitMix64`` in a fixed order:
/// users, follows, videos (plan, then per-video generators), ads.
package struct DemoGenerator {
    static let day: Int64 = 24 * 60 * 60 * 1000

    let demo: DemoSeed
    var random: SplitMix64
    /// `rankedUsers[r]` is the user id of popularity rank r (0 = most popular).
    private(set) var rankedUsers: [Int64] = []
    /// Cumulative Zipf(1) weights over ranks.
    private var zipfCumulative: [Double] = []
    /// Follower count per user id (index id - 1), known once follows are generated.
    private(set) var followerCounts: [Int64] = []

    package init(_ demo: DemoSeed) {
        self.demo = demo
        self.random = SplitMix64(seed: demo.seed)
    }

    // MARK: Users

    package mutating func makeUsers() -> [User] {
        var users: [User] = []
        users.reserveCapacity(demo.users)
        var taken = Set<String>()
        for index in 0..<demo.users {
            let id = Int64(index + 1)
            let base = random.pick(Words.adjectives) + "_" + random.pick(Words.animals)
            var handle = base
            var suffix = 2
            while !taken.insert(handle).inserted {
                handle = base + "_" + String(suffix)
                suffix += 1
            }
            let displayName = random.pick(Words.firstNames) + " " + random.pick(Words.lastNames)
            let createdAt = demo.baseTime - 30 * Self.day - Int64(random.next(below: UInt64(60 * Self.day)))
            users.append(
                User(
                    id: id, handle: handle, displayName: displayName,
                    avatarURL: "https://cdn.deltafeed.example/avatars/\(id).jpg", createdAt: createdAt))
        }

        rankedUsers = users.map(\.id)
        random.shuffle(&rankedUsers)
        zipfCumulative = []
        zipfCumulative.reserveCapacity(demo.users)
        var sum = 0.0
        for rank in 0..<demo.users {
            sum += 1.0 / Double(rank + 1)
            zipfCumulative.append(sum)
        }
        followerCounts = Array(repeating: 0, count: demo.users)
        return users
    }

    /// A user id drawn with probability ∝ 1 / (popularity rank + 1).
    package mutating func zipfUser() -> Int64 {
        let target = random.nextUnit() * zipfCumulative[zipfCumulative.count - 1]
        var low = 0
        var high = zipfCumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if zipfCumulative[middle] > target { high = middle } else { low = middle + 1 }
        }
        return rankedUsers[low]
    }

    // MARK: Follows

    package mutating func makeFollows() -> [Follow] {
        guard demo.users > 1 else { return [] }
        var follows: [Follow] = []
        for index in 0..<demo.users {
            let follower = Int64(index + 1)
            let wanted = min(random.next(in: demo.followsPerUser), demo.users - 1)
            var chosen = Set<Int64>()
            var ordered: [Int64] = []
            var attempts = 0
            while ordered.count < wanted, attempts < wanted * 8 {
                attempts += 1
                let candidate = zipfUser()
                if candidate != follower, chosen.insert(candidate).inserted {
                    ordered.append(candidate)
                }
            }
            // Saturated (the popular head is taken): fill with users in id order from a random start.
            var next = Int64(random.next(below: UInt64(demo.users))) + 1
            while ordered.count < wanted {
                if next != follower, chosen.insert(next).inserted {
                    ordered.append(next)
                }
                next = next % Int64(demo.users) + 1
            }
            ordered.sort()
            for followee in ordered {
                let createdAt = demo.baseTime - 1 - Int64(random.next(below: UInt64(30 * Self.day - 1)))
                follows.append(Follow(followerID: follower, followeeID: followee, createdAt: createdAt))
                followerCounts[Int(followee - 1)] += 1
            }
        }
        return follows
    }

    // MARK: Videos

    /// Generates the videos in id order and hands each to `body`. Only a 24-byte plan per video
    /// is kept in memory; the rest is derived from a per-video seed while inserting.
    package mutating func forEachVideo(_ body: (Video) throws -> Void) rethrows {
        guard demo.videos > 0, demo.users > 0 else { return }
        struct Plan {
            var createdAt: Int64
            var authorID: Int64
            var seed: UInt64
        }
        var plans: [Plan] = []
        plans.reserveCapacity(demo.videos)
        for _ in 0..<demo.videos {
            let authorID =
                random.chance(percent: 30)
                ? zipfUser()
                : Int64(random.next(below: UInt64(demo.users))) + 1
            let createdAt = demo.baseTime - 1 - Int64(random.next(below: UInt64(30 * Self.day - 1)))
            plans.append(Plan(createdAt: createdAt, authorID: authorID, seed: random.next()))
        }
        // Ids in creation order, as an autoincrementing store would have assigned them. The sort
        // is stable, so equal times keep generation order.
        let order = plans.indices.sorted { (plans[$0].createdAt, $0) < (plans[$1].createdAt, $1) }

        for (position, planIndex) in order.enumerated() {
            let plan = plans[planIndex]
            let id = Int64(position + 1)
            var local = SplitMix64(seed: plan.seed)
            let title = Self.title(&local)

            let durationBucket = local.next(below: 100)
            let duration: Int64
            if durationBucket < 70 {
                duration = 5 + Int64(local.next(below: 56))
            } else if durationBucket < 95 {
                duration = 61 + Int64(local.next(below: 120))
            } else {
                duration = 181 + Int64(local.next(below: 420))
            }

            // P(raw ≥ x) ≈ 1/x, then scaled by a per-video factor and by the author's audience.
            let raw = Int64((1 << 20) / (local.next(below: 1 << 20) + 1))
            let audience = 1 + followerCounts[Int(plan.authorID - 1)] / 64
            let views = min(raw * Int64(20 + local.next(below: 80)) * audience, 1_000_000_000)
            let likes = views * Int64(5 + local.next(below: 81)) / 1000

            try body(
                Video(
                    id: id, authorID: plan.authorID, title: title,
                    thumbnailURL: "https://cdn.deltafeed.example/thumbs/\(id).jpg",
                    durationSeconds: duration, likeCount: likes, viewCount: views,
                    createdAt: plan.createdAt, updatedAt: plan.createdAt))
        }
    }

    static func title(_ random: inout SplitMix64) -> String {
        let text: String
        switch random.next(below: 8) {
        case 0:
            text = "\(random.pick(Words.adjectives)) \(random.pick(Words.things)) \(random.pick(Words.activities))"
        case 1:
            text = "\(random.pick(Words.activities)) at the \(random.pick(Words.places))"
        case 2:
            text = "How I \(random.pick(Words.verbs)) my \(random.pick(Words.things)) in \(2 + random.next(below: 29)) minutes"
        case 3:
            text = "\(3 + random.next(below: 8)) \(random.pick(Words.things)) tricks you need to try"
        case 4:
            text = "Day \(1 + random.next(below: 365)) of \(random.pick(Words.activities))"
        case 5:
            text = "\(random.pick(Words.adjectives)) \(random.pick(Words.places)) vlog"
        case 6:
            text = "When the \(random.pick(Words.animals)) joins our \(random.pick(Words.activities))"
        default:
            text = "\(random.pick(Words.activities)) with a \(random.pick(Words.adjectives)) \(random.pick(Words.things))"
        }
        return text.prefix(1).uppercased() + text.dropFirst()
    }

    // MARK: Ads

    package mutating func makeAds() -> [Ad] {
        var ads: [Ad] = []
        ads.reserveCapacity(demo.ads)
        let weights: [Int64] = [10, 25, 50, 100, 200, 400, 800, 1000]
        for index in 0..<demo.ads {
            let id = Int64(index + 1)
            let advertiser = random.pick(Words.advertisers)
            let title = random.pick(Words.adPitches).replacingOccurrences(of: "{thing}", with: random.pick(Words.things))
            ads.append(
                Ad(
                    id: id, advertiser: advertiser, title: "\(advertiser): \(title)",
                    imageURL: "https://cdn.deltafeed.example/ads/\(id).jpg",
                    targetURL: "https://ads.deltafeed.example/click/\(id)",
                    weight: random.pick(weights), active: random.chance(percent: 85),
                    updatedAt: demo.baseTime - 1 - Int64(random.next(below: UInt64(7 * Self.day - 1)))))
        }
        return ads
    }
}

/// Word lists for the demo. Lower-case ASCII where they feed handles.
enum Words {
    /// The entries of a list separated by `|` or line breaks, in order.
    private static func words(_ list: String) -> [String] { list.split(whereSeparator: { $0 == "|" || $0 == "\n" }).map(String.init) }

    static let adjectives = words(
        """
        sunny|quiet|brave|lucky|rapid|cosmic|golden|silver|misty|wild|gentle|bold|clever|curious|dusty|electric|fuzzy|happy|icy
        jolly|kind|lazy|mellow|neon|odd|proud|rusty|salty|tiny|urban|vivid|witty|zesty|amber|breezy|crimson|dreamy|frosty|hidden
        lunar|midnight|nimble|polar|rainy|sleepy|stormy|velvet|wandering
        """)
    static let animals = words(
        """
        otter|falcon|panda|fox|heron|lynx|koala|badger|beaver|bison|cobra|crane|dingo|eagle|ferret|gecko|hare|ibis|jaguar|kiwi
        lemur|marmot|narwhal|ocelot|puffin|quokka|raven|seal|tapir|urchin|viper|walrus|yak|zebra|alpaca|bat|camel|dolphin|finch
        goose|hedgehog|iguana|jackal|llama|moose|newt|owl|penguin
        """)
    static let firstNames = words(
        """
        Maya|Liam|Ava|Noah|Zara|Ethan|Lina|Omar|Chloe|Mateo|Aisha|Lucas|Ines|Kenji|Sofia|Arjun|Elena|Tariq|Nora|Hugo|Priya|Felix
        Amara|Diego|Hana|Jonas|Leila|Marco|Yuki|Sami|Greta|Ravi|Clara|Tomas|Nadia|Oscar|Mei|Pablo|Freya|Idris|Lucia|Emil|Zainab
        Theo|Anya|Kofi|Rosa|Ilya
        """)
    static let lastNames = words(
        """
        Okafor|Nguyen|Silva|Larsen|Haddad|Kowalski|Moreau|Tanaka|Rossi|Patel|Schmidt|Costa|Novak|Ibrahim|Jensen|Kim|Mendes
        Fischer|Rahman|Dubois|Petrov|Alvarez|Sato|Mensah|Berg|Oliveira|Hughes|Weber|Chen|Ramos|Lindqvist|Abara|Ferrari|Yilmaz
        Kaur|Murphy|Bianchi|Andersen|Lopez|Adeyemi|Horvat|Suzuki|Castro|Nielsen|Park|Dimitrov|Santos|Walsh
        """)
    static let things = words(
        """
        skateboard|sourdough|guitar|houseplant|camera|bike|kitchen|garden|sneaker|coffee|drone|notebook|synth|tent|kayak|ramen
        watercolor|vinyl|aquarium|bonsai|desk setup|backpack|dumpling|telescope|crochet|smoothie|longboard|pottery|pasta|puzzle
        cat|dog
        """)
    static let activities = words(
        """
        morning run|street food tour|sunrise hike|skate session|cooking challenge|room makeover|thrift haul|dance practice
        beach cleanup|study session|night market walk|road trip|rock climbing|bread baking|speed painting|tiny house tour
        bike commute|yoga flow|fishing trip|city photo walk|camping weekend|latte art practice|plant repotting|drum cover
        snow day|farmers market run|piano improv|budget grocery haul
        """)
    static let places = words(
        """
        pier|rooftop|old town|night market|lake|skatepark|library|train station|mountain hut|flea market|botanical garden|harbor
        desert|forest trail|record store|ramen bar|lighthouse|campus|ferry|canal
        """)
    static let verbs = words("fixed|organized|painted|rebuilt|cleaned|upgraded|styled|tuned|restored|packed|cooked|decorated")
    static let advertisers = words(
        """
        Northwind Coffee|Lumen Audio|Trailhead Outfitters|Pixel Forge|Harbor Bank|Greenleaf Grocers|Orbit Mobile|Velo Bikes
        Cedar & Stone|Brightside Travel|Kettle Kitchen|Nimbus Cloud|Atlas Shoes|Tidewater Tea|Quill Notebooks|Summit Fitness
        Lantern Books|Mosaic Games|Pebble Pets|Aurora Skincare
        """)
    static let adPitches = words(
        """
        new season, new {thing}|the {thing} everyone is talking about|save 20% on your next {thing}
        free delivery on every {thing}|meet the smarter {thing}|your {thing}, upgraded|try the {thing} risk-free for 30 days
        handmade {thing} for the weekend
        """)
}
