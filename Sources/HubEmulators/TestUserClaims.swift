public import JWTKit

public import struct Foundation.Date
public import typealias Foundation.TimeInterval

/// The claims of a hub user token (`sub`, `iss`, `aud`, `exp`) as the identity provider of an
/// app's `identity` registration signs them, for tests that call the hub as a user.
///
/// ```swift
/// let token = try await TestUserClaims(user: "alice", issuer: "https://login.contoso.com", audience: "contoso-notes")
///     .signed(secret: userTokenSecret)
/// ```
public struct TestUserClaims: JWTPayload {
    public var sub: SubjectClaim
    public var iss: IssuerClaim
    public var aud: AudienceClaim
    public var exp: ExpirationClaim

    /// Claims of `user` for `audience` from `issuer`, expiring `expiresIn` seconds from now (below
    /// −60 s, a token the hub refuses as expired).
    public init(user: String, issuer: String, audience: String, expiresIn: TimeInterval = 600) {
        sub = SubjectClaim(value: user)
        iss = IssuerClaim(value: issuer)
        aud = AudienceClaim(value: [audience])
        exp = ExpirationClaim(value: Date().addingTimeInterval(expiresIn))
    }

    /// Accepts any claims: the hub under test is what verifies them.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// The token: these claims signed with HS256 and `secret` (a registration's `secret`).
    public func signed(secret: String) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(self)
    }
}
