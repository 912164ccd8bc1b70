import Foundation
import JSONBytes
import Testing

/// JSONBytes keeps every number exactly: `Int64` when written as one, `Double` when a `Double`
/// loses nothing, the text otherwise; canonical bytes compare numbers by value.
@Suite("Exact JSON numbers")
struct JSONNumberTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue(parsing: text) }

    @Test(
        "Each number lands in the case that holds it exactly",
        arguments: [
            ("0", "int"), ("-0", "int"), ("9223372036854775807", "int"), ("-9223372036854775808", "int"),
            ("2.5", "double"), ("1e2", "double"), ("0.1", "double"), ("-0.0", "double"), ("1.7976931348623157e308", "double"),
            ("5e-324", "double"), ("123456789012345.6", "double"), ("9223372036854775807.0", "number"),
            ("9223372036854775808", "number"), ("18446744073709551617", "number"), ("0.10000000000000000000000001", "number"),
            ("1e400", "number"), ("7e-400", "number"), ("2e-324", "number"), ("12345678901234567890.5", "number"),
        ])
    func classification(text: String, expected: String) throws {
        let value = try parse(text)
        let kind =
            switch value {
            case .int: "int"
            case .double: "double"
            case .number: "number"
            default: "other"
            }
        #expect(kind == expected, "\(text) → \(value)")
        // Nothing is lost on the way out: reading the output back gives the same value.
        #expect(try parse(value.jsonText) == value)
        if case .number(let number) = value { #expect(value.jsonText == text && number.text == text) }
    }

    @Test(
        "Canonical bytes are equal exactly when the values are",
        arguments: [
            ("1", "1.0", true), ("1", "1e0", true), ("1", "10E-1", true), ("100", "1e2", true), ("-0", "0.0", true),
            ("0", "-0e-99", true), ("2.5", "25e-1", true), ("1e400", "10e399", true), ("0.5", "5E-1", true),
            ("18446744073709551617", "1.8446744073709551617e19", true), ("9223372036854775807", "9223372036854775807.000", true),
            ("1", "1.0000000000000000000001", false), ("18446744073709551617", "18446744073709551616", false),
            ("1", "-1", false), ("1e400", "1e401", false), ("0.1", "0.10000000000000000000000001", false),
        ])
    func canonicalBytesCompareValues(lhs: String, rhs: String, equal: Bool) throws {
        let left = try parse(lhs).canonicalSerialized()
        let right = try parse(rhs).canonicalSerialized()
        #expect((left == right) == equal, "\(lhs) vs \(rhs): \(String(decoding: left, as: UTF8.self)) vs \(String(decoding: right, as: UTF8.self))")
    }

    @Test("Random spellings of one value have one canonical form; a different last digit another")
    func canonicalFormsOfRandomSpellings() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let digitCount = Int.random(in: 1...30, using: &generator)
            var digits = (0..<digitCount).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
            if digits.first == "0" { digits = "1" + digits.dropFirst() }  // JSON allows no leading zero
            let exponent = Int.random(in: -400...400, using: &generator)
            let sign = Bool.random(using: &generator) ? "-" : ""
            // digits × 10^exponent, written with the point moved `shift` places and the exponent adjusted.
            let shift = Int.random(in: 0...digits.count, using: &generator)
            let integer = String(digits.prefix(digits.count - shift))
            let fraction = String(digits.suffix(shift))
            let moved = "\(sign)\(integer.isEmpty ? "0" : integer)\(fraction.isEmpty ? "" : "." + fraction)e\(exponent + shift)"
            let padded = "\(sign)\(digits)000e\(exponent - 3)"
            let a = try parse(moved).canonicalSerialized()
            let b = try parse(padded).canonicalSerialized()
            #expect(a == b, "\(moved) vs \(padded)")
            let last = digits.last!
            let other = digits.dropLast() + (last == "9" ? "8" : String(last.wholeNumberValue! + 1))
            let c = try parse("\(sign)\(other)e\(exponent)").canonicalSerialized()
            #expect(a != c, "\(moved) vs \(sign)\(other)e\(exponent)")
        }
    }

    @Test("Every Double reads back as itself from its own description")
    func doublesRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let double = Double(bitPattern: generator.next())
            guard double.isFinite else { continue }
            let value = try parse(double.description)
            guard case .double(let parsed) = value else {
                Issue.record("\(double.description) → \(value)")
                continue
            }
            #expect(parsed == double)
        }
    }

    @Test(
        "int64Value takes integral numbers however written, within Int64 only",
        arguments: [
            ("151", 151 as Int64?), ("151.0", 151), ("1.51e2", 151), ("1510E-1", 151), ("-0.0", 0), ("0e999999", 0),
            ("9223372036854775807.0", .max), ("-9223372036854775808.0", .min), ("-92233720368547758.08e2", .min),
            ("151.5", nil), ("1e-1", nil), ("9223372036854775808", nil), ("1e19", nil), ("-9223372036854775809", nil),
            ("1e400", nil), ("true", nil), ("\"151\"", nil), ("null", nil),
        ])
    func int64Value(text: String, expected: Int64?) throws {
        #expect(try parse(text).int64Value == expected, "\(text)")
    }

    @Test("isIntegral: numbers without a fractional part, of any size")
    func isIntegral() throws {
        for text in ["3", "3.0", "1e30", "18446744073709551617", "-5e400", "0.0"] { #expect(try parse(text).isIntegral, "\(text)") }
        for text in ["3.5", "1e-1", "7e-400", "\"3\"", "[3]"] { #expect(try !parse(text).isIntegral, "\(text)") }
    }

    @Test("A kept number encodes through Codable as its nearest Double, and equal values hash alike")
    func codableAndHashing() throws {
        let value = try parse(#"{"n":18446744073709551617}"#)
        let encoded = try JSONEncoder().encode(value)
        let decoded = try JSONDecoder().decode([String: Double].self, from: encoded)
        #expect(decoded["n"] == 18_446_744_073_709_551_617.0)
        let spellings = try ["1e400", "10E+399", "0.1e401"].map(parse)
        #expect(Set(spellings).count == 1)
    }

    @Test("Integers are written as their decimal text, whatever their type and sign")
    func integersAreWrittenInDecimal() {
        func written(_ value: some BinaryInteger) -> String {
            var json = JSONWriter()
            json.int(value)
            return String(decoding: json.bytes, as: UTF8.self)
        }
        for value in [0, 7, -7, 10, -10, 99, 100, 123_457, -123_457, Int.max, Int.min] { #expect(written(value) == String(value)) }
        #expect(written(Int64.min) == "-9223372036854775808")
        // Digits go into a stack buffer from the right: every digit count, at the carries.
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            for value in [power - 1, power, power + 1] {
                #expect(written(value) == String(value))
                #expect(written(-value) == String(-value))
            }
        }
        #expect(written(Int64.max) == "9223372036854775807")
        #expect(written(Int32.min) == "-2147483648")
        #expect(written(UInt64.max) == "18446744073709551615", "beyond Int64: still exact")
        #expect(written(Int8(-128)) == "-128")
        #expect(written(UInt8(255)) == "255")
        var json = JSONWriter()
        json.ints([1, -2, 30])
        #expect(String(decoding: json.bytes, as: UTF8.self) == "[1,-2,30]")
    }
}
