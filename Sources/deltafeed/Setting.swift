import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// An option that falls back to an environment variable, then to a default, both stated where it
/// is declared; its help is made from them. `@Option(help: "Port to listen on", .env("DELTAFEED_PORT",
/// default: 8080)) var port: Setting<Int>` shows "Port to listen on (env DELTAFEED_PORT; default
/// 8080)." and `try port.value` is the flag, else the variable (an error when set to what does not
/// parse), else the default.
struct Setting<Value: ExpressibleByArgument & Sendable>: Sendable {
    private var flag: Value?
    /// The variable; empty in a value parsed from the command line, which needs none.
    private(set) var env = ""
    private var fallback: Value?
    /// The help's words after the variable's name, and in place of "default <value>".
    private var note = "", shown: String?

    static func env(_ name: String, default fallback: Value? = nil, note: String = "", shown: String? = nil) -> Setting {
        Setting(env: name, fallback: fallback, note: note, shown: shown)
    }

    func help(_ sentence: String) -> ArgumentHelp {
        let shown = self.shown ?? fallback.map { "default \(plain($0))" }
        return ArgumentHelp("\(sentence) (env \(env)\(note)\(shown.map { "; \($0)" } ?? "")).")
    }

    /// The flag, else the variable, else the default (nil when the setting has none).
    var valueIfSet: Value? {
        get throws {
            if let flag { return flag }
            guard let raw = getenv(env).map({ String(cString: $0) }), !raw.isEmpty else { return fallback }
            guard let value = Value(argument: raw) else { throw ValidationError("\(env)=\(raw) is not a valid value.") }
            return value
        }
    }

    /// ``valueIfSet`` of a setting declared with a default.
    var value: Value { get throws { try valueIfSet! } }
}

extension Setting: ExpressibleByArgument {
    init?(argument: String) {
        guard let flag = Value(argument: argument) else { return nil }
        self.flag = flag
    }

    /// None: ``help(_:)`` says the default.
    var defaultValueDescription: String { "" }
}

extension Option {
    init<T>(help sentence: String, _ setting: Setting<T>) where Value == Setting<T> {
        self.init(wrappedValue: setting, help: setting.help(sentence))
    }
}

extension Setting<String> {
    /// The server `simulate` and `prove` talk to.
    static var serverURL: Setting { .env("DELTAFEED_URL", default: "http://127.0.0.1:8080") }
    /// The write routes' token: `serve` checks it, `simulate` and `prove` send it.
    static var adminToken: Setting { .env("DELTAFEED_ADMIN_TOKEN") }
    /// The viewer tokens' secret: `serve` verifies them, `token` signs one.
    static func viewerSecret(shown: String? = nil) -> Setting {
        .env("DELTAFEED_VIEWER_SECRET", note: ", which keeps it out of the process list", shown: shown)
    }
}

/// Throws "`name` must be `lower`…`upper``unit`, not `value`." unless `range` holds `value`.
func check<T: Comparable>(_ name: String, _ value: T, in range: ClosedRange<T>, unit: String = "") throws {
    guard !range.contains(value) else { return }
    throw ValidationError("\(name) must be \(plain(range.lowerBound))…\(plain(range.upperBound))\(unit), not \(value).")
}

/// A value as help and messages write it: a whole floating-point number without its ".0".
private func plain<T>(_ value: T) -> String {
    let text = "\(value)"
    return value is any BinaryFloatingPoint && text.hasSuffix(".0") ? String(text.dropLast(2)) : text
}
