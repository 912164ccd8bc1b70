import Synchronization

/// What another thread leaves for a worker's loop: the answer of a deferred request, or the next
/// part (or the end) of a streamed answer.
enum Delivery: Sendable {
    case answer(HTTPResponse)
    case chunk([UInt8])
    case end([UInt8])
}

/// Where pool threads and streams leave deliveries for a worker's loop.
///
/// Posting wakes the loop through the worker's ``LoopWakeup``. Once the worker closes it, posts
/// are dropped, so a pool finishing late never writes to a closed pipe.
final class Mailbox: Sendable {
    private struct State {
        var deliveries: [(ticket: UInt64, delivery: Delivery)] = []
        var wakeup: LoopWakeup?
        var closed = false
    }

    private let state = Mutex(State())

    /// Gives the mailbox what wakes the loop.
    func attach(_ wakeup: LoopWakeup) {
        state.withLock { $0.wakeup = wakeup }
    }

    /// Leaves a delivery for request `ticket`; called from any thread. Returns false when the
    /// worker has stopped (the delivery is dropped).
    @discardableResult
    func post(ticket: UInt64, _ delivery: Delivery) -> Bool {
        state.withLock { state in
            guard !state.closed, let wakeup = state.wakeup else { return false }
            state.deliveries.append((ticket, delivery))
            if state.deliveries.count == 1 { wakeup.wake() }
            return true
        }
    }

    /// Leaves several deliveries at once, under one lock and with one wake-up; false when the
    /// worker has stopped (they are dropped).
    func post(_ batch: [(ticket: UInt64, delivery: Delivery)]) -> Bool {
        state.withLock { state in
            guard !state.closed, let wakeup = state.wakeup else { return false }
            let wasEmpty = state.deliveries.isEmpty
            state.deliveries.append(contentsOf: batch)
            if wasEmpty { wakeup.wake() }
            return true
        }
    }

    /// Every delivery left so far, in the order they were posted (loop thread).
    func takeAll() -> [(ticket: UInt64, delivery: Delivery)] {
        state.withLock { state in
            defer { state.deliveries.removeAll() }
            return state.deliveries
        }
    }

    /// Drops every later post: from now on nothing here wakes the loop.
    func close() {
        state.withLock { state in
            state.closed = true
            state.deliveries.removeAll()
            state.wakeup = nil
        }
    }
}
