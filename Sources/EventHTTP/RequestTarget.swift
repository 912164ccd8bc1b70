import CLibevent

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// What a request line and its headers say, in the terms of libevent 2.1 and of the router.

/// libevent 2.1's command for a method it has no name for (`EVHTTP_REQ_UNKNOWN_` in http-internal.h).
let unknownMethodCommand: UInt32 = 1 << 15

/// Whether evhttp reads a body for this method (`evhttp_method_may_have_body` in 2.1).
func libeventReadsBody(_ command: evhttp_cmd_type) -> Bool {
    switch command {
    case EVHTTP_REQ_POST, EVHTTP_REQ_PUT, EVHTTP_REQ_PATCH, EVHTTP_REQ_GET, EVHTTP_REQ_DELETE,
        EVHTTP_REQ_OPTIONS, EVHTTP_REQ_CONNECT:
        true
    default:
        false
    }
}

/// The name of a method HTTPMethod does not cover, as the client spelt it when the scanner saw it.
func unknownMethodName(_ command: evhttp_cmd_type, findings: RequestHeadScanner.Findings) -> String {
    if command == EVHTTP_REQ_CONNECT { return "CONNECT" }
    let spelt = String(decoding: findings.method, as: UTF8.self)
    return spelt.isEmpty ? "OTHER" : spelt
}

/// Whether request headers announce a body: any `Transfer-Encoding`, or a `Content-Length`
/// other than 0.
func announcesBody(_ headers: HTTPHeaders) -> Bool {
    if headers["Transfer-Encoding"] != nil { return true }
    guard let length = headers["Content-Length"] else { return false }
    return length.utf8.contains { $0 != UInt8(ascii: "0") && $0 != UInt8(ascii: " ") }
}

/// Splits a request target into the path and the raw query. An absolute-form target
/// (`http://host/path?q`) is reduced to its path.
package func splitTarget(_ target: String) -> (path: String, query: Substring) {
    // Origin form, the target of nearly every request, is told by its first byte: a slash
    // followed by an ASCII byte (or nothing) is a Character of its own. Its query starts at the
    // first "?" byte, found in place.
    var copy = target
    let (originForm, mark) = copy.withUTF8 { bytes -> (Bool, Int?) in
        guard let base = bytes.baseAddress, bytes.first == UInt8(ascii: "/"), bytes.count == 1 || bytes[1] < 0x80 else { return (false, nil) }
        return (true, memchr(base, Int32(UInt8(ascii: "?")), bytes.count).map { UnsafeRawPointer($0) - UnsafeRawPointer(base) })
    }
    if originForm {
        guard let mark else { return (target, "") }
        let index = target.utf8.index(target.utf8.startIndex, offsetBy: mark)
        return (String(target[..<index]), target[target.utf8.index(after: index)...])
    }
    // Anything else is looked at by Characters, as it always was.
    var rest = target[...]
    if !rest.hasPrefix("/") {
        // Absolute form: skip "scheme://authority".
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            let afterAuthority = rest[rest.index(colon, offsetBy: 3)...]
            rest = afterAuthority.firstIndex(of: "/").map { afterAuthority[$0...] } ?? "/"
        }
    }
    if let mark = rest.utf8.firstIndex(of: UInt8(ascii: "?")) {
        return (String(rest[..<mark]), rest[rest.utf8.index(after: mark)...])
    }
    return (String(rest), "")
}

extension HTTPMethod {
    /// The method for an evhttp command; HEAD maps to GET.
    init?(_ command: evhttp_cmd_type) {
        switch command {
        case EVHTTP_REQ_GET, EVHTTP_REQ_HEAD: self = .get
        case EVHTTP_REQ_POST: self = .post
        case EVHTTP_REQ_PUT: self = .put
        case EVHTTP_REQ_PATCH: self = .patch
        case EVHTTP_REQ_DELETE: self = .delete
        case EVHTTP_REQ_OPTIONS: self = .options
        case EVHTTP_REQ_TRACE: self = .trace
        default: return nil
        }
    }
}
