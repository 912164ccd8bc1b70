import CLibevent
import Logging
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A multi-threaded HTTP/1.1 server on libevent's evhttp.
///
/// Each of `threads` workers owns an event loop, an evhttp instance and its own SO_REUSEPORT
/// listener on the same address, so the kernel spreads connections across them. A request is
/// read fully, routed and answered on the worker that accepted its connection; handlers run to
/// completion there and must not block for long.
///
/// ```swift
/// var router = Router()
/// router.get("/hello/{name}") { request in .text("hello \(request.pathParameters["name"]!)") }
/// let server = try HTTPServer.start(router: router, configuration: configuration)
/// print("listening on \(server.port)")
/// server.waitUntilStopped()   // returns after `shutdown()` from another thread
/// ```
public final class HTTPServer: Sendable {
    /// The port the server listens on (the one chosen by the kernel when 0 was asked for).
    public let port: Int
    /// The address it listens on.
    public let host: String
    private let workers: [Worker]
    private let threads: [WorkerThread]
    private let limits: ServerLimits

    private init(host: String, port: Int, workers: [Worker], threads: [WorkerThread], limits: ServerLimits) {
        self.host = host
        self.port = port
        self.workers = workers
        self.threads = threads
        self.limits = limits
    }

    /// Connections open now, across every worker (a gauge for metrics and tests).
    public var openConnections: Int { limits.openConnections }

    /// Bytes reserved now for request bodies being received or answered, across every worker
    /// (counted against ``HTTPServerConfiguration/maxBufferedBodyBytes``).
    public var bufferedBodyBytes: Int { limits.bufferedBodyBytes }

    /// Binds the listeners and starts the worker threads; returns once the server accepts.
    ///
    /// - Throws: ``SystemError`` when the address cannot be bound (in use, bad host…).
    public static func start(router: Router, configuration: HTTPServerConfiguration) throws -> HTTPServer {
        precondition(configuration.threads >= 1, "threads must be at least 1")
        let limits = ServerLimits(
            maxConnections: configuration.maxConnections, maxBufferedBodyBytes: configuration.maxBufferedBodyBytes)
        var workers: [Worker] = []
        var port = configuration.port
        let nonce = UInt32.random(in: 0x1000_0000...UInt32.max)
        do {
            for index in 0..<configuration.threads {
                // The first listener fixes the port; the others join it through SO_REUSEPORT.
                let listener = try makeListeningSocket(host: configuration.host, port: port, backlog: configuration.backlog)
                port = listener.port
                workers.append(
                    try Worker(index: index, listenerFD: listener.fd, router: router, configuration: configuration, limits: limits, processNonce: nonce))
            }
        } catch {
            // Nothing runs yet: close the listeners and loops already made, then report.
            for worker in workers { worker.releaseResources() }
            throw error
        }
        let threads = workers.map { worker in
            WorkerThread {
                nameCurrentThread("df-http-\(worker.index)")
                worker.run()
            }
        }
        return HTTPServer(host: configuration.host, port: port, workers: workers, threads: threads, limits: limits)
    }

    /// Stops accepting, closes idle keep-alive connections, lets in-flight requests finish
    /// (up to the configured grace period) and returns when every worker has stopped.
    /// Safe to call from any thread, more than once.
    public func shutdown() {
        for worker in workers { worker.requestStop() }
        waitUntilStopped()
    }

    /// Blocks until every worker has stopped (after ``shutdown()`` was called elsewhere).
    public func waitUntilStopped() {
        for thread in threads { thread.join() }
    }

    /// Ignores SIGPIPE, once per process, before any worker exists. (libevent's pthread locking
    /// stays off: no libevent call is made off a worker's thread; see ``LoopWakeup``.)
    static func prepareProcess() {
        _ = processPrepared
    }
}

private let processPrepared: Bool = {
    // A client that closes while its response is being written would otherwise kill the
    // process with SIGPIPE (libevent writes with writev, which has no MSG_NOSIGNAL); the write
    // fails with EPIPE instead and libevent closes that connection.
    signal(SIGPIPE, SIG_IGN)
    return true
}()

/// A joinable POSIX thread running one closure.
package final class WorkerThread: Sendable {
    // The pthread_t is written once in init and only read by join(), which the lock serialises.
    private let handle: pthread_t
    private let joined = Mutex(false)

    package init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                let body = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        precondition(result == 0, "pthread_create failed: \(result)")
        handle = thread
    }

    /// Waits for the thread to end; later calls return at once.
    package func join() {
        joined.withLock { done in
            guard !done else { return }
            pthread_join(handle, nil)
            done = true
        }
    }
}

private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
