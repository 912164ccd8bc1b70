/// Request ids: the client's `X-Request-Id` when it is sane, otherwise one made of a random
/// per-process prefix, the worker number and a per-worker counter (unique without locks).
struct RequestIDGenerator {
    private let prefix: [UInt8]
    private var counter: UInt64 = 0

    init(worker: Int, processNonce: UInt32) {
        prefix = Array((String(processNonce, radix: 16) + "-" + String(worker, radix: 16) + "-").utf8)
    }

    /// The id to use: `clientID` if it is 1…128 characters of `[A-Za-z0-9._:-]`, else a new one.
    mutating func next(clientID: String?) -> String {
        if let clientID, RequestIDGenerator.isAcceptable(clientID) {
            return clientID
        }
        counter &+= 1
        // The prefix and the counter in hex, written into the String once.
        let digits = (64 - counter.leadingZeroBitCount + 3) / 4
        return String(unsafeUninitializedCapacity: prefix.count + digits) { buffer in
            _ = buffer.initialize(from: prefix)
            var rest = counter
            for index in stride(from: prefix.count + digits - 1, through: prefix.count, by: -1) {
                buffer[index] = hexDigits[Int(rest & 0xF)]
                rest >>= 4
            }
            return prefix.count + digits
        }
    }

    static func isAcceptable(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= 128 else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: ":"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }
}

/// Lowercase hex digits, as `String(_:radix: 16)` writes them.
private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
