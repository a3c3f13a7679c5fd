import AsyncHTTPClient
import Foundation
import HubCore
import HubHTTPSupport
import Logging

/// Holds one app's WNS access token (OAuth 2.0 client credentials): the classic package-SID flow
/// or the Entra ID flow. Reuse until shortly before expiry, single flight and forgetting a token WNS
/// refused are an `AccessTokenCache`'s.
final class WNSAccessTokenProvider: Sendable {
    private let credentials: WNSCredentials
    private let http: HTTPClient
    private let configuration: WNSConfiguration
    private let logger: Logger
    private let cache: AccessTokenCache<String>

    init(credentials: WNSCredentials, http: HTTPClient, configuration: WNSConfiguration, logger: Logger) {
        self.credentials = credentials
        self.http = http
        self.configuration = configuration
        self.logger = logger
        self.cache = AccessTokenCache(now: configuration.now)
    }

    /// A valid access token, obtaining a new one when none is cached or it is about to expire.
    func token() async throws(WNSError) -> String {
        do {
            return try await cache.token { [self] in try await requestToken() }
        } catch {
            throw error as? WNSError
                ?? WNSError(
                    code: .networkFailure, message: "the WNS token endpoint did not answer: \(error)", underlying: error
                )
        }
    }

    /// Forgets `token` after WNS refused it (401), so the next ``token()`` gets a new one.
    func invalidate(_ token: String) {
        cache.invalidate(token)
    }

    /// The token endpoint and form of this app's flow.
    private var grant: (url: String, form: [(String, String)], who: String) {
        switch credentials.authentication {
        case .packageSID(let sid, let secret):
            return (
                configuration.classicTokenURL,
                [
                    ("grant_type", "client_credentials"), ("client_id", sid), ("client_secret", secret.reveal()),
                    ("scope", WNSConfiguration.classicScope),
                ], "package SID \(sid)"
            )
        case .entra(let tenantID, let clientID, let secret):
            var base = configuration.entraAuthority
            while base.hasSuffix("/") { base.removeLast() }
            let tenant = tenantID.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "."]))
            return (
                "\(base)/\(tenant ?? tenantID)/oauth2/v2.0/token",
                [
                    ("grant_type", "client_credentials"), ("client_id", clientID),
                    ("client_secret", secret.reveal()), ("scope", WNSConfiguration.entraScope),
                ], "Entra ID app \(clientID) of tenant \(tenantID)"
            )
        }
    }

    private func requestToken() async throws -> (token: String, renewAt: Date) {
        let started = configuration.now()
        let (url, form, who) = grant
        let answer = try await OAuthTokenRequest(url: url, form: form)
            .send(with: http, timeout: configuration.requestTimeout, now: started)
        guard answer.status == 200 else {
            throw WNSError(
                code: answer.isTransient ? .authenticationUnavailable : .authenticationFailed,
                response: WNSResponse(
                    status: answer.status, errorDescription: answer.errorDescription ?? answer.error,
                    retryAfter: answer.retryAfter),
                message: "the token endpoint refused \(who)"
                    + (answer.isTransient ? "; retrying later" : "; check credentials.wns (identifier and secret)"))
        }
        guard let token = answer.accessToken else {
            throw WNSError(code: .authenticationFailed, message: "the token endpoint's answer has no access_token")
        }
        logger.debug(
            "WNS access token obtained", metadata: ["app": "\(who)", "expiresIn": "\(answer.expiresIn ?? 86_400)"])
        return (
            token, answer.renewAt(issued: started, defaultLifetime: 86_400, margin: configuration.tokenRefreshMargin)
        )
    }
}
