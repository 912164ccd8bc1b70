import DeltaFeedClient
import DeltaFeedServer
import EventHTTP
import Foundation
import HTTPTestSupport
import SQLiteStore
import Testing

/// Request bodies are read strictly and numbers exactly (issue 9): a repeated member name is
/// refused rather than "last wins", `/v1/diff` compares and echoes numbers beyond `Int64` and
/// `Double` exactly, and an integer field takes any integral number however it is written.
@Suite("Strict JSON bodies and exact numbers", .serialized)
struct StrictJSONTests {
    let fixture: BadInputFixture

    init() throws { fixture = try BadInputFixture() }

    // MARK: Duplicate member names

    @Test(
        "The parser refuses a member name given twice, at any depth, and names it",
        arguments: [
            #"{"title":"a","title":"b"}"#,
            #"{"a":1,"b":2,"a":1}"#,
            #"[{"x":{"k":null,"k":null}}]"#,
            // Canonically equivalent names (é precomposed and decomposed) would collide in one
            // dictionary entry, so they count as the same name.
            "{\"\u{E9}\":1,\"e\u{301}\":2}",
        ])
    func duplicateMemberNamesAreRefused(text: String) throws {
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
        #expect(error?.reason.contains("duplicate member name") == true, "\(String(describing: error))")
    }

