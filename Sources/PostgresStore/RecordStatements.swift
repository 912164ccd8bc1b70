import FeedStore

/// The statements on one record type's rows, as PostgreSQL runs them, built once per connection
/// (``PostgresConnection/statements(for:)``): building them from the record's columns on every
/// call was a measurable share of a grouped write's time on the replica, spent while the group
/// holds the store_meta lock every replica waits for.
struct RecordStatements {
    let columnNames: [String]
    let selectByID: String
    /// The rows whose ids are in the array parameter 1.
    let selectByIDs: String
    /// With `RETURNING id` when the store assigns ids.
    let insert: String
    let updateByID: String
    let deleteByID: String

    init<Record: StoredRecord>(_ type: Record.Type) {
        let sql = RecordSQL(Record.self, marker: "$")
        columnNames = Record.columnNames
        selectByID = sql.selectByID
        selectByIDs = "SELECT \(columnNames.joined(separator: ", ")) FROM \(Record.table) WHERE id = ANY($1::bigint[])"
        insert = sql.insert + (Record.assignsID ? " RETURNING id" : "")
        updateByID = sql.updateByID
        deleteByID = sql.deleteByID
    }
}

extension PostgresConnection {
    /// `Record`'s statements, built on first use.
    func statements<Record: StoredRecord>(for type: Record.Type) -> RecordStatements {
        let key = ObjectIdentifier(Record.self)
        if let statements = recordStatements[key] { return statements }
        let statements = RecordStatements(Record.self)
        recordStatements[key] = statements
        return statements
    }
}
