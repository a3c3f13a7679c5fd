import Crypto
import HubCore
import JWTKit

public import struct Foundation.Date

/// A throwaway APNs token-signing key (`.p8`), its 10-character key ID and team ID, for tests and
/// `hub emulate apns`. Register it with ``APNSEmulator/register(_:bundleIDs:environment:)`` and give
/// ``credentials(environment:)`` to the transport.
public struct APNSTestKey: Sendable, Hashable {
    public let keyID: String
    public let teamID: String
    /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the form Apple's `AuthKey_<keyID>.p8` files have.
    public let privateKeyPEM: String
    /// The public half (`-----BEGIN PUBLIC KEY-----`), all the emulator keeps.
    public let publicKeyPEM: String

    /// Generates a new P-256 key.
    public init(keyID: String = "TESTKEY001", teamID: String = "TESTTEAM01") {
        let key = P256.Signing.PrivateKey()
        self.keyID = keyID
        self.teamID = teamID
        privateKeyPEM = key.pemRepresentation
        publicKeyPEM = key.publicKey.pemRepresentation
    }

    /// Wraps an existing `.p8` key; the public half is derived from it.
    /// - Throws: when `privateKeyPEM` is not a PEM P-256 private key.
    public init(keyID: String, teamID: String, privateKeyPEM: String) throws {
        let key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        self.keyID = keyID
        self.teamID = teamID
        self.privateKeyPEM = privateKeyPEM
        publicKeyPEM = key.publicKey.pemRepresentation
    }

    /// Token-based credentials with this key.
    public func credentials(environment: APNSEnvironment = .production) -> APNSCredentials {
        APNSCredentials(
            authentication: .token(
                keyID: keyID, teamID: teamID, privateKey: Secret(privateKeyPEM, source: "test key \(keyID)")),
            environment: environment)
    }

    /// A provider token (ES256 JWT with `kid`, `iss` and a whole-second `iat`) signed with this key,
    /// for clients other than the transport, such as h2load in `hub-bench apns`.
    public func providerToken(issuedAt: Date = Date()) async throws -> String {
        struct Claims: JWTPayload {
            var iss: String
            var iat: Int64
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: privateKeyPEM), kid: JWKIdentifier(string: keyID))
        let claims = Claims(iss: teamID, iat: Int64(issuedAt.timeIntervalSince1970.rounded(.down)))
        return try await keys.sign(claims, kid: JWKIdentifier(string: keyID))
    }
}
