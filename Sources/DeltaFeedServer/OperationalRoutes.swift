import EventHTTP
import Prometheus

/// `GET /healthz` and `GET /metrics`: what load balancers and Prometheus ask. `/healthz` is
/// 503 `{"status":"starting"}` until the service is ready (its index caught up), then 200.
struct OperationalRoutes {
    let registry: PrometheusCollectorRegistry
    let isReady: @Sendable () -> Bool

    func register(in router: inout Router) {
        let healthy: [UInt8] = Array(#"{"status":"ok"}"#.utf8)
        let starting: [UInt8] = Array(#"{"status":"starting"}"#.utf8)
        router.get("/healthz") { [isReady] _ in isReady() ? .json(healthy) : .json(starting, status: 503) }
        router.get("/metrics") { [registry] _ in
            HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: registry.emitToBuffer())
        }
    }
}
