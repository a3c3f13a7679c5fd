import Crypto
import Foundation
import HubCore
import Synchronization
import Testing

@testable import HubWebPush

@Suite("VAPID (RFC 8292): keys, subjects and tokens")
struct VAPIDTests {
    @Test("a token is an ES256 JWT for the origin, 12 hours ahead, that the public key verifies")
    func token() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let credentials = try VAPIDCredentials(key: .generate(), subject: "mailto:ops@contoso.com")
        let signer = VAPIDSigner(now: { now })
        let header = try signer.authorization(credentials, audience: "https://push.example.com")
        let parts = header.split(separator: " ")
        #expect(parts.first == "vapid")
        let token = String(header.split(separator: "t=")[1].split(separator: ",")[0])
        #expect(header.hasSuffix("k=\(credentials.key.publicKeyBase64URL)"))
        let sections = token.split(separator: ".").map(String.init)
        #expect(sections.count == 3)
        let jose = try JSONSerialization.jsonObject(with: Data(B64.decode(sections[0]))) as? [String: String]
        #expect(jose == ["typ": "JWT", "alg": "ES256"])
        let claims = try #require(
            try JSONSerialization.jsonObject(with: Data(B64.decode(sections[1]))) as? [String: Any])
        #expect(claims["aud"] as? String == "https://push.example.com")
        #expect(claims["sub"] as? String == "mailto:ops@contoso.com")
        #expect((claims["exp"] as? Int) == Int(now.timeIntervalSince1970) + 12 * 3600)
        let key = try P256.Signing.PublicKey(x963Representation: credentials.key.publicKey)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: B64.decode(sections[2]))
        #expect(key.isValidSignature(signature, for: Data((sections[0] + "." + sections[1]).utf8)))
        #expect(!key.isValidSignature(signature, for: Data((sections[0] + "." + sections[0]).utf8)))
    }

    @Test("a token is reused for an hour and more, then replaced; another origin gets its own")
    func cache() throws {
        let clock = ManualTime(Date(timeIntervalSince1970: 1_800_000_000))
        let credentials = try VAPIDCredentials(key: .generate(), subject: "https://contoso.com/contact")
        let signer = VAPIDSigner(now: { clock.now })
        let first = try signer.token(credentials, audience: "https://a.example")
        clock.advance(3600)
        #expect(try signer.token(credentials, audience: "https://a.example") == first)
        #expect(try signer.token(credentials, audience: "https://b.example") != first)
        clock.advance(5 * 3600 + 1)
        #expect(try signer.token(credentials, audience: "https://a.example") != first)
    }

    @Test("subjects must be mailto: or https: URLs")
    func subjects() throws {
        #expect(VAPIDCredentials.subjectProblem("mailto:ops@contoso.com") == nil)
        #expect(VAPIDCredentials.subjectProblem("https://contoso.com/") == nil)
        for bad in ["ops@contoso.com", "http://contoso.com", "mailto:", "mailto:nobody", "https://", "tel:123"] {
            #expect(VAPIDCredentials.subjectProblem(bad) != nil, "\(bad)")
        }
        #expect(throws: WebPushError.self) { try VAPIDCredentials(key: .generate(), subject: "http://contoso.com") }
    }

    @Test("private keys read from PEM (SEC 1 and PKCS #8) and from web-push's base64url scalar")
    func keys() throws {
        let key = VAPIDKey.generate()
        let fromPKCS8 = try VAPIDKey(privateKey: key.pemRepresentation.reveal())
        #expect(fromPKCS8.publicKey == key.publicKey)
        let sec1 = try P256.Signing.PrivateKey(rawRepresentation: key.privateKey.rawRepresentation)
        let fromSEC1 = try VAPIDKey(privateKey: pemSEC1(sec1))
        #expect(fromSEC1.publicKey == key.publicKey)
        let fromRaw = try VAPIDKey(privateKey: B64.encode(Array(key.privateKey.rawRepresentation)))
        #expect(fromRaw.publicKey == key.publicKey)
        #expect(key.publicKey.count == 65)
        #expect(throws: WebPushError.self) { try VAPIDKey(privateKey: "not a key") }
        #expect(throws: WebPushError.self) { try VAPIDKey(privateKey: B64.encode(Array(repeating: 1, count: 31))) }
        #expect(!"\(key)".contains(B64.encode(Array(key.privateKey.rawRepresentation))))
        #expect(!"\(key.pemRepresentation)".contains("PRIVATE"))
    }

    /// The SEC 1 (`EC PRIVATE KEY`) PEM of `key`, as `openssl ecparam -genkey` writes it.
    private func pemSEC1(_ key: P256.Signing.PrivateKey) -> String {
        // x963 private: 0x04 || X || Y || d; SEC 1 DER: version 1, d, [0] curve OID, [1] public key.
        let d = Array(key.rawRepresentation)
        let publicKey = Array(key.publicKey.x963Representation)
        let der: [UInt8] =
            [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + d
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
            + [0xA1, 0x44, 0x03, 0x42, 0x00] + publicKey
        return "-----BEGIN EC PRIVATE KEY-----\n\(Data(der).base64EncodedString(options: .lineLength64Characters))\n"
            + "-----END EC PRIVATE KEY-----"
    }
}

/// A settable clock for tests.
final class ManualTime: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
