public import Foundation

/// A record stored as one row of one table, whose columns are its `CodingKeys`.
///
/// The `CodingKeys` enum is the one declaration of a record's columns (issue 12: they were listed
/// three times, in the properties, the keys and a hand-written row decoder). Both stores build
/// their SQL column lists from it, encode a record's values for INSERT, UPDATE and COPY with
/// ``columnValues``, and decode rows with ``init(values:names:)``; the tests' content digest
/// hashes the same values, so equal content digests mean equal content on either store.
public protocol StoredRecord: Codable, Sendable {
    /// The columns, in table order; the raw value is the column name.
    associatedtype CodingKeys: CodingKey, CaseIterable, RawRepresentable<String>
    /// The table name.
    static var table: String { get }
    /// The primary key columns, in key order (rows are enumerated in this order).
    static var keyColumns: [String] { get }
}

extension StoredRecord {
    /// Every column name, in table order.
    public static var columnNames: [String] {
        // A closure, not `\.rawValue`: a key path through a generic record's keys was
        // instantiated on every call, a visible share of a PostgreSQL write's time.
        CodingKeys.allCases.map { $0.rawValue }
    }

    /// Whether the store assigns the record's `id` when it is created (users, videos, ads).
    public static var assignsID: Bool { keyColumns == ["id"] }

    /// The columns a new row gets from the caller: every column but an `id` the store assigns.
    public static var insertedColumnNames: [String] { assignsID ? Array(columnNames.dropFirst()) : columnNames }

    /// The record's values, one per column of ``columnNames``, in the same order.
    public var columnValues: [ColumnValue] {
        let encoder = ColumnEncoder()
        // The synthesized encoders of the records encode nothing but flat values; they cannot fail.
        try! encode(to: encoder)
        return Self.columnNames.map { encoder.values[$0] ?? .null }
    }

    /// The values of ``insertedColumnNames``, in that order.
    public var insertedColumnValues: [ColumnValue] { Self.assignsID ? Array(columnValues.dropFirst()) : columnValues }

    /// Decodes a record from the values of the columns `names`. Integers may come as text (as
    /// PostgreSQL's text format sends them).
    ///
    /// - Throws: ``FeedStoreError/storage(code:message:)`` when a column is missing or has the
    ///   wrong type (a schema that does not match the record).
    public init(values: [ColumnValue], names: [String]) throws(FeedStoreError) {
        do {
            try self.init(from: ColumnDecoder(names: names, values: values))
        } catch {
            throw .storage(code: .corrupt, message: "\(Self.table): a row does not decode (\(error))")
        }
    }
}

/// One column's value, as both stores hold it: booleans are integers 0 and 1.
public enum ColumnValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
    case blob(Data)
}

/// Collects a flat record's values by column name.
final class ColumnEncoder: Encoder {
    var values: [String: ColumnValue] = [:]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Container(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer { fatalError("records are flat") }
    func singleValueContainer() -> any SingleValueEncodingContainer { fatalError("records are flat") }

    struct Container<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: ColumnEncoder
        var codingPath: [any CodingKey] { [] }

        func set(_ value: ColumnValue, _ key: Key) { encoder.values[key.stringValue] = value }
        mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { set(.integer(value ? 1 : 0), key) }
        mutating func encode(_ value: String, forKey key: Key) throws { set(.text(value), key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { set(.integer(value), key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { set(.integer(Int64(value)), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            guard let data = value as? Data else { throw EncodingError.invalidValue(value, .init(codingPath: [key], debugDescription: "not a column type")) }
            set(.blob(data), key)
        }
        mutating func nestedContainer<N: CodingKey>(keyedBy keyType: N.Type, forKey key: Key) -> KeyedEncodingContainer<N> {
            fatalError("records are flat")
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { fatalError("records are flat") }
        mutating func superEncoder() -> any Encoder { fatalError("records are flat") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { fatalError("records are flat") }
    }
}

/// Reads a flat record from values by column name (the synthesized `init(from:)` of the records).
struct ColumnDecoder: Decoder {
    let names: [String]
    let values: [ColumnValue]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Container(names: names, values: values))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw mismatch("an unkeyed container") }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw mismatch("a single value") }

    func mismatch(_ what: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "records are flat, not \(what)"))
    }

    /// Where the next key is expected.
    final class Cursor {
        var next = 0
    }

    struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let names: [String]
        let values: [ColumnValue]
        let cursor = Cursor()
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { names.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { names.contains(key.stringValue) }

        func value(_ key: Key) throws -> ColumnValue {
            // The synthesized decoders ask for the keys in declaration order, which is the column
            // order: the column after the last one read is tried first (one comparison per key).
            let name = key.stringValue
            let next = cursor.next
            if next < names.count, next < values.count, names[next] == name {
                cursor.next = next + 1
                return values[next]
            }
            guard let index = names.firstIndex(of: name), index < values.count else {
                throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "no column \(key.stringValue)"))
            }
            cursor.next = index + 1
            return values[index]
        }

        func mismatch<T>(_ type: T.Type, _ key: Key) -> DecodingError {
            .typeMismatch(type, .init(codingPath: [key], debugDescription: "column \(key.stringValue)"))
        }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }

        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            switch try value(key) {
            case .integer(let integer): return integer
            case .text(let text): if let integer = Int64(text) { return integer }
            default: break
            }
            throw mismatch(type, key)
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(Int64.self, forKey: key) != 0 }

        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            guard case .text(let text) = try value(key) else { throw mismatch(type, key) }
            return text
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            guard type == Data.self, case .blob(let data) = try value(key) else { throw mismatch(type, key) }
            return data as! T
        }

        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            throw mismatch(type, key)
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw mismatch(Key.self, key) }
        func superDecoder() throws -> any Decoder { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "flat")) }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw mismatch(Key.self, key) }
    }
}

/// The statements on one record's row, built from its columns for either SQL dialect: the only
/// difference is how a parameter is written (`?1` in SQLite, `$1` in PostgreSQL).
package struct RecordSQL<Record: StoredRecord> {
    /// `"?"` or `"$"`: what goes before a parameter's number.
    package var marker: String

    package init(_ type: Record.Type, marker: String) {
        self.marker = marker
    }

    /// `INSERT` of ``StoredRecord/insertedColumnNames`` from parameters 1…n.
    package var insert: String {
        let columns = Record.insertedColumnNames
        return "INSERT INTO \(Record.table) (\(columns.joined(separator: ", "))) VALUES (\(parameters(1...columns.count)))"
    }

    /// The row whose id is parameter 1, every column.
    package var selectByID: String { "SELECT \(Record.columnNames.joined(separator: ", ")) FROM \(Record.table) WHERE id = \(marker)1" }

    /// Every column of the row whose id is parameter 1 but the id, from parameters 2…n.
    package var updateByID: String {
        let assignments = Record.insertedColumnNames.enumerated().map { "\($1) = \(marker)\($0 + 2)" }
        return "UPDATE \(Record.table) SET \(assignments.joined(separator: ", ")) WHERE id = \(marker)1"
    }

    /// Deletes the row whose id is parameter 1.
    package var deleteByID: String { "DELETE FROM \(Record.table) WHERE id = \(marker)1" }

    /// Every row, every column, in primary key order.
    package var all: String {
        "SELECT \(Record.columnNames.joined(separator: ", ")) FROM \(Record.table) ORDER BY \(Record.keyColumns.joined(separator: ", "))"
    }

    private func parameters(_ numbers: ClosedRange<Int>) -> String {
        numbers.map { "\(marker)\($0)" }.joined(separator: ", ")
    }
}
