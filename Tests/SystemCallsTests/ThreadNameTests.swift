import Foundation
import Synchronization
import SystemCalls
import Testing

@Suite("Thread names")
struct ThreadNameTests {
    /// The kernel's name of the calling thread.
    private func kernelName() throws -> String {
        #if os(Linux)
        try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        #else
        var buffer = [CChar](repeating: 0, count: 64)
        pthread_getname_np(pthread_self(), &buffer, buffer.count)
        return String(cString: buffer)
        #endif
    }

    @Test("A thread's name reaches the kernel, cut to 15 bytes at a character boundary")
    func namesReachTheKernel() throws {
        let names = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var seen: [String] = []
            nameCurrentThread("df-maintenance")
            seen.append((try? kernelName()) ?? "?")
            nameCurrentThread("df-storage-reads-1")
            seen.append((try? kernelName()) ?? "?")
            nameCurrentThread("df-storage-rrré")  // é is two bytes: 16 in all, so it is left out whole
            seen.append((try? kernelName()) ?? "?")
            names.withLock { $0 = seen }
            done.signal()
        }
        thread.start()
        done.wait()
        #expect(names.withLock { $0 } == ["df-maintenance", "df-storage-read", "df-storage-rrr"])
    }

    #if os(Linux)
    /// The nice value of the calling thread (field 19 of its stat line, after the name).
    @Sendable private static func niceness() throws -> Int {
        let stat = try String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return try #require(Int(fields[16]))
    }

    @Test("A lowered priority is the calling thread's alone: its nice value rises, the thread that started it keeps its own")
    func priorityIsPerThread() throws {
        let before = try Self.niceness()
        let seen = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            lowerCurrentThreadPriority(niceness: 10)
            seen.withLock { $0 = try? Self.niceness() }
            done.signal()
        }
        thread.start()
        done.wait()
        #expect(seen.withLock { $0 } == max(before, 10))
        #expect(try Self.niceness() == before)
    }
    #endif
}
