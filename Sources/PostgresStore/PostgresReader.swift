public import FeedStore
import Foundation

/// Reads of one consistent state of a ``PostgresFeedStore``: a `REPEATABLE READ` transaction,
/// valid only inside the closure of ``PostgresFeedStore/read(_:)``.
public struct PostgresReader: FeedStoreReader {
    let connection: PostgresConnection

    /// The rows of `sql`, every value required (no NULL), as integers.
    private func integers(_ sql: String, _ parameters: [String?] = []) throws(FeedStoreError) -> [[Int64]] {
        try run(sql, parameters).rows.map { row throws(FeedStoreError) in
            try row.map { value throws(FeedStoreError) in
                guard let value, let integer = Int64(value) else { throw .storage(code: .corrupt, message: "unexpected NULL or text in \(sql)") }
                return integer
            }
        }
    }

    private func run(_ sql: String, _ parameters: [String?] = []) throws(FeedStoreError) -> PostgresRows {
        do {
            return try connection.execute(sql, parameters)
        } catch {
            throw PostgresFeedStore.mapped(error)
        }
    }

    func decode<Record: StoredRecord>(_ type: Record.Type, _ row: [String?]) throws(FeedStoreError) -> Record {
        try Record(values: row.map { $0.map(ColumnValue.text) ?? .null }, names: connection.statements(for: Record.self).columnNames)
    }

    // MARK: Versions and counts

    public func changeVersion() throws(FeedStoreError) -> Int64 {
        try integers("SELECT change_version FROM store_meta WHERE id = 1").first?.first ?? 0
    }

    public func counts() throws(FeedStoreError) -> StoreCounts {
        let row = try integers(
            """
            SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM videos), (SELECT count(*) FROM ads),
                   (SELECT count(*) FROM follows), (SELECT count(*) FROM snapshots)
            """)[0]
        return StoreCounts(users: Int(row[0]), videos: Int(row[1]), ads: Int(row[2]), follows: Int(row[3]), snapshots: Int(row[4]))
    }

    public func isEmpty() throws(FeedStoreError) -> Bool {
        try run("SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM videos) OR EXISTS (SELECT 1 FROM ads)").rows == [["f"]]
    }

    // MARK: Change log

    public func changes(after sequence: Int64, limit: Int) throws(FeedStoreError) -> [ChangeEntry] {
        let rows = try run(
            "SELECT seq, kind, key, other_key, committed_at FROM change_log WHERE seq > $1 ORDER BY seq LIMIT $2",
            [String(sequence), String(max(1, limit))]
        ).rows
        return try rows.map { row throws(FeedStoreError) in
            guard let sequence = row[0].flatMap({ Int64($0) }), let kind = row[1].flatMap(ChangeKind.init(rawValue:)),
                let key = row[2].flatMap({ Int64($0) }), let committedAt = row[4].flatMap({ Int64($0) })
            else { throw .storage(code: .corrupt, message: "a change-log row does not decode") }
            return ChangeEntry(sequence: sequence, kind: kind, key: key, otherKey: row[3].flatMap { Int64($0) }, committedAt: committedAt)
        }
    }

    // MARK: Records

