import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// Resolves an option: the flag if given, else the environment variable, else the default.
/// A variable that is set but does not parse is an error, not a silent default.
func resolved<Value: ExpressibleByArgument>(_ flag: Value?, env name: String, default fallback: Value) throws -> Value {
    if let flag { return flag }
    guard let raw = getenv(name).map({ String(cString: $0) }), !raw.isEmpty else { return fallback }
    guard let value = Value(argument: raw) else {
        throw ValidationError("\(name)=\(raw) is not a valid value.")
    }
    return value
}

/// Like ``resolved(_:env:default:)`` for options with no default.
func resolved<Value: ExpressibleByArgument>(_ flag: Value?, env name: String) throws -> Value? {
    if let flag { return flag }
    guard let raw = getenv(name).map({ String(cString: $0) }), !raw.isEmpty else { return nil }
    guard let value = Value(argument: raw) else {
        throw ValidationError("\(name)=\(raw) is not a valid value.")
    }
    return value
}
