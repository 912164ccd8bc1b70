import CLibevent
import Synchronization

/// Where pool threads leave the answers of deferred requests for a worker's loop.
///
/// Posting wakes the loop through an event (`event_active` is thread-safe with libevent's
/// pthread locking on). Once the worker closes it, posts are dropped, so a pool finishing late
/// never touches a freed event.
final class Mailbox: Sendable {
    private struct State {
        var answers: [(ticket: UInt64, response: HTTPResponse)] = []
        var event: EventHandle?
        var closed = false
    }

    private let state = Mutex(State())

    /// Gives the mailbox the (not yet added) event that wakes the loop.
    func attach(_ event: OpaquePointer?) {
        let handle = event.map(EventHandle.init(pointer:))
        state.withLock { $0.event = handle }
    }

    /// Leaves an answer; called from any thread.
    func post(ticket: UInt64, response: HTTPResponse) {
        state.withLock { state in
            guard !state.closed, let event = state.event else { return }
            state.answers.append((ticket, response))
            if state.answers.count == 1 { event_active(event.pointer, 0, 0) }
        }
    }

    /// Every answer left so far (loop thread).
    func takeAll() -> [(ticket: UInt64, response: HTTPResponse)] {
        state.withLock { state in
            defer { state.answers.removeAll() }
            return state.answers
        }
    }

    /// Drops every later post; returns the event for the caller to free.
    func close() -> OpaquePointer? {
        state.withLock { state in
            state.closed = true
            state.answers.removeAll()
            defer { state.event = nil }
            return state.event
        }?.pointer
    }
}