    public func record<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, id: Int64) throws(FeedStoreError) -> Record? {
        try run(connection.statements(for: Record.self).selectByID, [String(id)]).rows.first.map { row throws(FeedStoreError) in try decode(Record.self, row) }
    }

    public func records<Record: StoredRecord & Identifiable<Int64>>(
        _ type: Record.Type, ids: some Sequence<Int64>
    ) throws(FeedStoreError) -> [Int64: Record] {
        try keyedByID(Record.self, run(connection.statements(for: Record.self).selectByIDs, [arrayLiteral(ids.map { $0 })]))
    }

    /// The records of `result`'s rows, by id.
    private func keyedByID<Record: StoredRecord & Identifiable<Int64>>(_ type: Record.Type, _ result: PostgresRows) throws(FeedStoreError) -> [Int64: Record] {
        var records: [Int64: Record] = [:]
        for row in result.rows {
            let record = try decode(Record.self, row)
            records[record.id] = record
        }
        return records
    }

    public func activeAds() throws(FeedStoreError) -> AdInventory {
        let epoch = try integers("SELECT ad_epoch FROM store_meta WHERE id = 1").first?.first ?? 0
        let ads = try run("SELECT \(Ad.columnNames.joined(separator: ", ")) FROM ads WHERE active = 1 ORDER BY id").rows.map {
            row throws(FeedStoreError) in try decode(Ad.self, row)
        }
        return AdInventory(epoch: epoch, ads: ads)
    }

    // MARK: Follows

    public func isFollowing(follower: Int64, followee: Int64) throws(FeedStoreError) -> Bool {
        try run(
            "SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = $1 AND followee_id = $2)", [String(follower), String(followee)]
        ).rows == [["t"]]
    }

    /// The users', the videos' and the edges' queries in one round trip (those with nothing to
    /// ask are not sent).
    public func changedRows(users: Set<Int64>, videos: Set<Int64>, edges: Set<FollowEdge>) throws(FeedStoreError) -> ChangedRows {
        let edgeList = Array(edges)
        var statements: [(sql: String, parameters: [String?])] = []
        if !users.isEmpty { statements.append((connection.statements(for: User.self).selectByIDs, [arrayLiteral(users.map { $0 })])) }
        if !videos.isEmpty { statements.append((connection.statements(for: Video.self).selectByIDs, [arrayLiteral(videos.map { $0 })])) }
        if !edges.isEmpty { statements.append((Self.existingEdges, [arrayLiteral(edgeList.map(\.follower)), arrayLiteral(edgeList.map(\.followee))])) }
        var answers: [PostgresRows]
        do {
            answers = try connection.execute(statements)
        } catch {
            throw PostgresFeedStore.mapped(error)
        }
        var rows = ChangedRows()
        answers.reverse()  // taken from the end, in the order sent
        if !users.isEmpty { rows.users = try keyedByID(User.self, answers.removeLast()) }
        if !videos.isEmpty { rows.videos = try keyedByID(Video.self, answers.removeLast()) }
        if !edges.isEmpty {
            for row in answers.removeLast().rows {
                guard row.count == 2, let follower = row[0].flatMap({ Int64($0) }), let followee = row[1].flatMap({ Int64($0) }) else {
                    throw .storage(code: .corrupt, message: "a follows row does not decode")
                }
                rows.follows.insert(FollowEdge(follower: follower, followee: followee))
            }
        }
        return rows
    }

    /// The edges among the pairs of arrays $1 (followers) and $2 (followees) that exist.
    private static let existingEdges = """
        SELECT f.follower_id, f.followee_id FROM unnest($1::bigint[], $2::bigint[]) AS asked (follower_id, followee_id)
        JOIN follows AS f ON f.follower_id = asked.follower_id AND f.followee_id = asked.followee_id
        """

    // MARK: Snapshots

    public func snapshot(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        try snapshot(in: "snapshots", id: id, viewer: viewer)
    }

    public func snapshotBase(id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        try snapshot(in: "snapshot_bases", id: id, viewer: viewer)
    }

    private func snapshot(in table: String, id: String, viewer: Int64) throws(FeedStoreError) -> StoredSnapshot? {
        guard
            let row = try run(
                "SELECT created_at, encode(structure, 'base64') FROM \(table) WHERE viewer_id = $1 AND id = $2", [String(viewer), id]
            ).rows.first
        else { return nil }
        guard let createdAt = row[0].flatMap({ Int64($0) }), let structure = row[1].flatMap({ Data(base64Encoded: $0, options: .ignoreUnknownCharacters) })
        else { throw .storage(code: .corrupt, message: "a snapshot row does not decode") }
        return StoredSnapshot(id: id, viewerID: viewer, createdAt: createdAt, structure: structure)
    }

    // MARK: Whole tables

    /// Streams the table through a server-side cursor (see ``streaming(_:_:)``).
    public func forEach<Record: StoredRecord>(_ type: Record.Type, _ body: (Record) throws -> Void) throws(FeedStoreError) {
        try streaming(RecordSQL(Record.self, marker: "$").all) { row in try body(try decode(Record.self, row)) }
    }

    /// Every follow edge, by follower then followee, as two integers.
    public func forEachFollow(_ body: (_ follower: Int64, _ followee: Int64) throws -> Void) throws(FeedStoreError) {
        try streaming(FeedQueries.followEdges) { row in
            guard row.count == 2, let follower = row[0].flatMap({ Int64($0) }), let followee = row[1].flatMap({ Int64($0) }) else {
                throw FeedStoreError.storage(code: .corrupt, message: "a follows row does not decode")
            }
            try body(follower, followee)
        }
    }

    /// Runs `query` through a server-side cursor, 10,000 rows per round trip, inside the read's
    /// transaction: one consistent state, never every row in memory at once.
    private func streaming(_ query: String, _ body: ([String?]) throws -> Void) throws(FeedStoreError) {
        _ = try run("DECLARE deltafeed_rows NO SCROLL CURSOR FOR \(query)")
        do {
            while true {
                let rows = try run("FETCH 10000 FROM deltafeed_rows").rows
                for row in rows { try body(row) }
                if rows.count < 10_000 { break }
            }
        } catch {
            throw PostgresFeedStore.mapped(error)
        }
        _ = try run("CLOSE deltafeed_rows")
    }
}
