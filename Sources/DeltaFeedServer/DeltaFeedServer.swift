import EventHTTP
import FeedService
import FeedStore
import Logging
import Prometheus

/// The deltafeed HTTP service: the API's routes wired onto an ``EventHTTP/HTTPServer``.
///
/// Owns nothing global: metrics go to the registry given in the configuration (a fresh one by
/// default), so several servers can run in one process (tests do).
public final class DeltaFeedServer: Sendable {
    /// The running HTTP server.
    public let http: HTTPServer
    /// Where request and feed metrics are collected; `/metrics` renders it.
    public let registry: PrometheusCollectorRegistry

    private init(http: HTTPServer, registry: PrometheusCollectorRegistry) {
        self.http = http
        self.registry = registry
    }

    /// Builds the routes and starts listening.
    ///
    /// - Throws: ``EventHTTP/SystemError`` when the address cannot be bound.
    public static func start(configuration: DeltaFeedServerConfiguration) throws -> DeltaFeedServer {
        let registry = configuration.registry
        var router = Router()
        OperationalRoutes(registry: registry).register(in: &router)
        FeedRoutes(service: configuration.service).register(in: &router)
        DiffRoute().register(in: &router)
        AdminRoutes(store: configuration.service.store, adminToken: configuration.adminToken).register(in: &router)
        var http = configuration.http
        var metrics = PrometheusMetricsFactory(registry: registry)
        // Requests here take microseconds; the default buckets start at 5 ms.
        metrics.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(100), .milliseconds(500), .seconds(2.5), .seconds(10),
        ]
        http.metricsFactory = metrics
        let server = try HTTPServer.start(router: router, configuration: http)
        return DeltaFeedServer(http: server, registry: registry)
    }

    /// Drains in-flight requests and stops; see ``EventHTTP/HTTPServer/shutdown()``.
    public func shutdown() {
        http.shutdown()
    }
}

/// Everything ``DeltaFeedServer`` needs to start.
public struct DeltaFeedServerConfiguration: Sendable {
    /// Listener, threads, limits and timeouts.
    public var http: HTTPServerConfiguration
    /// The metrics registry rendered at `/metrics`.
    public var registry: PrometheusCollectorRegistry
    /// The feed service behind the API.
    public var service: FeedService
    /// The bearer token write routes require; nil refuses every write (403).
    public var adminToken: String?

    /// A configuration serving `service`, with the given HTTP settings and a fresh registry.
    public init(
        service: FeedService, adminToken: String? = nil, http: HTTPServerConfiguration = HTTPServerConfiguration(),
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()
    ) {
        self.service = service
        self.adminToken = adminToken
        self.http = http
        self.registry = registry
    }
}
