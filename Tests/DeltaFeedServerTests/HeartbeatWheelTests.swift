import DeltaFeedServer
import Testing

/// The live thread's heartbeat schedule: streams filed by the second their heartbeat falls due,
/// taken out by a scan once a second.
@Suite("Heartbeat wheel")
struct HeartbeatWheelTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }

    @Test("An id comes out at the first scan that reaches its second, not before; one filed for a second already taken comes out at the next scan")
    func dueAtItsSecond() {
        var wheel = HeartbeatWheel(start: start, interval: .seconds(15))
        wheel.file(1, due: at(15.2))
        wheel.file(2, due: at(3.9))
        #expect(wheel.takeDue(through: at(1)) == [])
        #expect(wheel.takeDue(through: at(3.5)) == [2], "its second, 3, is reached at 3.5 s")
        #expect(wheel.takeDue(through: at(14.99)) == [])
        wheel.file(3, due: at(2))
        #expect(wheel.takeDue(through: at(15.1)).sorted() == [1, 3])
    }

    @Test("A scan late by more than the wheel's turn takes every id filed, once")
    func lateScanTakesEverything() {
        var wheel = HeartbeatWheel(start: start, interval: .seconds(2))
        for id in 0..<8 { wheel.file(UInt64(id), due: at(Double(id) * 0.3)) }
        #expect(wheel.takeDue(through: at(40)).sorted() == Array(0..<8))
        #expect(wheel.takeDue(through: at(41)) == [])
    }

    @Test("Random filings and scans: each id out once, never after its second's first scan, not before it while scans keep time")
    func randomSchedules() {
        var random = SystemRandomNumberGenerator()
        for interval in [0.5, 1.0, 2.5, 15.0] {
            var wheel = HeartbeatWheel(start: start, interval: .milliseconds(Int64(interval * 1000)))
            var lastScan = 0.0
            var waiting: [UInt64: (second: Int, exact: Bool)] = [:]
            var nextUntaken = 0
            var nextID: UInt64 = 0
            for _ in 0..<400 {
                // The next scan: usually about a second on, sometimes several seconds late (the
                // live thread was busy).
                let late = Int.random(in: 0..<20, using: &random) == 0
                let scan = lastScan + (late ? Double.random(in: 2...40, using: &random) : Double.random(in: 0.2...1.2, using: &random))
                // Streams filed between the two scans, due up to one interval after they are filed.
                for _ in 0..<Int.random(in: 0...5, using: &random) {
                    let filedAt = Double.random(in: lastScan..<scan, using: &random)
                    let due = filedAt + Double.random(in: 0...interval, using: &random)
                    wheel.file(nextID, due: at(due))
                    // Filed within one interval and a second of the last scan, it comes out exactly
                    // at its second; filed later (a late scan), possibly earlier, never later.
                    waiting[nextID] = (max(Int(due.rounded(.down)), nextUntaken), filedAt <= lastScan + 1.2)
                    nextID += 1
                }
                let second = Int(scan.rounded(.down))
                let taken = Set(wheel.takeDue(through: at(scan)))
                for (id, expected) in waiting {
                    if expected.second <= second {
                        #expect(taken.contains(id), "interval \(interval) s: id \(id) due at second \(expected.second), not out at \(scan) s")
                    } else if expected.exact {
                        #expect(!taken.contains(id), "interval \(interval) s: id \(id) due at second \(expected.second), out early at \(scan) s")
                    }
                }
                for id in taken {
                    #expect(waiting.removeValue(forKey: id) != nil, "id \(id) came out twice")
                }
                nextUntaken = max(nextUntaken, second + 1)
                lastScan = scan
            }
        }
    }
}
