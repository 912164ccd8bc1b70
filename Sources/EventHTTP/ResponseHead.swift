import CLibevent

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The header lines of an answer that libevent only passes on, written as one block after the
/// reason phrase, so evhttp prints them with the status line in one call.
///
/// evhttp 2.1 writes a response head as the status line (`"HTTP/%d.%d %d %s\r\n"` with the
/// reason phrase we give it) and then one `evbuffer_add_printf` per entry of the output header
/// list, each entry a `calloc` and two `strdup`s when added and three `free`s when the request is
/// freed: about 3,000 instructions a line. So the reason phrase carries the lines evhttp never
/// reads (`Content-Type`, `Vary`, `X-Request-Id`, and any other a handler sets), each as
/// `"\r\n" + name + ": " + value`, and the list keeps only what evhttp reads to frame and close
/// the connection: `Content-Length`, `Date`, `Connection` and the rest of ``HeaderRole/libevent``.
/// The bytes on the wire are the same as with every line in the list, in the same order, except
/// that a handler's own header of a kind evhttp reads follows the block instead of keeping its
/// place among the handler's headers.
///
/// A line goes into the block only if `evhttp_add_header` would have taken it (so no value can
/// end one line and start another), read up to a NUL as C would.
struct ResponseHead {
    /// Where the block is written; the worker keeps it from one answer to the next.
    final class Storage {
        fileprivate var base: UnsafeMutablePointer<UInt8>
        fileprivate var capacity: Int

        init(capacity: Int = 512) {
            self.base = .allocate(capacity: capacity)
            self.capacity = capacity
        }

        deinit { base.deallocate() }
    }

    private let storage: Storage
    // Copies of the storage's fields: the block is written through locals, not class properties.
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0

    /// Starts a block with the reason phrase, in `storage` (whose earlier block it overwrites).
    init(in storage: Storage, reason: String) {
        self.storage = storage
        self.base = storage.base
        self.capacity = storage.capacity
        var reason = reason
        reason.withUTF8 { write(UnsafeRawBufferPointer($0), length: cLength($0)) }
    }

    /// Appends a whole line the server writes itself (`"\r\nVary: Accept-Encoding"`): known to
    /// be valid, copied as it is.
    mutating func append(line: StaticString) {
        write(UnsafeRawBufferPointer(start: line.utf8Start, count: line.utf8CodeUnitCount), length: line.utf8CodeUnitCount)
    }

    /// Appends `name: value` with a name the server writes itself (a token): only the value is
    /// checked.
    mutating func append(knownName name: StaticString, value: String) {
        var value = value
        let plain = value.withUTF8 { value in
            let bytes = UnsafeRawBufferPointer(value)
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return bytes.isEmpty }
            guard memchr(base, 0, bytes.count) == nil, !containsLineBreak(bytes) else { return false }
            reserve(name.utf8CodeUnitCount + bytes.count + 4)
            writePair(0x0D, 0x0A)
            write(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), length: name.utf8CodeUnitCount)
            writePair(0x3A, 0x20)
            write(bytes, length: bytes.count)
            return true
        }
        if !plain { append(name: "\(name)", value: value) }
    }

    private mutating func writePair(_ first: UInt8, _ second: UInt8) {
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    /// Appends `name: value`, unless evhttp_add_header would have dropped it. Returns whether
    /// it was appended.
    @discardableResult
    mutating func append(name: String, value: String) -> Bool {
        var name = name
        var value = value
        return name.withUTF8 { name in
            value.withUTF8 { value in append(name: name, value: value) }
        }
    }

    private mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        // C strings end at the first NUL.
        let name = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(name)[..<cLength(name)])
        let value = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(value)[..<cLength(value)])
        // A token name and a value without CR or LF pass every libevent's evhttp_add_header;
        // anything else is asked of this one (they differ: Debian's 2.1.12 refuses any CR or LF
        // in a value, upstream lets a folded line through, newer ones check that names are tokens).
        if !isTokenName(name) || containsLineBreak(value) {
            guard libeventAcceptsHeader(name: name, value: value) else { return false }
        }
        reserve(name.count + value.count + 4)
        writePair(0x0D, 0x0A)
        write(name, length: name.count)
        writePair(0x3A, 0x20)
        write(value, length: value.count)
        return true
    }

    /// Calls `body` with the block as a C string.
    mutating func withCString<R>(_ body: (UnsafePointer<CChar>) -> R) -> R {
        reserve(1)
        base[count] = 0
        return UnsafeMutableRawPointer(base).withMemoryRebound(to: CChar.self, capacity: count + 1) { body($0) }
    }

    private mutating func write(_ bytes: UnsafeRawBufferPointer, length: Int) {
        guard length > 0, let source = bytes.baseAddress else { return }
        reserve(length)
        (base + count).update(from: source.assumingMemoryBound(to: UInt8.self), count: length)
        count += length
    }

    private mutating func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        let grown = max(capacity * 2, count + extra)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
        storage.base = moved
        storage.capacity = grown
    }
}

