import EventHTTP
public import Foundation
package import JWTKit
import Synchronization

/// Viewer tokens: HS256 JSON Web Tokens whose `sub` is a viewer's user id, signed and verified
/// with jwt-kit under one shared secret (`--viewer-secret`).
///
/// A token must carry `exp` (a token that never expires is refused) and is accepted until then.
/// Verification is synchronous, so a route checks a token on its event loop in microseconds: the
/// key collection is asked for its HS256 key once, at creation, and each token goes through
/// jwt-kit's own parser, the key's signature check and the claim's expiry check. A phone polls
/// with the same token for hours, so a token that passed is remembered (its exact bytes, its
/// viewer and expiry): the next poll costs a lookup and the expiry check, not the ~35 µs of
/// parsing and HMAC.
public struct ViewerTokens: Sendable {
    /// The shortest secret accepted, in bytes: RFC 7518 §3.2 wants an HS256 key at least as long
    /// as the hash (256 bits).
    public static let minimumSecretBytes = 32

    /// Verified tokens remembered at most; past it the memory starts afresh.
    static let rememberedTokens = 100_000

    private let keys: JWTKeyCollection
    private let key: any JWTAlgorithm
    private let parser = DefaultJWTParser()
    private let verified = VerifiedTokens()

    /// Tokens signed with `secret`.
    ///
    /// - Throws: ``ViewerTokenError/secretTooShort(bytes:)`` under 32 bytes.
    public init(secret: String) async throws(ViewerTokenError) {
        let bytes = Array(secret.utf8)
        guard bytes.count >= ViewerTokens.minimumSecretBytes else { throw .secretTooShort(bytes: bytes.count) }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: bytes), digestAlgorithm: .sha256)
        do {
            key = try await keys.getKey(alg: "HS256")
        } catch {
            // The collection was given exactly this key a line above.
            preconditionFailure("jwt-kit lost the HS256 key it was given: \(error)")
        }
        self.keys = keys
    }

    /// A token for `viewer` that expires at `expiry`.
    public func token(viewer: Int64, expiresAt expiry: Date, issuedAt: Date = Date()) async throws -> String {
        try await keys.sign(
            ViewerClaims(
                sub: SubjectClaim(value: String(viewer)), exp: ExpirationClaim(value: expiry), iat: IssuedAtClaim(value: issuedAt)))
    }

    /// The viewer a token was issued for.
    ///
    /// - Throws: ``ViewerTokenRefusal`` with the reason, for anything but a well-formed HS256
    ///   token signed with this secret, for a viewer id, that has not expired at `now`.
    public func viewer(of token: [UInt8], at now: Date = Date()) throws(ViewerTokenRefusal) -> Int64 {
        if let known = verified.lookup(token) {
            guard now < known.expiry else { throw ViewerTokenRefusal("the token has expired") }
            return known.viewer
        }
        let parsed: (header: JWTHeader, payload: ViewerClaims, signature: Data)
        let parts: (header: ArraySlice<UInt8>, payload: ArraySlice<UInt8>, signature: ArraySlice<UInt8>)
        do {
            parts = try parser.getTokenParts(token)
            parsed = try parser.parse(token, as: ViewerClaims.self)
        } catch {
            throw ViewerTokenRefusal("the token is not a JWT with sub and exp claims")
        }
        // The algorithm is this server's, never the token's choice ("alg": "none", or RS256
        // verified with the secret as a public key).
        guard parsed.header.alg == "HS256" else {
            throw ViewerTokenRefusal("the token must be signed with HS256")
        }
        let signed = parts.header + [UInt8(ascii: ".")] + parts.payload
        guard (try? key.verify(parsed.signature, signs: signed)) == true else {
            throw ViewerTokenRefusal("the token's signature does not match this server's secret")
        }
        do {
            try parsed.payload.exp.verifyNotExpired(currentDate: now)
        } catch {
            throw ViewerTokenRefusal("the token has expired")
        }
        guard let viewer = Int64(parsed.payload.sub.value), viewer > 0 else {
            throw ViewerTokenRefusal("the token's sub is not a user id")
        }
        verified.remember(token, viewer: viewer, expiry: parsed.payload.exp.value)
        return viewer
    }
}

