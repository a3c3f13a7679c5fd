public import Foundation
public import HubCore
import JWTKit

/// Checks that push credentials can actually sign what the providers expect.
public enum CredentialCheck {
    /// Why the `.p8` text is not an APNs token key (PEM PKCS#8 EC P-256), or `nil` when it is.
    public static func p8Problem(_ pem: String) -> String? {
        guard pem.contains("-----BEGIN PRIVATE KEY-----") || pem.contains("-----BEGIN EC PRIVATE KEY-----") else {
            return "is not a PEM private key; use the AuthKey_XXXXXXXXXX.p8 file downloaded from Apple"
        }
        do {
            _ = try ES256PrivateKey(pem: pem)
            return nil
        } catch {
            return "is not a P-256 (ES256) private key; APNs token keys are EC P-256 .p8 files"
        }
    }

    /// Why the PEM is not an RSA private key usable for RS256, or `nil`.
    public static func rsaKeyProblem(_ pem: String) -> String? {
        do {
            _ = try Insecure.RSA.PrivateKey(pem: pem)
            return nil
        } catch {
            return "private_key is not a PEM RSA private key; download a new key for the service account"
        }
    }

    /// Signs an APNs provider token (ES256, `kid` = key ID, `iss` = team ID) and verifies it with the
    /// key's public half. - Returns: the compact JWT.
    public static func signAPNSToken(
        p8: String, keyID: String, teamID: String, at now: Date = Date()
    ) async throws
        -> String
    {
        let key = try ES256PrivateKey(pem: p8)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyID))
        let token = try await keys.sign(APNSClaims(iss: IssuerClaim(value: teamID), iat: IssuedAtClaim(value: now)))
        let verifier = JWTKeyCollection()
        await verifier.add(ecdsa: key.publicKey, kid: JWKIdentifier(string: keyID))
        _ = try await verifier.verify(token, as: APNSClaims.self)
        return token
    }

    /// Signs a Google OAuth assertion (RS256) with the service account's key and verifies it.
    /// - Returns: the compact JWT.
    public static func signServiceAccountAssertion(
        _ account: FCMCredentials, at now: Date = Date()
    ) async throws
        -> String
    {
        let key = try Insecure.RSA.PrivateKey(pem: account.privateKey.reveal())
        let kid = account.privateKeyID.map { JWKIdentifier(string: $0) }
        let keys = JWTKeyCollection()
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
        let claims = AssertionClaims(
            iss: IssuerClaim(value: account.clientEmail),
            scope: "https://www.googleapis.com/auth/firebase.messaging",
            aud: AudienceClaim(value: account.tokenURI), iat: IssuedAtClaim(value: now),
            exp: ExpirationClaim(value: now.addingTimeInterval(3600)))
        let token = try await keys.sign(claims, kid: kid)
        let verifier = JWTKeyCollection()
        await verifier.add(rsa: key.publicKey, digestAlgorithm: .sha256, kid: kid)
        _ = try await verifier.verify(token, as: AssertionClaims.self)
        return token
    }
}

struct APNSClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

struct AssertionClaims: JWTPayload {
    var iss: IssuerClaim
    var scope: String
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
}
