import Crypto
import Foundation
import HTTPTypes
import HubCore
import HummingbirdTesting
import NIOCore
import Testing

@testable import HubServer

/// Issue 46, point 5: a user token is read one way only. Its time claims are numbers or refused,
/// a critical header parameter the hub does not know is refused (RFC 7515 §4.1.11), and its
/// segments are canonical base64url without padding — over real HTTP/1.1 connections.
@Suite("user tokens: strict JWT reading")
struct TokenStrictnessTests {
    static let header = #"{"alg":"HS256","typ":"JWT","kid":"tasks"}"#

    /// An HS256 token of the tasks app with `extraClaims` (JSON members, each with its comma) after
    /// `iss`, `aud`, `sub` and a numeric `exp`, unless `exp` is replaced.
    static func token(header: String = header, extraClaims: String = "", exp: String? = nil) -> String {
        let expiry = exp ?? String(Int(Date().timeIntervalSince1970) + 600)
        let claims =
            #"{"iss":"\#(Harness.tasksIssuer)","aud":"\#(Harness.tasksAudience)","sub":"alice","exp":\#(expiry)\#(extraClaims)}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array(input.utf8), using: SymmetricKey(data: Array(Harness.tasksSecret.utf8)))
        return input + "." + Base64URL.encode(Array(mac))
    }

    static let path = "/v1/apps/\(Harness.tasks)/me/endpoints"

    @Test("a string nbf, iat or exp is a 401 naming the claim; a numeric one in the past is fine")
    func timeClaimsAreNumbers() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let now = Int(Date().timeIntervalSince1970)
            let fine = try await client.send(
                .get, Self.path, bearer: Self.token(extraClaims: #","nbf":\#(now - 10),"iat":\#(now - 10)"#))
            #expect(fine.status == .ok, "\(fine.text)")
            // A string 'nbf' far in the future was ignored: the token opened the feed.
            for (claim, token) in [
                ("nbf", Self.token(extraClaims: #","nbf":"\#(now + 10 * 365 * 86_400)""#)),
                ("iat", Self.token(extraClaims: #","iat":"\#(now)""#)),
                ("exp", Self.token(exp: #""\#(now + 600)""#)),
                ("nbf", Self.token(extraClaims: #","nbf":null"#)),
            ] {
                let response = try await client.send(.get, Self.path, bearer: token)
                #expect(response.status == .unauthorized, "\(claim): \(response.text)")
                #expect(response.text.contains("'\(claim)' claim is not a number"), "\(claim): \(response.text)")
            }
        }
    }

    @Test("a header with crit is refused, whatever it names")
    func criticalHeaderParameters() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            for header in [
                #"{"alg":"HS256","typ":"JWT","kid":"tasks","crit":["x-unknown"],"x-unknown":true}"#,
                #"{"alg":"HS256","typ":"JWT","kid":"tasks","crit":["exp"]}"#,
                #"{"alg":"HS256","typ":"JWT","kid":"tasks","crit":[]}"#,
            ] {
                let response = try await client.send(.get, Self.path, bearer: Self.token(header: header))
                #expect(response.status == .unauthorized, "\(header): \(response.text)")
                #expect(response.text.contains("'crit'"), "\(header): \(response.text)")
            }
        }
    }

    @Test("padding or stray bits in any segment: 401; the canonical token: 200")
    func canonicalBase64URL() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let token = Self.token()
            #expect(try await client.send(.get, Self.path, bearer: token).status == .ok)
            let segments = token.split(separator: ".").map(String.init)
            // A 32-byte MAC is 43 characters whose last carries two unused bits: setting one
            // names the same bytes for a lenient decoder, in another text.
            let signature = segments[2]
            let last = signature.last!
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let strayBit = String(signature.dropLast()) + String(alphabet[alphabet.firstIndex(of: last)! ^ 1])
            for (what, variant) in [
                ("signature with '='", token + "="),
                ("signature with stray bits", segments[0] + "." + segments[1] + "." + strayBit),
                ("header with '='", segments[0] + "=." + segments[1] + "." + segments[2]),
            ] {
                let response = try await client.send(.get, Self.path, bearer: variant)
                #expect(response.status == .unauthorized, "\(what): \(response.text)")
            }
        }
    }

    @Test("an HS256 secret under 32 bytes is not loaded (not-configured, no assertion); its tokens get 503, never 200")
    func shortSecretIsNotLoaded() async throws {
        let short = IdentityRegistration(
            issuer: "https://short.contoso.com", audiences: [Harness.notesAudience],
            keys: .secret(Secret("one-byte-would-do", source: "env:SHORT_SECRET")))
        // JWTKit asserts (a debug build dies) on a key shorter than the hash: checked before.
        let harness = try await Harness(extraIdentity: [short])
        let error = try #require(harness.keyLoadingError)
        #expect(error.code == .notConfigured)
        #expect(error.message.contains("HS256 secret (env:SHORT_SECRET) is 17 bytes long"), "\(error.message)")
        #expect(!error.message.contains("one-byte-would-do"))
        // Signed by hand: JWTKit would assert on this key here too.
        let claims =
            #"{"iss":"https://short.contoso.com","aud":"\#(Harness.notesAudience)","sub":"alice","exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#
        let input =
            Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array(input.utf8), using: SymmetricKey(data: Array("one-byte-would-do".utf8)))
        let token = input + "." + Base64URL.encode(Array(mac))
        try await harness.run(.live) { client in
            let response = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/endpoints", bearer: token)
            #expect(response.status == .serviceUnavailable, "\(response.text)")
        }
    }
}
