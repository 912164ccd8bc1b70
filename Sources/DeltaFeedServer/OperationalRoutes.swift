import EventHTTP
import Prometheus

/// `GET /healthz` and `GET /metrics`: what load balancers and Prometheus ask.
struct OperationalRoutes {
    let registry: PrometheusCollectorRegistry

    func register(in router: inout Router) {
        let healthy: [UInt8] = Array(#"{"status":"ok"}"#.utf8)
        router.get("/healthz") { _ in .json(healthy) }
        router.get("/metrics") { [registry] _ in
            HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: registry.emitToBuffer())
        }
    }
}
