import EventHTTP

/// Checks `Authorization: Bearer <token>` in constant time (for equal lengths; the length of
/// the expected token is not treated as secret).
struct AdminAuthorization: Sendable {
    let token: [UInt8]?

    init(token: String?) {
        self.token = token.flatMap { $0.isEmpty ? nil : Array($0.utf8) }
    }

    func check(_ request: HTTPRequest) throws {
        guard let token else {
            throw HTTPError(status: 403, code: "writes_disabled", message: "This server has no admin token; start it with --admin-token to allow writes.")
        }
        guard let header = request.headers["Authorization"] else {
            throw HTTPError(status: 401, code: "unauthorized", message: "Writes need Authorization: Bearer <admin token>.", headers: [("WWW-Authenticate", "Bearer")])
        }
        let prefix = "Bearer "
        guard header.hasPrefix(prefix) else {
            throw HTTPError(status: 401, code: "unauthorized", message: "Authorization must use the Bearer scheme.", headers: [("WWW-Authenticate", "Bearer")])
        }
        let presented = Array(header.utf8.dropFirst(prefix.utf8.count))
        guard AdminAuthorization.constantTimeEquals(presented, token) else {
            throw HTTPError(status: 403, code: "forbidden", message: "The admin token is wrong.")
        }
    }

    /// Compares every byte whatever the first difference, so timing does not reveal the prefix.
    static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: lhs.count ^ rhs.count)
        for index in 0..<max(lhs.count, rhs.count) {
            let left = index < lhs.count ? lhs[index] : 0
            let right = index < rhs.count ? rhs[index] : 0
            difference |= left ^ right
        }
        return difference == 0
    }
}
