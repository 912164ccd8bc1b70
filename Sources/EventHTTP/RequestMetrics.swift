import CoreMetrics

/// Request metrics of one worker: counts by route and status, a latency timer by route and the
/// shared in-flight meter. Handles are cached per worker, by route, so the hot path does no registry
/// lookup and hashes nothing.
///
/// Metric names (Prometheus): `http_requests_total{route,method,status}`,
/// `http_request_duration_seconds{route}` (a histogram), `http_requests_in_flight`.
final class RequestMetrics {
    private struct CounterKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    /// The handles of one route: its timer, and its counters by method and status (a few, looked
    /// through in order: no hashing of the route's name on every request).
    private struct RouteHandles {
        let timer: Timer
        var counters: [(method: String, status: Int, counter: Counter)] = []
    }

    private let factory: any MetricsFactory
    /// By ``Router/Route/index``, made on a route's first request.
    /// `@exclusivity(unchecked)`: one worker's thread records, one request at a time (no
    /// access stays open across a call that could come back here).
    @exclusivity(unchecked) private var routes: [RouteHandles?] = []
    /// Requests no route matched (`route` is not a pattern then).
    private var counters: [CounterKey: Counter] = [:]
    private var timers: [String: Timer] = [:]
    let inFlight: Meter

    init(factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        self.inFlight = Meter(label: "http_requests_in_flight", dimensions: [], factory: factory)
    }

    /// Records one answered request; `routeIndex` is the matched route's
    /// ``Router/Route/index``, nil when none matched.
    func record(route: String, routeIndex: Int?, method: String, status: Int, nanoseconds: UInt64) {
        guard let routeIndex else {
            record(route: route, method: method, status: status, nanoseconds: nanoseconds)
            return
        }
        if routeIndex >= routes.count { routes.append(contentsOf: repeatElement(nil, count: routeIndex + 1 - routes.count)) }
        if routes[routeIndex] == nil {
            routes[routeIndex] = RouteHandles(timer: Timer(label: "http_request_duration_seconds", dimensions: [("route", route)], factory: factory))
        }
        let counter: Counter
        if let known = routes[routeIndex]!.counters.first(where: { $0.status == status && $0.method == method }) {
            counter = known.counter
        } else {
            counter = makeCounter(route: route, method: method, status: status)
            routes[routeIndex]!.counters.append((method, status, counter))
        }
        counter.increment()
        routes[routeIndex]!.timer.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    private func record(route: String, method: String, status: Int, nanoseconds: UInt64) {
        let key = CounterKey(route: route, method: method, status: status)
        if let counter = counters[key] {
            counter.increment()
        } else {
            let counter = makeCounter(route: route, method: method, status: status)
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

    private func makeCounter(route: String, method: String, status: Int) -> Counter {
        Counter(label: "http_requests_total", dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory)
    }
}
