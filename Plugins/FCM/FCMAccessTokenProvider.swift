import AsyncHTTPClient
import Foundation
import HubCore
import HubHTTPSupport
import JWTKit
import Logging

/// The claims of a Google service-account assertion (RFC 7523 JWT bearer grant).
struct FCMAssertionClaims: JWTPayload {
    var iss: IssuerClaim
    var scope: String
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Holds one service account's OAuth 2.0 access token: exchanges an RS256 assertion for it, and
/// leaves reuse until shortly before expiry, single flight and invalidation to an
/// `AccessTokenCache`.
actor FCMAccessTokenProvider {
    private let credentials: FCMCredentials
    private let tokenURI: String
    private let http: HTTPClient
    private let configuration: FCMConfiguration
    private let logger: Logger
    private nonisolated let cache: AccessTokenCache<String>
    private var signer: JWTKeyCollection?

    init(credentials: FCMCredentials, http: HTTPClient, configuration: FCMConfiguration, logger: Logger) {
        self.credentials = credentials
        self.tokenURI = configuration.tokenURI ?? credentials.tokenURI
        self.http = http
        self.configuration = configuration
        self.logger = logger
        self.cache = AccessTokenCache(now: configuration.now)
    }

    /// The cached access token while it is still fresh, without waiting for the actor.
    nonisolated func cachedToken() -> String? {
        cache.cached()
    }

    /// A valid access token, exchanging a new assertion when none is cached or it is about to expire.
    nonisolated func token() async throws(FCMError) -> String {
        do {
            return try await cache.token { try await self.exchangeAssertion() }
        } catch {
            throw error as? FCMError
                ?? FCMError(
                    code: .networkFailure, message: "the token endpoint \(tokenURI) did not answer: \(error)",
                    underlying: error)
        }
    }

    /// Forgets `token` after FCM refused it (401), so the next ``token()`` exchanges a new one.
    nonisolated func invalidate(_ token: String) {
        cache.invalidate(token)
    }

    private func exchangeAssertion() async throws -> (token: String, renewAt: Date) {
        let issued = configuration.now()
        let assertion = try await sign(at: issued)
        let answer = try await OAuthTokenRequest(
            url: tokenURI,
            form: [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]
        )
        .send(with: http, timeout: configuration.requestTimeout, now: issued)
        guard answer.status == 200 else {
            throw FCMError(
                code: answer.isTransient ? .unavailable : .authenticationFailed, httpStatus: answer.status,
                status: answer.error,
                message: "the token endpoint refused the assertion of \(credentials.clientEmail): "
                    + (answer.errorDescription ?? "HTTP \(answer.status)")
                    + (answer.isTransient ? "" : "; check the service-account key file and the server clock"),
                retryAfter: answer.retryAfter)
        }
        guard let token = answer.accessToken else {
            throw FCMError(
                code: .authenticationFailed, httpStatus: answer.status,
                message: "the token endpoint's answer has no access_token")
        }
        logger.debug(
            "FCM access token obtained",
            metadata: ["account": "\(credentials.clientEmail)", "expiresIn": "\(answer.expiresIn ?? 3600)"])
        return (token, answer.renewAt(issued: issued, defaultLifetime: 3600, margin: configuration.tokenRefreshMargin))
    }

    /// Signs the assertion: RS256, `kid` = private key ID, `iss` = client e-mail, `aud` = token URI,
    /// `iat` and `exp` in whole seconds.
    private func sign(at issued: Date) async throws -> String {
        let keys: JWTKeyCollection
        if let signer {
            keys = signer
        } else {
            let key: Insecure.RSA.PrivateKey
            do {
                key = try Insecure.RSA.PrivateKey(pem: credentials.privateKey.reveal())
            } catch {
                throw FCMError(
                    code: .authenticationFailed,
                    message:
                        "the private_key of \(credentials.clientEmail) is not a PEM RSA key; download a new key file")
            }
            keys = JWTKeyCollection()
            await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
            signer = keys
        }
        // Whole seconds, as Google's libraries send them: jwt-kit writes a date's fraction, which
        // strict token endpoints refuse.
        let lifetime = min(configuration.assertionLifetime.seconds, 3600).rounded(.down)
        let issuedAt = Date(timeIntervalSince1970: issued.timeIntervalSince1970.rounded(.down))
        let claims = FCMAssertionClaims(
            iss: IssuerClaim(value: credentials.clientEmail), scope: FCMConfiguration.messagingScope,
            aud: AudienceClaim(value: tokenURI), iat: IssuedAtClaim(value: issuedAt),
            exp: ExpirationClaim(value: issuedAt.addingTimeInterval(lifetime)))
        return try await keys.sign(claims, kid: kid)
    }

    private var kid: JWKIdentifier? { credentials.privateKeyID.map { JWKIdentifier(string: $0) } }
}
