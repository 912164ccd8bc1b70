import CoreMetrics

/// Request metrics of one worker: counts by route and status, a latency timer by route and the
/// shared in-flight meter. Handles are cached per worker so the hot path does no registry lookup.
///
/// Metric names (Prometheus): `http_requests_total{route,method,status}`,
/// `http_request_duration_seconds{route}` (a histogram), `http_requests_in_flight`.
final class RequestMetrics {
    private struct CounterKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private let factory: any MetricsFactory
    private var counters: [CounterKey: Counter] = [:]
    private var timers: [String: Timer] = [:]
    let inFlight: Meter

    init(factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        self.inFlight = Meter(label: "http_requests_in_flight", dimensions: [], factory: factory)
    }

    /// Records one answered request.
    func record(route: String, method: String, status: Int, nanoseconds: UInt64) {
        let key = CounterKey(route: route, method: method, status: status)
        if let counter = counters[key] {
            counter.increment()
        } else {
            let counter = Counter(
                label: "http_requests_total",
                dimensions: [("route", route), ("method", method), ("status", String(status))],
                factory: factory)
            counters[key] = counter
            counter.increment()
        }
        if let timer = timers[route] {
            timer.recordNanoseconds(Int64(clamping: nanoseconds))
        } else {
            let timer = Timer(label: "http_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            timers[route] = timer
            timer.recordNanoseconds(Int64(clamping: nanoseconds))
        }
    }
}
