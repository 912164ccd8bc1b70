import ArgumentParser
import DeltaFeedServer
import Foundation

/// `deltafeed token --viewer N`: prints a viewer token for curl and test clients.
struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a viewer token (a JWT signed with the viewer secret) for a server started with --viewer-secret.",
        discussion: """
            Use it as: curl -H "Authorization: Bearer $(deltafeed token --viewer 1)" localhost:8080/v1/users/1/feed
            """
    )

    @Option(help: "The viewer (user id) the token lets its holder read as.")
    var viewer: Int64

    @Option(help: "The server's viewer secret", .viewerSecret())
    var viewerSecret: Setting<String>

    @Option(help: "Hours until the token expires (default 24).")
    var hours: Double = 24

    func validate() throws {
        guard viewer > 0 else { throw ValidationError("viewer must be a user id (1 or more), not \(viewer).") }
        guard hours > 0, hours <= 24 * 366 else { throw ValidationError("hours must be more than 0 and at most a year, not \(hours).") }
    }

    func run() throws {
        guard let tokens = try ViewerTokens.resolving(viewerSecret) else {
            throw ValidationError("A viewer secret is needed: --viewer-secret or DELTAFEED_VIEWER_SECRET, the one the server was started with.")
        }
        let (viewer, hours) = (self.viewer, self.hours)
        let token = try waitingFor { try await tokens.token(viewer: viewer, expiresAt: Date(timeIntervalSinceNow: hours * 3600)) }
        print(token)
    }
}

extension ViewerTokens {
    /// The tokens of `--viewer-secret` or `DELTAFEED_VIEWER_SECRET`; nil when neither is set.
    static func resolving(_ setting: Setting<String>) throws -> ViewerTokens? {
        guard let secret = try setting.valueIfSet else { return nil }
        do {
            return try waitingFor { try await ViewerTokens(secret: secret) }
        } catch let error as ViewerTokenError {
            throw ValidationError("--viewer-secret: \(error)")
        }
    }
}

/// Runs `body` on the concurrency pool and waits for it: for the few async library calls a
/// synchronous command makes before it serves (never on an event loop).
func waitingFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = AsyncOutcome<T>()
    Task {
        do { outcome.finish(.success(try await body())) } catch { outcome.finish(.failure(error)) }
    }
    return try outcome.wait().get()
}

/// The result of a task, handed to a thread that blocks until it is there.
private final class AsyncOutcome<T: Sendable>: @unchecked Sendable {
    // @unchecked: `result` is written once before `done` is signalled and read after the wait.
    private var result: Result<T, any Error>?
    private let done = DispatchSemaphore(value: 0)

    func finish(_ result: Result<T, any Error>) {
        self.result = result
        done.signal()
    }

    func wait() -> Result<T, any Error> {
        done.wait()
        return result!
    }
}
