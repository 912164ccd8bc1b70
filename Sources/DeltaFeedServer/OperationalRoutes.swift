public import EventHTTP
import Prometheus

/// `GET /healthz` and `GET /metrics`: what load balancers and Prometheus ask. `/healthz` is
/// 503 `{"status":"starting"}` until the service is ready (its index caught up), then 200.
struct OperationalRoutes {
    let registry: PrometheusCollectorRegistry
    let isReady: @Sendable () -> Bool
    /// Brings the metrics counted elsewhere (the service's own counts) into the registry
    /// before it is rendered.
    var beforeRendering: @Sendable () -> Void = {}

    func register(in router: inout Router) {
        let healthy: [UInt8] = Array(#"{"status":"ok"}"#.utf8)
        let starting: [UInt8] = Array(#"{"status":"starting"}"#.utf8)
        router.get("/healthz") { [isReady] _ in isReady() ? .json(healthy) : .json(starting, status: 503) }
        router.get("/metrics") { [registry, beforeRendering] _ in
            beforeRendering()
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: registry.emitToBuffer())
        }
    }
}

/// What a replica answers on its port while it opens the store and loads the feed index, before
/// ``DeltaFeedServer`` can start: `/healthz` answers 503 `{"status":"starting"}`, every other
/// request 503 `starting` with `Retry-After`, so a balancer (nginx retries a 503 on the next
/// replica) and clients wait instead of meeting a refused connection or a stale answer.
public enum StartingServer {
    /// Listens with `configuration` (port 0 picks one; read it from the result) until stopped
    /// with `shutdown()`, answering every request as above.
    public static func start(configuration: HTTPServerConfiguration) throws -> HTTPServer {
        var router = Router()
        let starting: [UInt8] = Array(#"{"status":"starting"}"#.utf8)
        router.get("/healthz") { _ in .json(starting, status: 503) }
        let refusal: HTTPHandler = { _ in
            throw HTTPError(
                status: 503, code: "starting", message: "The server is loading its feed index; retry shortly.",
                headers: [("Retry-After", "1")])
        }
        // Any path of up to eight segments, with every method the API has.
        for depth in 1...8 {
            let pattern = (0..<depth).map { "/{s\($0)}" }.joined()
            for method in [HTTPMethod.get, .post, .put, .patch, .delete] { router.add(method, pattern, refusal) }
        }
        return try HTTPServer.start(router: router, configuration: configuration)
    }
}
