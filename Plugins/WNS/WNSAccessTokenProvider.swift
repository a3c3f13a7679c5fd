import AsyncHTTPClient
import Foundation
import HubCore
import Logging
import NIOCore

/// Holds one app's WNS access token (OAuth 2.0 client credentials): the classic package-SID flow
/// or the Entra ID flow. Reuses the token until shortly before it expires, runs at most one exchange
/// at a time (concurrent callers await the same one), and forgets a token WNS refused.
actor WNSAccessTokenProvider {
    private struct AccessToken {
        var value: String
        var renewAt: Date
    }

    private let credentials: WNSCredentials
    private let http: HTTPClient
    private let configuration: WNSConfiguration
    private let logger: Logger
    private var current: AccessToken?
    private var exchange: Task<AccessToken, any Error>?

    init(credentials: WNSCredentials, http: HTTPClient, configuration: WNSConfiguration, logger: Logger) {
        self.credentials = credentials
        self.http = http
        self.configuration = configuration
        self.logger = logger
    }

    /// A valid access token, obtaining a new one when none is cached or it is about to expire.
    func token() async throws(WNSError) -> String {
        if let current, configuration.now() < current.renewAt { return current.value }
        let task: Task<AccessToken, any Error>
        if let exchange {
            task = exchange
        } else {
            task = Task { try await self.requestToken() }
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
            throw error as? WNSError
                ?? WNSError(
                    code: .networkFailure, message: "the WNS token endpoint did not answer: \(error)", underlying: error
                )
        }
    }

    /// Forgets `token` after WNS refused it (401), so the next ``token()`` gets a new one.
    func invalidate(_ token: String) {
        if current?.value == token { current = nil }
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

    private func requestToken() async throws -> AccessToken {
        let started = configuration.now()
        let (url, form, who) = grant
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: FormEncoding.encode(form)))
        let response = try await http.execute(request, timeout: TimeAmount(configuration.requestTimeout))
        let body = Data(try await response.body.collect(upTo: 64 * 1024).readableBytesView)
        let status = Int(response.status.code)
        guard status == 200 else {
            let refusal = try? JSONDecoder().decode(OAuthError.self, from: body)
            let transient = status == 429 || status >= 500
            throw WNSError(
                code: transient ? .authenticationUnavailable : .authenticationFailed,
                response: WNSResponse(
                    status: status, errorDescription: refusal?.errorDescription ?? refusal?.error,
                    retryAfter: RetryAfter.parse(response.headers.first(name: "retry-after"), now: started)),
                message: "the token endpoint refused \(who)"
                    + (transient ? "; retrying later" : "; check credentials.wns (identifier and secret)"))
        }
        guard let granted = try? JSONDecoder().decode(OAuthGrant.self, from: body), !granted.accessToken.isEmpty
        else {
            throw WNSError(code: .authenticationFailed, message: "the token endpoint's answer has no access_token")
        }
        let lifetime = Double(max(granted.expiresIn ?? 86_400, 1))
        let margin = min(configuration.tokenRefreshMargin.seconds, lifetime / 2)
        logger.debug("WNS access token obtained", metadata: ["app": "\(who)", "expiresIn": "\(Int(lifetime))"])
        return AccessToken(value: granted.accessToken, renewAt: started.addingTimeInterval(lifetime - margin))
    }
}

/// A successful token response (both flows).
private struct OAuthGrant: Decodable {
    var accessToken: String
    var expiresIn: Int?

    private enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case expiresIn = "expires_in"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decode(String.self, forKey: .accessToken)
        // Entra ID has sent `expires_in` both as a number and as a string.
        if let number = try? container.decode(Int.self, forKey: .expiresIn) {
            expiresIn = number
        } else {
            expiresIn = (try? container.decode(String.self, forKey: .expiresIn)).flatMap { Int($0) }
        }
    }
}

/// An OAuth error response.
private struct OAuthError: Decodable {
    var error: String?
    var errorDescription: String?

    private enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }
}
