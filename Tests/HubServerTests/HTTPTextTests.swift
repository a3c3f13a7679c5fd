import Foundation
import HTTPTypes
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

    @Test("a field's value reads as the subscript reads it: absent, once, repeated (joined), cookies")
    func fieldValue() {
        var fields: HTTPFields = [.authorization: "Bearer k", .contentType: "application/json"]
        fields.append(HTTPField(name: .accept, value: "a/b"))
        fields.append(HTTPField(name: .accept, value: "c/d"))
        fields.append(HTTPField(name: .cookie, value: "x=1"))
        fields.append(HTTPField(name: .cookie, value: "y=2"))
        for name: HTTPField.Name in [.authorization, .contentType, .accept, .cookie, .origin, .contentLength] {
            #expect(fields.value(name) == fields[name], "\(name)")
        }
        #expect(fields.value(.authorization) == "Bearer k")
        #expect(fields.value(HTTPField.Name("AUTHORIZATION")!) == "Bearer k", "names compare without case")
        #expect(fields.value(.accept) == "a/b, c/d")
        #expect(fields.value(.cookie) == "x=1; y=2")
        #expect(fields.value(.origin) == nil)
    }
}
