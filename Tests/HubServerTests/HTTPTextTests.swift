import Foundation
import Testing

@testable import HubServer

@Suite("HTTP text helpers")
struct HTTPTextTests {
    @Test("trimming removes only leading and trailing spaces and tabs")
    func trimming() {
        #expect(HTTPText.trimmed("  a b\t"[...]) == "a b")
        #expect(HTTPText.trimmed("\t \t"[...]) == "")
        #expect(HTTPText.trimmed(""[...]) == "")
        #expect(HTTPText.trimmed("x"[...]) == "x")
        #expect(HTTPText.trimmed("\na\r"[...]) == "\na\r")
        #expect(HTTPText.trimmed(" é 日本 "[...]) == "é 日本")
    }

    @Test("a bearer token: scheme in any case, whitespace around, nothing for other schemes or none")
    func bearer() {
        #expect(HTTPText.bearerToken("Bearer abc") == "abc")
        #expect(HTTPText.bearerToken("bearer abc") == "abc")
        #expect(HTTPText.bearerToken("BEARER \t abc.def-ghi  ") == "abc.def-ghi")
        #expect(HTTPText.bearerToken("  Bearer abc") == "abc")
        #expect(HTTPText.bearerToken("Bearer") == nil)
        #expect(HTTPText.bearerToken("Bearer   ") == nil)
        #expect(HTTPText.bearerToken("Basic abc") == nil)
        #expect(HTTPText.bearerToken("Bearerx abc") == nil)
        #expect(HTTPText.bearerToken("Beare abc") == nil)
        #expect(HTTPText.bearerToken("") == nil)
    }

    @Test(
        "a path segment is encoded as Foundation encodes it for a path without '/' and ';'",
        arguments: [
            "alice", "auth0|42", "a b", "a/b;c?d#e", "100%", "user@contoso.com", "Ünïcödé", "日本語", "🙂",
            "~-._!$&'()*+,=:@", "\"<>[]\\^`{}", "",
        ])
    func segment(value: String) {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;")
        #expect(HTTPText.pathSegment(value) == value.addingPercentEncoding(withAllowedCharacters: allowed))
    }
}
