import HubCore
import Testing

@Suite("Identifier grammar")
struct IdentifierTests {
    @Test(
        "printable Unicode of 1–256 UTF-8 bytes is an identifier, kept byte for byte",
        arguments: [
            "alice", "auth0|42", "a b", " padded ", "user@contoso.com", "a/b?c#d", "%", "Ünïcödé", "ne\u{301}",
            "日本語", "🙂", "\u{200B}zero-width", "\u{FFFD}", String(repeating: "x", count: 256),
            String(repeating: "é", count: 128),
        ])
    func accepted(value: String) {
        #expect(Identifier.violation(in: value) == nil)
    }

    @Test(
        "controls, DEL, C1 and bidi controls are refused anywhere in the value",
        arguments: [
            0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1B, 0x1F, 0x7F, 0x80, 0x85, 0x9F, 0x061C, 0x200E, 0x200F, 0x202A, 0x202B,
            0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069,
        ])
    func forbiddenScalars(value: UInt32) throws {
        let scalar = try #require(Unicode.Scalar(value))
        #expect(Identifier.isForbidden(scalar))
        for text in ["\(Character(scalar))bob", "bob\(Character(scalar))", "b\(Character(scalar))ob"] {
            #expect(Identifier.violation(in: text)?.code == "forbidden-character")
        }
    }

    @Test("the scalars next to the forbidden ranges are allowed")
    func neighbours() {
        for value: UInt32 in [0x20, 0x7E, 0xA0, 0x061B, 0x061D, 0x200D, 0x2010, 0x2029, 0x202F, 0x2065, 0x206A] {
            #expect(!Identifier.isForbidden(Unicode.Scalar(value)!), "U+\(String(value, radix: 16))")
        }
    }

    @Test("empty and over 256 UTF-8 bytes are refused; the limit counts bytes, not characters")
    func lengths() {
        #expect(Identifier.violation(in: "")?.code == "empty")
        #expect(Identifier.violation(in: String(repeating: "x", count: 257))?.code == "too-long")
        #expect(Identifier.violation(in: String(repeating: "é", count: 129))?.code == "too-long")
        #expect(Identifier.violation(in: String(repeating: "🙂", count: 64)) == nil)
        #expect(Identifier.violation(in: String(repeating: "🙂", count: 65))?.code == "too-long")
    }

    @Test("a message names the refused scalar and its position, never the value")
    func messages() {
        let violation = Identifier.violation(in: "bob\u{0}secret")
        #expect(violation?.message.contains("U+0000") == true)
        #expect(violation?.message.contains("position 4") == true)
        #expect(violation?.message.contains("secret") == false)
    }

    @Test("percent-decoding is strict: malformed escapes and invalid UTF-8 are refused")
    func percentDecoding() throws {
        #expect(try Identifier.decodingPercentEscapes("auth0%7C42") == "auth0|42")
        #expect(try Identifier.decodingPercentEscapes("%C3%A9t%c3%a9") == "été")
        #expect(try Identifier.decodingPercentEscapes("a+b") == "a+b")
        #expect(try Identifier.decodingPercentEscapes("100%25") == "100%")
        let cases: [(String, String)] = [
            ("%zz", "invalid-percent-escape"), ("bob%", "invalid-percent-escape"), ("%4", "invalid-percent-escape"),
            ("%%41", "invalid-percent-escape"), ("%ff", "invalid-utf8"), ("%C3", "invalid-utf8"),
            ("%ED%A0%80", "invalid-utf8"), ("%C0%AF", "invalid-utf8"), ("bob%00evil", "forbidden-character"),
            ("bob%0D%0A", "forbidden-character"), ("%E2%80%AE", "forbidden-character"),
            ("%C2%85", "forbidden-character"), ("", "empty"),
            (String(repeating: "%41", count: 257), "too-long"),
            // Without a `%` the value is taken as it is (a fast path), and still checked.
            ("bob\u{0}evil", "forbidden-character"), ("tab\there", "forbidden-character"),
            (String(repeating: "a", count: 257), "too-long"),
        ]
        for (encoded, code) in cases {
            #expect(throws: Identifier.Violation.self, "\(encoded)") {
                try Identifier.decodingPercentEscapes(encoded)
            }
            do {
                _ = try Identifier.decodingPercentEscapes(encoded)
            } catch {
                #expect(error.code == code, "\(encoded)")
            }
        }
    }

    @Test("check throws a HubError naming the field")
    func check() throws {
        #expect(throws: Never.self) { try Identifier.check("bob", field: "userId") }
        do {
            try Identifier.check("bob\u{0}evil", field: "userId")
            Issue.record("a NUL was accepted")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.fieldErrors.map(\.field) == ["userId"])
        }
    }
}
