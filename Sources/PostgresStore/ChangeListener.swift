import FeedStore
import Foundation
import Synchronization
import SystemCalls

/// Wakes a replica's index catch-up when another replica commits a write: a dedicated
/// connection `LISTEN`s to the store's ``PostgresFeedStore/channel`` on a thread of its own.
///
/// A notification only says "something was committed"; `onChange` then reads the log after the
/// index's last sequence, so a notification lost (the connection dropped, PostgreSQL restarted,
/// or two commits folded into one wake-up) loses nothing: `onChange` also runs after every
/// (re)connection, and the periodic catch-up stays as the fallback. A lost connection is
/// reopened with backoff, 100 ms doubling to 5 s.
public final class ChangeListener: Sendable {
    private let stopping = Atomic(false)
    private let finished = Mutex(false)
    /// Connections opened so far (1 after the first, 2 after a reconnection…), for tests and logs.
    public var connections: Int { opened.load(ordering: .relaxed) }
    private let opened = Atomic(0)

    /// Starts listening. `onChange` runs on the listener's thread, once per wake-up (a batch of
    /// notifications) with the highest sequence they announce, and with nil after each
    /// (re)connection (anything may have been committed meanwhile); `onReconnect` runs there
    /// before it after each connection but the first (PostgreSQL was gone, maybe restarted after
    /// a crash); `report` gets one line per failure. Every replica's own commits wake it too:
    /// `onChange` may find them applied.
    public init(
        store: PostgresFeedStore, onChange: @escaping @Sendable (_ reaching: Int64?) -> Void, onReconnect: @escaping @Sendable () -> Void = {},
        report: @escaping @Sendable (String) -> Void
    ) {
        let connect = store.connect
        let channel = store.channel
        let thread = Thread { [self] in
            nameCurrentThread("df-listen")
            run(connect: connect, channel: channel, onChange: onChange, onReconnect: onReconnect, report: report)
        }
        thread.start()
    }

    /// Stops the thread (within about 250 ms) and returns when it has. Safe to call twice.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        while !finished.withLock({ $0 }) { usleep(5_000) }
    }

    private func run(
        connect: @Sendable () throws -> PostgresConnection, channel: String, onChange: @Sendable (Int64?) -> Void, onReconnect: @Sendable () -> Void,
        report: @Sendable (String) -> Void
    ) {
        var backoff = Duration.milliseconds(100)
        while !stopping.load(ordering: .relaxed) {
            do {
                let connection = try connect()
                try connection.execute("SELECT pg_catalog.set_config('application_name', $1, false)", ["deltafeed-listen " + channel])
                // LISTEN takes an identifier, not a parameter: the channel is made of [a-z0-9_].
                try connection.execute("LISTEN \(channel)")
                if opened.add(1, ordering: .relaxed).newValue > 1 { onReconnect() }
                backoff = .milliseconds(100)
                onChange(nil)  // whatever was committed while we were not listening
                while !stopping.load(ordering: .relaxed) {
                    let payloads = try connection.notifications(waitingUpTo: .milliseconds(250))
                    if !payloads.isEmpty {
                        // Each payload is the sequence its commit reached; one that does not
                        // read as one asks for a catch-up all the same.
                        let sequences = payloads.map { Int64($0) }
                        onChange(sequences.contains(nil) ? nil : sequences.compactMap { $0 }.max())
                    }
                }
            } catch {
                report("listening for changes failed (\(error)); reconnecting in \(backoff)")
                var slept = Duration.zero
                while slept < backoff, !stopping.load(ordering: .relaxed) {
                    usleep(50_000)
                    slept += .milliseconds(50)
                }
                backoff = min(backoff * 2, .seconds(5))
            }
        }
        finished.withLock { $0 = true }
    }
}
