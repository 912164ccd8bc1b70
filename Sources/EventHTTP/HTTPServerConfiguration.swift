public import CoreMetrics
public import Logging

/// How an ``HTTPServer`` listens and what it tolerates.
public struct HTTPServerConfiguration: Sendable {
    /// The address to bind (an IPv4 or IPv6 literal). Default `127.0.0.1`.
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (read it back from ``HTTPServer/port``). Default 8080.
    public var port: Int = 8080
    /// Worker threads, each with its own event loop and SO_REUSEPORT listener. Default: cores.
    public var threads: Int = HTTPServerConfiguration.processorCount
    /// Largest request body accepted; larger ones get 413. Default 1 MiB.
    public var maxBodySize: Int = 1 << 20
    /// Largest request line plus headers accepted. Default 16 KiB.
    public var maxHeadersSize: Int = 16 << 10
    /// The most bytes of request bodies the server buffers at once, across all connections and
    /// workers. A body is counted by its declared `Content-Length` (a chunked body as
    /// ``maxBodySize``) from when its headers arrive until its response is written; a body that
    /// would pass the limit gets 503 `overloaded` with `Retry-After` before it is read. Default 64 MiB.
    public var maxBufferedBodyBytes: Int = 64 << 20
    /// The most connections the server holds open at once, across all workers. A connection
    /// accepted past it gets 503 `overloaded` with `Retry-After` and is closed at once.
    /// Default 10,000.
    public var maxConnections: Int = 10_000
    /// How slow a client may be: the time a connection has to deliver a complete request (an
    /// idle keep-alive connection may stay open as long), and the longest a client may go
    /// without taking any of a response being written to it. Time the server spends (handling
    /// the request, or with its event loop blocked) never counts. Default 10 s.
    public var requestTimeout: Duration = .seconds(10)
    /// How long a graceful shutdown waits for in-flight requests. Default 10 s.
    public var shutdownGracePeriod: Duration = .seconds(10)
    /// The listen backlog of each listener.
    public var backlog: Int32 = 1024
    /// The access log and server messages.
    public var logger: Logger = Logger(label: "deltafeed.http")
    /// Where request metrics go; nil means the process-wide `MetricsSystem.factory`.
    public var metricsFactory: (any MetricsFactory)? = nil

    /// gzip for clients that accept it: on by default at level 6 for bodies of 200 bytes or more.
    public var compression = ResponseCompression()

    /// A configuration with every default.
    public init() {}

    /// The number of processors online, at least 1.
    public static var processorCount: Int { max(1, systemProcessorCount()) }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}
