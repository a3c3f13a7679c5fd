import AsyncHTTPClient
import Foundation
import HubCore
import JWTKit
import Logging
import NIOCore
import Synchronization

/// The claims of a Google service-account assertion (RFC 7523 JWT bearer grant).
struct FCMAssertionClaims: JWTPayload {
    var iss: IssuerClaim
    var scope: String
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Holds one service account's OAuth 2.0 access token: exchanges an RS256 assertion for it, reuses
/// it until shortly before it expires, and runs at most one exchange at a time — concurrent callers
/// await the same exchange.
actor FCMAccessTokenProvider {
    private struct AccessToken {
        var value: String
        /// When to stop handing it out (before its real expiry).
        var renewAt: Date
    }

    private let credentials: FCMCredentials
    private let tokenURI: String
    private let http: HTTPClient
    private let configuration: FCMConfiguration
    private let logger: Logger
    private var current: AccessToken? {
        didSet { published.withLock { $0 = current } }
    }
    private var exchange: Task<AccessToken, any Error>?
    private var signer: JWTKeyCollection?
    /// A copy of ``current`` readable without a hop onto the actor: the per-send fast path.
    private nonisolated let published = Mutex<AccessToken?>(nil)

    init(credentials: FCMCredentials, http: HTTPClient, configuration: FCMConfiguration, logger: Logger) {
        self.credentials = credentials
        self.tokenURI = configuration.tokenURI ?? credentials.tokenURI
        self.http = http
        self.configuration = configuration
        self.logger = logger
    }

    /// The cached access token while it is still fresh, without waiting for the actor.
    nonisolated func cachedToken() -> String? {
        published.withLock { token in
            guard let token, configuration.now() < token.renewAt else { return nil }
            return token.value
        }
    }

    /// A valid access token, exchanging a new assertion when none is cached or it is about to expire.
    func token() async throws(FCMError) -> String {
        if let current, configuration.now() < current.renewAt { return current.value }
        let task: Task<AccessToken, any Error>
        if let exchange {
            task = exchange
        } else {
            task = Task { try await self.exchangeAssertion() }
            exchange = task
        }
        do {
            let token = try await task.value
            if exchange == task {
                exchange = nil
                current = token
            }
            return token.value
        } catch {
            if exchange == task { exchange = nil }
            throw error as? FCMError
                ?? FCMError(
                    code: .networkFailure, message: "the token endpoint \(tokenURI) did not answer: \(error)",
                    underlying: error)
        }
    }

    /// Forgets `token` after FCM refused it (401), so the next ``token()`` exchanges a new one.
    func invalidate(_ token: String) {
        if current?.value == token { current = nil }
    }

    private func exchangeAssertion() async throws -> AccessToken {
        let issued = configuration.now()
        let assertion = try await sign(at: issued)
        var request = HTTPClientRequest(url: tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(
                string: FormEncoding.encode([
                    ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion),
                ])))
        let response = try await http.execute(request, timeout: TimeAmount(configuration.requestTimeout))
        let body = Data(try await response.body.collect(upTo: 64 * 1024).readableBytesView)
        let status = Int(response.status.code)
        guard status == 200 else {
            let refusal = try? JSONDecoder().decode(OAuthError.self, from: body)
            let retryAfter = RetryAfter.parse(response.headers.first(name: "retry-after"), now: issued)
            let transient = status == 429 || status >= 500
            throw FCMError(
                code: transient ? .unavailable : .authenticationFailed, httpStatus: status, status: refusal?.error,
                message: "the token endpoint refused the assertion of \(credentials.clientEmail): "
                    + (refusal?.errorDescription ?? "HTTP \(status)")
                    + (transient ? "" : "; check the service-account key file and the server clock"),
                retryAfter: retryAfter)
        }
        guard let granted = try? JSONDecoder().decode(OAuthGrant.self, from: body), !granted.accessToken.isEmpty
        else {
            throw FCMError(
                code: .authenticationFailed, httpStatus: status,
                message: "the token endpoint's answer has no access_token")
        }
        let lifetime = Double(max(granted.expiresIn ?? 3600, 1))
        let margin = min(configuration.tokenRefreshMargin.seconds, lifetime / 2)
        logger.debug(
            "FCM access token obtained",
            metadata: ["account": "\(credentials.clientEmail)", "expiresIn": "\(Int(lifetime))"])
        return AccessToken(value: granted.accessToken, renewAt: issued.addingTimeInterval(lifetime - margin))
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

/// A successful token response.
private struct OAuthGrant: Decodable {
    var accessToken: String
    var expiresIn: Int?

    private enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case expiresIn = "expires_in"
    }
}

/// An OAuth error response.
struct OAuthError: Decodable {
    var error: String?
    var errorDescription: String?

    private enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }
}
