public import FeedStore
public import GRDB

// The oracle's queries decode rows with GRDB's `Decodable` support, by column name, so a row may
// carry extra columns (a suggestion's `mutual_count`). The store itself decodes through
// `StoredRecord`'s one column list and knows nothing of these conformances.
extension User: FetchableRecord {}
extension Video: FetchableRecord {}
extension Ad: FetchableRecord {}
