/// Bounds and timing of live streams (`--live-max`, `--live-per-viewer`, `--live-coalesce-ms`).
public struct LiveLimits: Sendable {
    /// Streams open at once across the server; one more gets 503 `overloaded`.
    public var maxStreams: Int
    /// Streams open at once for one viewer (their devices and tabs); one more gets 503.
    public var perViewer: Int
    /// The least time between two events of one stream: changes landing closer together are
    /// folded into one event. The first change after a quiet spell goes out at once.
    public var coalesce: Duration
    /// The longest a stream goes without a byte: then it gets a comment line.
    public var heartbeat: Duration
    /// How long EventSource waits before it reconnects (`retry:`).
    public var retry: Duration

    /// Limits with the defaults: 100,000 streams, 16 per viewer, 100 ms, 15 s, 2 s.
    public init(
        maxStreams: Int = 100_000, perViewer: Int = 16, coalesce: Duration = .milliseconds(100), heartbeat: Duration = .seconds(15),
        retry: Duration = .seconds(2)
    ) {
        self.maxStreams = maxStreams
        self.perViewer = perViewer
        self.coalesce = coalesce
        self.heartbeat = heartbeat
        self.retry = retry
    }
}
