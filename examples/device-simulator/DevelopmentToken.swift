import Crypto
import Foundation

/// A development user token: an HS256 JWT signed with the shared secret of an identity
/// registration that has `secret:` in hub.yaml (the sample's `examples/dev/user-token.secret`).
///
/// This is what an app server that mints its own user tokens does; a real device gets its token
/// from the identity provider instead and passes it to `HubClient`'s token provider.
struct DevelopmentToken {
    var secret: [UInt8]
    var issuer: String
    var audience: String
    var user: String
    var lifetime: TimeInterval = 3600

    /// Reads the secret from a file; a final line break is not part of it (as hub.yaml's
    /// `file:` references read it).
    init(secretFile: String, issuer: String, audience: String, user: String) throws {
        guard let data = FileManager.default.contents(atPath: secretFile) else {
            throw SimulatorError("cannot read the token secret file \(secretFile)")
        }
        var bytes = Array(data)
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty else { throw SimulatorError("the token secret file \(secretFile) is empty") }
        self.secret = bytes
        self.issuer = issuer
        self.audience = audience
        self.user = user
    }

    /// A token valid from now for ``lifetime`` seconds.
    func signed(now: Date = Date()) throws -> String {
        let issuedAt = Int(now.timeIntervalSince1970)
        let header: [String: Any] = ["alg": "HS256", "typ": "JWT"]
        let claims: [String: Any] = [
            "iss": issuer, "aud": audience, "sub": user, "iat": issuedAt, "exp": issuedAt + Int(lifetime),
        ]
        let signingInput =
            try Self.base64URL(JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + Self.base64URL(JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let signature = HMAC<SHA256>.authenticationCode(
            for: Array(signingInput.utf8), using: SymmetricKey(data: secret))
        return signingInput + "." + Self.base64URL(Data(signature))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// A failure the simulator reports and exits on.
struct SimulatorError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
