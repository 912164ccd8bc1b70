import SystemCalls

/// A fixed set of threads for work that must not run on an event loop: storage transactions,
/// fsync, long CPU work. The queue in front of them is bounded, so a burst of slow work is
/// refused at once (the server answers 503) instead of piling up without limit.
///
/// Handlers hand work to a pool with ``HTTPResponse/deferred(to:_:)``; the worker loop goes on
/// serving other connections and sends the answer when the work is done.
///
/// ```swift
/// let writes = BlockingPool(name: "writes", threads: 1, queueCapacity: 1024)
/// router.post("/v1/things") { request in
///     .deferred(to: writes) { try store.insert(request.body); return .empty(status: 201) }
/// }
/// ```
public final class BlockingPool: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock`; the threads are joined once.
    /// A name for logs and thread titles.
    public let name: String
    /// The most jobs waiting (not counting the ones running) before ``trySubmit(_:)`` refuses.
    public let queueCapacity: Int
    private let lock = ConditionLock()
    private var queue: [(@Sendable () -> Void)?] = []
    private var head = 0
    private var waiting = 0
    private var running = 0
    private var stopping = false
    private var threads: [WorkerThread] = []

    /// Starts `threads` threads (at least 1) that run submitted jobs in submission order. The pool
    /// lives until ``shutdown()``, which every owner must call.
    public init(name: String, threads: Int, queueCapacity: Int) {
        self.name = name
        self.queueCapacity = max(0, queueCapacity)
        queue = Array(repeating: nil, count: max(1, self.queueCapacity + 1))
        // The threads keep the pool alive until ``shutdown()`` lets them end.
        self.threads = (0..<max(1, threads)).map { index in
            WorkerThread {
                // The index survives the kernel's 15 bytes: the pool's name is cut instead.
                let suffix = "-\(index)"
                nameCurrentThread(String(decoding: "df-\(name)".utf8.prefix(threadNameLimit - suffix.utf8.count), as: UTF8.self) + suffix)
                self.runJobs()
            }
        }
    }

    /// Queues `job`; returns false without queueing it when `queueCapacity` jobs already wait,
    /// or after ``shutdown()``.
    @discardableResult
    public func trySubmit(_ job: @escaping @Sendable () -> Void) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        // A job may always start when a thread is idle, even with a zero-length queue.
        let idle = threads.count - running - waiting
        guard !stopping, waiting < queueCapacity || (waiting == 0 && idle > 0) else { return false }
        queue[(head + waiting) % queue.count] = job
        waiting += 1
        lock.signal()
        return true
    }

    /// Jobs waiting and running now (a gauge for metrics and tests).
    public var load: (waiting: Int, running: Int) {
        lock.withLock { (waiting, running) }
    }

    /// Refuses new jobs, lets the queued ones finish and joins the threads. Safe to call more
    /// than once and from any thread but the pool's own.
    public func shutdown() {
        let threads = lock.withLock {
            stopping = true
            lock.broadcast()
            return self.threads
        }
        for thread in threads { thread.join() }
    }

    private func runJobs() {
        lock.lock()
        while true {
            while waiting == 0 && !stopping {
                lock.wait()
            }
            if waiting == 0 && stopping { break }
            let job = queue[head]!
            queue[head] = nil
            head = (head + 1) % queue.count
            waiting -= 1
            running += 1
            lock.unlock()
            job()
            lock.lock()
            running -= 1
        }
        lock.unlock()
    }
}