extension ViewerAuthorization {
    /// The value of cookie `name` in the request's `Cookie` headers (RFC 6265 §5.4: pairs
    /// separated by `; `), or nil.
    static func cookie(_ name: String, in request: HTTPRequest) -> [UInt8]? {
        for header in request.headers where asciiLowercased(header.name) == "cookie" {
            for pair in header.value.split(separator: ";") {
                let trimmed = pair.drop(while: { $0 == " " })
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
                let value = trimmed[trimmed.index(after: equals)...]
                return value.isEmpty ? nil : Array(value.utf8)
            }
        }
        return nil
    }

    private static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

/// Tokens whose signature and claims passed, by their exact bytes, shared by every event loop.
private final class VerifiedTokens: Sendable {
    private let tokens = Mutex<[[UInt8]: (viewer: Int64, expiry: Date)]>([:])

    func lookup(_ token: [UInt8]) -> (viewer: Int64, expiry: Date)? {
        tokens.withLock { $0[token] }
    }

    func remember(_ token: [UInt8], viewer: Int64, expiry: Date) {
        tokens.withLock { tokens in
            if tokens.count >= ViewerTokens.rememberedTokens { tokens.removeAll(keepingCapacity: true) }
            tokens[token] = (viewer, expiry)
        }
    }
}

/// Why a viewer secret was not accepted.
public enum ViewerTokenError: Error, Equatable, CustomStringConvertible {
    case secretTooShort(bytes: Int)

    public var description: String {
        switch self {
        case .secretTooShort(let bytes):
            "the viewer secret has \(bytes) bytes; HS256 needs at least \(ViewerTokens.minimumSecretBytes) (try: openssl rand -hex 32)"
        }
    }
}

/// Why a presented viewer token was refused; the reason goes into the 401's message.
public struct ViewerTokenRefusal: Error, Equatable, CustomStringConvertible {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// The claims of a viewer token.
package struct ViewerClaims: JWTPayload {
    /// The viewer's user id, in decimal.
    package var sub: SubjectClaim
    package var exp: ExpirationClaim
    package var iat: IssuedAtClaim?

    package init(sub: SubjectClaim, exp: ExpirationClaim, iat: IssuedAtClaim?) {
        self.sub = sub
        self.exp = exp
        self.iat = iat
    }

    /// What jwt-kit's own `verify` checks; ``ViewerTokens/viewer(of:at:)`` checks the same.
    package func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// Who may read a viewer's feed, deltas and profile.
///
/// Without viewer tokens (no `--viewer-secret`) everyone may: the routes are public, as they
/// were. With them, a request needs `Authorization: Bearer` with a viewer token whose `sub` is
/// the viewer in the path, or the admin token. Answers as the write routes do:
///
/// - 401 `unauthorized` (with `WWW-Authenticate: Bearer`) without the header, with another
///   scheme, or with no token after the scheme;
/// - 401 `invalid_token` (with `WWW-Authenticate: Bearer error="invalid_token"`, RFC 6750 §3.1)
///   for a token that is malformed, signed otherwise, not HS256, or expired;
/// - 400 `invalid_authorization` for two `Authorization` headers or a control character;
/// - 403 `forbidden` for a valid token issued to another viewer.
struct ViewerAuthorization: Sendable {
    let tokens: ViewerTokens?
    let admin: AdminAuthorization

    /// The cookie the live route reads a viewer token from when the request has no
    /// `Authorization` header: browsers' EventSource cannot send headers, and a token in the URL
    /// would land in access logs, proxies' logs and the browser's history.
    static let cookieName = "deltafeed_token"

    /// Checks `request`'s credential for `viewer`; with `allowingCookie`, a request without
    /// `Authorization` may present the token in the ``cookieName`` cookie instead.
    func check(_ request: HTTPRequest, viewer: Int64, allowingCookie: Bool = false) throws {
        guard let tokens else { return }
        var presented = try BearerCredential.presented(in: request, naming: "viewer token")
        if presented == nil, allowingCookie {
            presented = ViewerAuthorization.cookie(ViewerAuthorization.cookieName, in: request)
        }
        guard let presented else {
            throw BearerCredential.unauthorized(
                "This server's feeds need Authorization: Bearer <viewer token> (deltafeed token --viewer \(viewer) prints one).")
        }
        if admin.accepts(presented) { return }
        let subject: Int64
        do {
            subject = try tokens.viewer(of: presented)
        } catch {
            throw HTTPError(
                status: 401, code: "invalid_token", message: "The viewer token was refused: \(error.reason).",
                headers: [("WWW-Authenticate", #"Bearer error="invalid_token""#)])
        }
        guard subject == viewer else {
            throw HTTPError(status: 403, code: "forbidden", message: "This token is for viewer \(subject), not \(viewer).")
        }
    }
}
