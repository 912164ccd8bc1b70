import SystemCalls
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Retrying interrupted system calls")
struct RetryingInterruptsTests {
    @Test("A call interrupted by signals is made again until it answers") func aCallInterruptedBySignalsIsMadeAgainUntilItAnswers() {
        var calls = 0
        let result = retryingInterrupts { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == .success(7))
        #expect(calls == 3)
    }

    @Test("A real failure is returned with its errno and not retried") func aRealFailureIsReturnedWithItsErrnoAndNotRetried() {
        var calls = 0
        let result = retryingInterrupts { () -> Int in
            calls += 1
            errno = ECONNREFUSED
            return -1
        }
        #expect(result == .failure(SystemCallError(code: ECONNREFUSED)))
        #expect(calls == 1)
    }

    @Test("A real call that fails reports the kernels errno") func aRealCallThatFailsReportsTheKernelsErrno() {
        // Closing a descriptor that is not open fails with EBADF, not EINTR: returned at once.
        let result = retryingInterrupts { close(-1) }
        #expect(result == .failure(SystemCallError(code: EBADF)))
    }
}