    @Test("Distinct names, and the same name in sibling objects, still parse")
    func siblingObjectsMayShareNames() throws {
        let value = try JSONValue(parsing: #"[{"id":1,"n":"a"},{"id":2,"n":"b"},{"Id":3,"id ":4}]"#)
        #expect(value[1]?["n"] == "b")
        #expect(value[2]?["id "] == 4)
    }

    @Test("Every body the server parses answers 400 invalid_json for a repeated member, and nothing is written")
    func everyBodyRefusesDuplicateMembers() throws {
        let before = fixture.store.changeVersion
        let video = #"{"author_id":1,"title":"a","title":"b","thumbnail_url":"https://x.example/t.jpg","duration_seconds":10}"#
        let writes: [(String, String, String)] = [
            ("POST", "/v1/videos", video),
            ("PATCH", "/v1/videos/1", #"{"title":"a","title":"b"}"#),
            ("PATCH", "/v1/videos/1", #"{"view_count":1,"view_count":2}"#),
            ("POST", "/v1/users", #"{"handle":"dup","display_name":"A","display_name":"B"}"#),
            (
                "POST", "/v1/ads",
                #"{"advertiser":"a","title":"t","image_url":"https://x.example/i.jpg","target_url":"https://x.example","weight":1,"weight":2}"#
            ),
            ("PATCH", "/v1/ads/1", #"{"active":true,"active":false}"#),
        ]
        for (method, path, body) in writes {
            let response = try fixture.write(method, path, body)
            expectError(response, 400, "invalid_json")
            #expect(response.bodyText.contains("duplicate member name"), "\(method) \(path): \(response.bodyText)")
        }
        #expect(fixture.store.changeVersion == before, "no refused body changed anything")

        let diff = try fixture.write("POST", "/v1/diff", #"{"old":[],"old":[1],"new":[]}"#, token: nil)
        expectError(diff, 400, "invalid_json")
        let nested = try fixture.write("POST", "/v1/diff", #"{"old":[{"id":1,"id":2}],"new":[],"key":"id"}"#, token: nil)
        expectError(nested, 400, "invalid_json")
        let posted = try fixture.write(
            "POST", "/v1/users/1/feed/delta", #"{"sections":[],"sections":[{"id":"header","kind":"header","items":[]}]}"#, token: nil)
        expectError(posted, 400, "invalid_json")
    }

    // MARK: Numbers beyond Int64 and Double in /v1/diff

    func diff(_ body: String) throws -> (text: String, json: JSONValue) {
        let response = try fixture.write("POST", "/v1/diff", body, token: nil)
        #expect(response.status == 200, "\(response.bodyText)")
        return (response.bodyText, try JSONValue(parsing: response.body))
    }

    @Test("An integer beyond Int64 is echoed digit for digit (issue 9's example)")
    func integerBeyondInt64IsEchoedExactly() throws {
        let (text, json) = try diff(#"{"old":[],"new":[18446744073709551617]}"#)
        #expect(text.contains(#"{"op":"add","path":"/0","value":18446744073709551617}"#), "\(text)")
        #expect(json["inserts"] == [0])
    }

    @Test(
        "Numbers no Double holds are echoed as written",
        arguments: [
            "-9223372036854775809", "123456789012345678901234567890", "0.10000000000000000000000001",
            "1e-400", "2.000000000000000000001E+3",
        ])
    func inexactNumbersAreEchoedAsWritten(number: String) throws {
        let (text, _) = try diff(#"{"old":[0],"new":[0,{"n":\#(number)}]}"#)
        #expect(text.contains(#""value":{"n":\#(number)}"#), "\(text)")
    }

    @Test("Keyed objects that differ only in a number beyond Int64 are an update, with the exact value")
    func keyedObjectsDifferingInAHugeNumberAreAnUpdate() throws {
        let (text, json) = try diff(
            #"{"old":[{"id":1,"n":18446744073709551617}],"new":[{"id":1,"n":18446744073709551618}],"key":"id"}"#)
        #expect(json["updates"] == [0], "\(text)")
        #expect(json["change_count"] == 1)
        #expect(text.contains(#""value":{"id":1,"n":18446744073709551618}"#), "\(text)")
    }

    @Test("Identities beyond Int64 are told apart exactly")
    func hugeIdentitiesAreDistinct() throws {
        // Both round to the same Double (1.8446744073709552e19): one delete and one insert, not "no change".
        let (text, json) = try diff(#"{"old":[{"id":18446744073709551617}],"new":[{"id":18446744073709551618}],"key":"id"}"#)
        #expect(json["deletes"] == [0], "\(text)")
        #expect(json["inserts"] == [0])
        let (unkeyedText, unkeyed) = try diff(#"{"old":[18446744073709551617,3],"new":[18446744073709551618,3]}"#)
        #expect(unkeyed["deletes"] == [0], "\(unkeyedText)")
        #expect(unkeyed["inserts"] == [0])
    }

    @Test("Numbers are compared by value, as RFC 6902's test operation does: 1, 1.0, 1e0 and 10E-1 are one number")
    func numbersCompareByValue() throws {
        let (text, json) = try diff(
            #"{"old":[{"id":1,"v":100},{"id":2,"v":2.5},{"id":3,"v":18446744073709551617}],"new":[{"id":1.0,"v":1e2},{"id":2e0,"v":2.50},{"id":3,"v":1.8446744073709551617e19}],"key":"id"}"#
        )
        #expect(json["change_count"] == 0, "\(text)")
        #expect(json["patch"] == JSONValue.array([]))
        let (unkeyedText, unkeyed) = try diff(#"{"old":[1,-0,0.5],"new":[10E-1,0,5e-1]}"#)
        #expect(unkeyed["change_count"] == 0, "\(unkeyedText)")
        // Different values stay different, however close.
        let (closeText, close) = try diff(#"{"old":[{"id":1,"v":1}],"new":[{"id":1,"v":1.0000000000000000000000001}],"key":"id"}"#)
        #expect(close["updates"] == [0], "\(closeText)")
    }

    @Test("Numbers beyond Double's range are kept exactly too; only an exponent of more than 18 digits is 400 invalid_json")
    func numbersBeyondDoubleRange() throws {
        for number in ["1e400", "-1.5E+999", "7e-400"] {
            let (text, _) = try diff(#"{"old":[],"new":[\#(number)]}"#)
            #expect(text.contains(#""value":\#(number)}"#), "\(text)")
        }
        let (equalText, equal) = try diff(#"{"old":[1e400],"new":[10e399]}"#)
        #expect(equal["change_count"] == 0, "\(equalText)")
        for number in ["1e-1234567890123456789", "-2E+00000000000000000001234567890123456789"] {
            let response = try fixture.write("POST", "/v1/diff", #"{"old":[],"new":[\#(number)]}"#, token: nil)
            expectError(response, 400, "invalid_json")
            #expect(response.bodyText.contains("number out of range"), "\(number): \(response.bodyText)")
        }
        // Zero is zero whatever its exponent.
        let (text, _) = try diff(#"{"old":[],"new":[0e-99999999999999999999999]}"#)
        #expect(text.contains(#""value":0"#), "\(text)")
    }

    // MARK: Integral numbers where an integer is expected

    @Test(
        "An integer field takes an integral number written with a fraction or exponent",
        arguments: [
            ("view_count", "151.0", 151), ("view_count", "1.51e2", 151), ("like_count", "1510E-1", 151),
            ("duration_seconds", "60.000", 60), ("view_count", "9223372036854775807.0", 9_223_372_036_854_775_807),
            ("view_count", "0e5", 0), ("view_count", "-0.0", 0),
        ])
    func integralNumbersAreIntegers(field: String, number: String, value: Int) throws {
        let response = try fixture.write("PATCH", "/v1/videos/2", #"{"\#(field)":\#(number)}"#)
        #expect(response.status == 200, "\(response.bodyText)")
        #expect(try JSONValue(parsing: response.body)[field] == .int(Int64(value)))
    }

    @Test("An ad weight of 162.0 is the weight 162")
    func integralWeight() throws {
        let response = try fixture.write("PATCH", "/v1/ads/1", #"{"weight": 162.0}"#)
        #expect(response.status == 200, "\(response.bodyText)")
        #expect(try JSONValue(parsing: response.body)["weight"] == 162)
        let created = try fixture.write(
            "POST", "/v1/videos", #"{"author_id":1.0,"title":"t","thumbnail_url":"https://x.example/t.jpg","duration_seconds":1e1}"#)
        #expect(created.status == 201, "\(created.bodyText)")
    }

    @Test(
        "A non-integral number, or one beyond Int64, where an integer is expected is 422 naming the field",
        arguments: [
            ("view_count", "151.5"), ("view_count", "1e-1"), ("weight", "162.000000000000000000001"),
            ("view_count", "9223372036854775808"), ("view_count", "1e19"), ("like_count", "-9223372036854775809.0"),
        ])
    func nonIntegralNumbersAre422(field: String, number: String) throws {
        let before = fixture.store.changeVersion
        let path = field == "weight" ? "/v1/ads/1" : "/v1/videos/2"
        let response = try fixture.write("PATCH", path, #"{"\#(field)":\#(number)}"#)
        expectError(response, 422, "invalid_field")
        #expect(response.bodyText.contains("\(field): must be an integer"), "\(response.bodyText)")
        #expect(fixture.store.changeVersion == before)
    }
}
