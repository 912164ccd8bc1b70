import Foundation
public import Testing

/// The PostgreSQL the store suites run against, from `DELTAFEED_TEST_POSTGRES` (`scripts/test`
/// starts a throwaway server and sets it); nil runs the SQLite side only.
public let postgresURL = ProcessInfo.processInfo.environment["DELTAFEED_TEST_POSTGRES"]

/// The trait of a suite or test that needs that PostgreSQL: skipped, saying why, without it.
public let needsPostgres = ConditionTrait.enabled(
    if: postgresURL != nil, "DELTAFEED_TEST_POSTGRES is not set: scripts/test starts a PostgreSQL and sets it")
