/// Request ids: the client's `X-Request-Id` when it is sane, otherwise one made of a random
/// per-process prefix, the worker number and a per-worker counter (unique without locks).
struct RequestIDGenerator {
    private let prefix: String
    private var counter: UInt64 = 0

    init(worker: Int, processNonce: UInt32) {
        prefix = String(processNonce, radix: 16) + "-" + String(worker, radix: 16) + "-"
    }

    /// The id to use: `clientID` if it is 1…128 characters of `[A-Za-z0-9._:-]`, else a new one.
    mutating func next(clientID: String?) -> String {
        if let clientID, RequestIDGenerator.isAcceptable(clientID) {
            return clientID
        }
        counter &+= 1
        return prefix + String(counter, radix: 16)
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