/// The length of `bytes` as a C string: up to the first NUL.
private func cLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    guard let start = bytes.baseAddress, !bytes.isEmpty else { return 0 }
    guard let nul = memchr(start, 0, bytes.count) else { return bytes.count }
    return UnsafeRawPointer(nul) - UnsafeRawPointer(start)
}

/// Whether `name` is a non-empty RFC 9110 token (`!#$%&'*+-.^_`|~`, digits, letters).
private func isTokenName(_ name: UnsafeRawBufferPointer) -> Bool {
    !name.isEmpty && name.allSatisfy(isTokenByte)
}

private func containsLineBreak(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let start = bytes.baseAddress, !bytes.isEmpty else { return false }
    return memchr(start, 0x0D, bytes.count) != nil || memchr(start, 0x0A, bytes.count) != nil
}

/// Whether this libevent's `evhttp_add_header` takes `name: value` (asked on a scratch list).
package func libeventAcceptsHeader(name: String, value: String) -> Bool {
    var name = name
    var value = value
    return name.withUTF8 { name in
        value.withUTF8 { value in
            libeventAcceptsHeader(
                name: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(name)[..<cLength(name)]),
                value: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(value)[..<cLength(value)]))
        }
    }
}

private func libeventAcceptsHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
    func withCString<R>(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafePointer<CChar>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: bytes.count + 1) { copy in
            UnsafeMutableRawBufferPointer(copy).copyMemory(from: bytes)
            copy[bytes.count] = 0
            return body(copy.baseAddress!)
        }
    }
    let list = UnsafeMutablePointer<evkeyvalq>.allocate(capacity: 1)
    defer { list.deallocate() }
    list.pointee.tqh_first = nil
    list.pointee.tqh_last = UnsafeMutableRawPointer(list).assumingMemoryBound(to: UnsafeMutablePointer<evkeyval>?.self)
    let accepted = withCString(name) { name in withCString(value) { value in evhttp_add_header(list, name, value) == 0 } }
    evhttp_clear_headers(list)
    return accepted
}

/// Where an answer's header goes: into the ``ResponseHead`` block, or into evhttp's output
/// header list because evhttp reads it.
enum HeaderRole {
    /// Only passed on: into the block.
    case plain
    /// `Content-Type`: into the block; the server also reads it (compression, and whether evhttp
    /// must add its default type).
    case contentType
    /// `Date`: into the list (evhttp adds its own when the list has none).
    case date
    /// `Content-Length`, `Transfer-Encoding`, `Connection`, `Proxy-Connection`, or a name with a
    /// NUL byte (evhttp reads it up to the NUL): into the list.
    case libevent

    init(_ name: String) {
        var name = name
        self = name.withUTF8 { HeaderRole(UnsafeRawBufferPointer($0)) }
    }

    init(_ name: UnsafeRawBufferPointer) {
        func equals(_ literal: StaticString) -> Bool {
            guard name.count == literal.utf8CodeUnitCount else { return false }
            let other = UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
            for index in 0..<name.count {
                let byte = name[index]
                let lowered = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                if lowered != other[index] { return false }
            }
            return true
        }
        switch name.count {
        case 4 where equals("date"): self = .date
        case 10 where equals("connection"): self = .libevent
        case 12 where equals("content-type"): self = .contentType
        case 14 where equals("content-length"): self = .libevent
        case 16 where equals("proxy-connection"): self = .libevent
        case 17 where equals("transfer-encoding"): self = .libevent
        default: self = name.contains(0) ? .libevent : .plain
        }
    }
}

/// The `Date` header's value, formatted once a second by libevent's own formatter (the one
/// evhttp calls for every answer that has none).
struct HTTPDate {
    private var second = -1
    private var text = [CChar](repeating: 0, count: 64)

    /// Calls `body` with the value for now, as a C string.
    mutating func withCurrent<R>(_ body: (UnsafePointer<CChar>) -> R) -> R {
        let now = time(nil)
        if now != second {
            var parts = tm()
            var seconds = now
            if gmtime_r(&seconds, &parts) != nil {
                second = now
                text.withUnsafeMutableBufferPointer { _ = evutil_date_rfc1123($0.baseAddress, $0.count, &parts) }
            }
        }
        return text.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// Calls `body` with `value` in decimal, as a C string, without making a String.
func withDecimal<R>(_ value: Int, _ body: (UnsafePointer<CChar>) -> R) -> R {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 24) { digits in
        var index = digits.count - 1
        digits[index] = 0
        var rest = value.magnitude
        repeat {
            index -= 1
            digits[index] = CChar(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        if value < 0 {
            index -= 1
            digits[index] = CChar(UInt8(ascii: "-"))
        }
        return body(digits.baseAddress! + index)
    }
}

/// The type evhttp gives an answer with a body and no `Content-Type` (`evhttp_new`'s default):
/// the server sets no default, since its answers carry their type in the ``ResponseHead`` block,
/// and puts this one back for an answer that has none, so evhttp adds it as it always did.
var libeventDefaultContentType: UnsafePointer<CChar> {
    let type: StaticString = "text/html; charset=ISO-8859-1"
    return UnsafeRawPointer(type.utf8Start).assumingMemoryBound(to: CChar.self)
}
