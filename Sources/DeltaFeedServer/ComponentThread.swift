import Foundation

/// The two moves every component with a thread of its own makes on the condition that guards it
/// (`LongPolls`, `LiveStreams`, `SnapshotHandOff`): tell the thread something happened, and ask
/// it to stop and wait until it has.
extension NSCondition {
    /// Runs `change` under the lock and wakes the component's thread.
    func signalling(_ change: () -> Void) {
        lock()
        change()
        signal()
        unlock()
    }

    /// Runs `stop` (which sets the component's stop flag) under the lock, wakes every waiter, and
    /// waits until `hasStopped` (which the thread sets on its way out) says so.
    func stopping(_ stop: () -> Void, until hasStopped: () -> Bool) {
        lock()
        stop()
        broadcast()
        while !hasStopped() { wait() }
        unlock()
    }
}
