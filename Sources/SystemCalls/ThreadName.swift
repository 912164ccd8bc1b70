#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The longest thread name the kernel keeps, in bytes (Linux's `TASK_COMM_LEN` less its NUL).
public let threadNameLimit = 15

/// Names the calling thread for the operating system, so `top -H`, `ps -L`, `perf` and
/// `/proc/PID/task/*/comm` show what each of a process's threads is for. Foundation's
/// `Thread.name` does not reach the kernel on Linux, so every thread showed the process's name.
/// A name longer than ``threadNameLimit`` bytes is cut there (at a character boundary); an
/// empty one is ignored. Best effort: a failure changes nothing else.
public func nameCurrentThread(_ name: String) {
    var bytes: [UInt8] = []
    for character in name {
        let utf8 = Array(String(character).utf8)
        guard bytes.count + utf8.count <= threadNameLimit else { break }
        bytes += utf8
    }
    guard !bytes.isEmpty else { return }
    #if canImport(Darwin)
    bytes.append(0)
    bytes.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { _ = pthread_setname_np($0) }
    }
    #else
    // Linux: the calling thread's `comm` (glibc's pthread_setname_np, which Swift's Glibc module
    // does not export, writes the same file; prctl is variadic).
    let file = retryingInterrupts { open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC) }
    guard case .success(let descriptor) = file else { return }
    _ = bytes.withUnsafeBytes { raw in retryingInterrupts { write(descriptor, raw.baseAddress, raw.count) } }
    close(descriptor)
    #endif
}

/// Gives the calling thread a lower scheduling priority: the nice value `niceness` (0 is the
/// default, 19 the lowest), for work that can wait while threads answering clients run — on a
/// busy core the kernel then gives it a smaller share. Linux only (a thread's nice value is its
/// own there); elsewhere, and when the call fails, nothing changes. A thread cannot raise its
/// priority back without privileges.
public func lowerCurrentThreadPriority(niceness: Int32) {
    #if os(Linux)
    // Linux keeps a nice value per thread; `who` 0 with PRIO_PROCESS is the calling thread.
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
    #endif
}
