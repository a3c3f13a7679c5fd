import Foundation
import Testing

@testable import HubServer

@Suite("JSON parser")
struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONValue.parse(Array(text.utf8))
    }

    @Test(
        "valid texts parse as Foundation's JSONDecoder reads them",
        arguments: [
            "{}", " [ ] ", "0", "-0", "12.5e-3", "1E+2", "-1.0E2", "true", "false", "null", #""""#,
            #""\u00e9\/\"\\\b\f\n\r\t""#, #""\ud83d\ude00 é 日本""#, #"{"a":[1,{"b":null}],"c":"d"}"#,
            "\t\n\r {\"k\" : [ true , false ] } \n", #""\u0000 nul""#, "[1.7976931348623157e308, 5e-324]", "\u{FEFF}{}",
            #"{"appNotificationId":"n-1","payload":{"visualContent":{"title":"Hi","body":"there"}},"priority":"high"}"#,
        ])
    func valid(text: String) throws {
        let reference = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(try parse(text) == reference)
    }

    @Test(
        "invalid texts are refused",
        arguments: [
            "", " ", "{", "}", "[1,]", #"{"a":1,}"#, "[1 2]", "01", "-01", "+1", ".5", "1.", "1e", "1e+", "-", "NaN",
            "Infinity", "-Infinity", "tru", "nul", "falsey", #""abc"#, "\"a\nb\"", "\"a\tb\"", #""\x""#, #""\u12""#,
            #""\u12g4""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\ud800x""#, #"{"a":1,"a":2}"#, "1e400",
            "-1e400", "[1] 2", "{a:1}", "'a'", "/*c*/1", "[1]//", #"{"a" 1}"#, #"{1:2}"#, "[,1]", "\u{FEFF}\u{FEFF}{}",
        ])
    func invalid(text: String) {
        #expect(throws: JSONValue.SyntaxError.self) { try parse(text) }
    }

    @Test("nesting is limited (and deep documents do not exhaust the stack)")
    func depth() throws {
        let limit = JSONValue.maxDepth
        _ = try parse(String(repeating: "[", count: limit) + String(repeating: "]", count: limit))
        _ = try parse(String(repeating: #"{"a":"#, count: limit) + "1" + String(repeating: "}", count: limit))
        #expect(throws: JSONValue.SyntaxError.self) {
            try parse(String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1))
        }
        #expect(throws: JSONValue.SyntaxError.self) { try parse(String(repeating: "[", count: 100_000)) }
    }

    @Test("random documents encoded by JSONEncoder parse back to the same value")
    func roundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        let encoder = JSONEncoder()
        for _ in 0..<500 {
            let value = Self.randomValue(depth: 0, using: &generator)
            let data = try encoder.encode(value)
            #expect(try JSONValue.parse(Array(data)) == value, "\(String(decoding: data, as: UTF8.self))")
        }
    }

    static func randomValue(depth: Int, using generator: inout SystemRandomNumberGenerator) -> JSONValue {
        switch Int.random(in: 0..<(depth > 4 ? 4 : 6), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2:
            let number =
                Bool.random(using: &generator)
                ? Double(Int.random(in: -1_000_000...1_000_000, using: &generator))
                : Double.random(in: -1e12...1e12, using: &generator)
            return .number(number)
        case 3: return .string(randomString(using: &generator))
        case 4:
            return .array(
                (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    randomValue(depth: depth + 1, using: &generator)
                })
        default:
            var object: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                object[randomString(using: &generator)] = randomValue(depth: depth + 1, using: &generator)
            }
            return .object(object)
        }
    }

    static func randomString(using generator: inout SystemRandomNumberGenerator) -> String {
        let pool: [Unicode.Scalar] = [
            "a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{1F}", "\n", "\t", "é", "日", "🙂",
            "\u{FFFF}", "\u{10FFFF}", "\u{2028}",
        ]
        var text = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &generator) { text.append(pool.randomElement(using: &generator)!) }
        return String(text)
    }
}
