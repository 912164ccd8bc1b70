public import EventHTTP
public import FeedService

/// The parsers of request bodies that come straight from clients, callable without a socket:
/// for the fuzz target (`scripts/fuzz`) and for tests. Each either answers or throws an
/// ``EventHTTP/HTTPError``; anything else (a crash, a hang) is a bug.
public enum UntrustedBodies {
    /// `POST /v1/diff`: parses the body and computes the diff response.
    public static func diff(_ body: [UInt8]) throws -> HTTPResponse {
        try DiffRoute.answer(body)
    }

    /// `POST /v1/users/{id}/feed/delta`: parses the posted feed document into a snapshot structure.
    public static func postedSnapshot(_ body: [UInt8]) throws -> SnapshotStructure {
        try FeedRoutes.postedStructure(body, viewer: 1, parameters: FeedParameters()).structure
    }
}
