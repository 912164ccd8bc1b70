import FeedStore
import Foundation
import GRDB

// The bridge between the store's backend-neutral records (``FeedStore/StoredRecord``: columns
// declared once, in `CodingKeys`) and GRDB's rows and statement arguments.

extension ColumnValue {
    /// The value as GRDB binds it.
    var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case .integer(let integer): return integer.databaseValue
        case .text(let text): return text.databaseValue
        case .blob(let data): return data.databaseValue
        }
    }

    /// A value SQLite returned. The schema has no floating-point column; a REAL would come only
    /// from a hand-edited file, and is read as the integer it truncates to.
    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let integer): self = .integer(integer)
        case .double(let double): self = .integer(Int64(double))
        case .string(let text): self = .text(text)
        case .blob(let data): self = .blob(data)
        }
    }
}

extension StoredRecord {
    /// Decodes a row whose columns are the record's, in table order (`SELECT *` or
    /// ``RecordSQL``'s column lists: the schema parity test holds the table to `CodingKeys`).
    init(row: Row, names: [String]) throws(FeedStoreError) {
        var values: [ColumnValue] = []
        values.reserveCapacity(row.count)
        for index in 0..<row.count {
            values.append(ColumnValue(row[index] as DatabaseValue))
        }
        try self.init(values: values, names: names)
    }

    /// Every record the statement returns, one at a time.
    static func forEachRow(_ statement: Statement, arguments: StatementArguments = [], _ body: (Self) throws -> Void) throws {
        let names = columnNames
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            try body(try Self(row: row, names: names))
        }
    }

    /// The first record the statement returns, or nil.
    static func fetchFirst(_ statement: Statement, arguments: StatementArguments = []) throws -> Self? {
        guard let row = try Row.fetchOne(statement, arguments: arguments) else { return nil }
        return try Self(row: row, names: columnNames)
    }
}
