package import EventHTTP

/// Checks the admin token of write routes, `Authorization: Bearer <token>`, in constant time
/// (for equal lengths; the length of the expected token is not treated as secret).
///
/// The header is read by ``BearerCredential`` as RFC 9110 §11 and RFC 6750 §2.1 describe it: the scheme is
/// case-insensitive (`bearer`, `BEARER`), one or more spaces separate it from the token, and
/// `Authorization` is a singleton field. Answers:
///
/// - 403 `writes_disabled` when the server has no admin token, whatever the request holds;
/// - 401 `unauthorized` (with `WWW-Authenticate: Bearer`) without the header, with another
///   scheme, or with no token after the scheme;
/// - 400 `invalid_authorization` for a request the check cannot read unambiguously: more than one
///   `Authorization` header (RFC 9110 §5.3: a singleton field repeated makes the message
///   malformed, and a proxy in front may have checked a different one than this server would;
///   RFC 6750 §3.1 calls sending credentials more than once `invalid_request`, answered 400),
///   or a control character anywhere in the value (RFC 9110 §5.5 does not allow them in a field
///   value; comparing the bytes before one, as a C string would, accepted `token\0anything`).
///   Sending the request again with credentials, which a 401 invites, cannot fix either.
/// - 403 `forbidden` when the token is wrong.
package struct AdminAuthorization: Sendable {
    let token: [UInt8]?

    package init(token: String?) {
        self.token = token.flatMap { $0.isEmpty ? nil : Array($0.utf8) }
    }

    package func check(_ request: HTTPRequest) throws {
        guard let token else {
            throw HTTPError(status: 403, code: "writes_disabled", message: "This server has no admin token; start it with --admin-token to allow writes.")
        }
        guard let presented = try BearerCredential.presented(in: request, naming: "admin token") else {
            throw BearerCredential.unauthorized("Writes need Authorization: Bearer <admin token>.")
        }
        guard BearerCredential.constantTimeEquals(presented, token) else {
            throw HTTPError(status: 403, code: "forbidden", message: "The admin token is wrong.")
        }
    }

    /// Whether `presented` is the admin token (never, when the server has none).
    package func accepts(_ presented: [UInt8]) -> Bool {
        token.map { BearerCredential.constantTimeEquals(presented, $0) } ?? false
    }
}

/// The credential of a request's `Authorization: Bearer` header, read as RFC 9110 §11 and
/// RFC 6750 §2.1 describe it; shared by the admin and the viewer checks.
package enum BearerCredential {
    /// The token presented, or nil when the request has no `Authorization` header.
    ///
    /// - Parameter credential: what the token is called in error messages ("admin token").
    /// - Throws: 400 `invalid_authorization` for more than one header or a control character;
    ///   401 `unauthorized` for another scheme or no token after `Bearer`.
    static func presented(in request: HTTPRequest, naming credential: String) throws -> [UInt8]? {
        // HTTPHeaders keeps every field line in order, repeated ones included.
        let values = request.headers.filter { isAuthorization($0.name) }.map(\.value)
        guard let header = values.first else { return nil }
        guard values.count == 1 else {
            throw invalid("The request has more than one Authorization header; send exactly one.")
        }
        guard !header.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw invalid("The Authorization header holds a control character; send the token as printable text.")
        }
        return try bearerToken(in: header, naming: credential)
    }

    /// The token after a case-insensitive `Bearer` and one or more spaces.
    ///
    /// - Throws: 401 for another scheme or no token.
    package static func bearerToken(in header: String, naming credential: String = "admin token") throws -> [UInt8] {
        let bytes = Array(header.utf8)
        let scheme = Array("bearer".utf8)
        let space = UInt8(ascii: " ")
        guard bytes.count > scheme.count, bytes[scheme.count] == space,
            zip(bytes, scheme).allSatisfy({ lowercasedASCII($0) == $1 })
        else {
            throw unauthorized("Authorization must use the Bearer scheme: Bearer <\(credential)>.")
        }
        let presented = bytes[scheme.count...].drop(while: { $0 == space })
        guard !presented.isEmpty else {
            throw unauthorized("Authorization: Bearer needs the \(credential) after the scheme.")
        }
        return Array(presented)
    }

    /// 401 `unauthorized` with `WWW-Authenticate: Bearer`, which invites the client to send
    /// credentials (RFC 6750 §3).
    static func unauthorized(_ message: String) -> HTTPError {
        HTTPError(status: 401, code: "unauthorized", message: message, headers: [("WWW-Authenticate", "Bearer")])
    }

    private static func invalid(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "invalid_authorization", message: message)
    }

    /// Whether a header name is `Authorization`, in any case.
    private static func isAuthorization(_ name: String) -> Bool {
        let expected = "authorization".utf8
        return name.utf8.count == expected.count && zip(name.utf8, expected).allSatisfy { lowercasedASCII($0) == $1 }
    }

    private static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    /// Compares every byte whatever the first difference, so timing does not reveal the prefix.
    /// Lengths that differ never compare equal (not even by a multiple of 256 with NUL padding).
    package static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference: UInt8 = lhs.count == rhs.count ? 0 : 1
        for index in 0..<max(lhs.count, rhs.count) {
            let left = index < lhs.count ? lhs[index] : 0
            let right = index < rhs.count ? rhs[index] : 0
            difference |= left ^ right
        }
        return difference == 0
    }
}
