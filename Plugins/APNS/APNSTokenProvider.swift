import HubHTTPSupport
import JWTKit

import struct Foundation.Date

/// Signs and caches the provider token (ES256 JWT) of one `.p8` key (PROVIDERS.md §1.6).
///
/// The header carries `alg: ES256` and `kid` = the key ID; the claims `iss` = the team ID and `iat`
/// = the signing time in whole seconds. One token is shared by every connection of the key and
/// reused until it is ``refreshInterval`` old (clamped to 20–60 minutes; 50 by default). It is
/// never re-signed sooner than 20 minutes after the last signature, not even when APNs answers
/// `ExpiredProviderToken` — that means the clocks disagree, and a new token would not help.
/// Concurrent callers that find the token stale wait for one signature together: reuse and single
/// flight are the `AccessTokenCache` that FCM's and WNS's access tokens use too.
final class APNSTokenProvider: Sendable {
    /// A signed token and when it was issued, by the provider's clock.
    struct Token: Sendable, Hashable {
        /// The `authorization` header value: `bearer <jwt>`.
        let authorization: String
        let issuedAt: Date
    }

    let keyID: String
    let teamID: String
    /// How old a token may get before it is replaced.
    let refreshInterval: Duration
    /// Apple's floor between two tokens of one key.
    static let minimumInterval: Duration = .seconds(20 * 60)
    private let key: ES256PrivateKey
    private let now: @Sendable () -> Date
    private let cache: AccessTokenCache<Token>

    /// - Throws: ``APNSError/Code/invalidCredentials`` when the `.p8` text is not an EC P-256 key.
    init(
        keyID: String, teamID: String, privateKeyPEM: String, refreshInterval: Duration,
        now: @escaping @Sendable () -> Date
    ) throws(APNSError) {
        do {
            key = try ES256PrivateKey(pem: privateKeyPEM)
        } catch {
            throw APNSError(
                .invalidCredentials,
                "the APNs key \(keyID) is not an EC P-256 .p8 private key: download it again from Apple",
                underlying: error)
        }
        self.keyID = keyID
        self.teamID = teamID
        self.refreshInterval = min(max(refreshInterval, Self.minimumInterval), .seconds(3600))
        self.now = now
        self.cache = AccessTokenCache(now: now)
    }

    /// How many tokens this provider has signed (for tests and diagnostics).
    var signatureCount: Int { cache.exchangeCount }

    /// The current token, signed anew when there is none or it is ``refreshInterval`` old.
    func token() async throws -> Token {
        try await cache.token { [self] in
            let token = try await sign(at: now())
            return (token, renewAt: token.issuedAt.addingTimeInterval(refreshInterval.seconds))
        }
    }

    /// A replacement for `rejected`, which APNs called expired, or `nil` when `rejected` is younger
    /// than 20 minutes and must not be replaced yet. When another caller already replaced it,
    /// returns that replacement without signing again.
    func renew(replacing rejected: Token) async throws -> Token? {
        if let latest = cache.latest, latest != rejected { return try await token() }
        guard now().timeIntervalSince(rejected.issuedAt) >= Self.minimumInterval.seconds else { return nil }
        cache.invalidate(rejected)
        return try await token()
    }

    private func sign(at time: Date) async throws -> Token {
        let issuedAt = Date(timeIntervalSince1970: time.timeIntervalSince1970.rounded(.down))
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyID))
        let claims = APNSProviderClaims(iss: teamID, iat: Int64(issuedAt.timeIntervalSince1970))
        let jwt = try await keys.sign(claims, kid: JWKIdentifier(string: keyID))
        return Token(authorization: "bearer " + jwt, issuedAt: issuedAt)
    }
}

/// The claims of an APNs provider token: the team ID and the issue time in whole seconds.
struct APNSProviderClaims: JWTPayload {
    var iss: String
    var iat: Int64
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
