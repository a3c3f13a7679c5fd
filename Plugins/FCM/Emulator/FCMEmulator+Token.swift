import Foundation
import HubEmulatorKit
import JWTKit

/// The claims of a Google service-account assertion, as the token endpoint reads them.
struct ServiceAccountAssertionClaims: JWTPayload {
    var iss: IssuerClaim
    var scope: String?
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    /// Times are checked by the emulator against its own clock.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension FCMEmulator {
    /// Scopes that grant FCM sends (firebase-admin asks for `cloud-platform`).
    static let sendingScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform",
    ]
    /// The audience Google's auth libraries (google-auth, under firebase-admin) put in every
    /// service-account assertion, whatever `token_uri` they send it to: Google's token endpoint.
    static let googleTokenAudience = "https://oauth2.googleapis.com/token"
    /// Tolerated difference between the sender's clock and the emulator's.
    static let allowedSkew: TimeInterval = 60

    /// `POST /token`: the OAuth 2.0 JWT-bearer grant.
    func tokenEndpoint(_ request: EmulatorRequest) -> EmulatorReply {
        guard request.method == "POST" else {
            return .now(EmulatorText.oauthError(405, "invalid_request", "Use POST."))
        }
        guard request.header("content-type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true
        else {
            return .now(EmulatorText.oauthError(400, "invalid_request", "Send the grant form-encoded."))
        }
        let form = EmulatorText.parseForm(request.body)
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return .now(
                EmulatorText.oauthError(
                    400, "unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")"))
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return .now(EmulatorText.oauthError(400, "invalid_request", "Missing required parameter: assertion"))
        }
        return .later { await self.exchange(assertion) }
    }

    private func exchange(_ assertion: String) async -> EmulatorResponse {
        switch await check(assertion) {
        case .failure(let problem):
            state.withLock { $0.rejectedAssertions.append(problem.description) }
            return EmulatorText.oauthError(400, problem.error, problem.description)
        case .success(let project):
            let token = issueAccessToken(project: project)
            let lifetime = state.withLock { state in
                state.tokenExchanges += 1
                return state.accessTokenLifetime
            }
            return .json(200, #"{"access_token":"\#(token)","expires_in":\#(lifetime),"token_type":"Bearer"}"#)
        }
    }

    struct AssertionProblem: Error, CustomStringConvertible {
        var error: String
        var description: String
        init(_ description: String, error: String = "invalid_grant") {
            self.error = error
            self.description = description
        }
    }

    /// Verifies an assertion. - Returns: the project of the account that signed it.
    func check(_ assertion: String) async -> Result<String, AssertionProblem> {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URLDecode(parts[0]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any]
        else { return .failure(AssertionProblem("Invalid JWT: the assertion is not a compact JWS.")) }
        guard header["alg"] as? String == "RS256" else {
            return .failure(AssertionProblem("Invalid JWT: alg must be RS256."))
        }
        // NumericDate in whole seconds, as Google's own libraries send it; strict token endpoints
        // refuse a fraction (jwt-kit's default date encoding writes one).
        if let payloadBytes = Self.base64URLDecode(parts[1]),
            let payload = try? JSONSerialization.jsonObject(with: payloadBytes) as? [String: Any]
        {
            for name in ["iat", "exp"] {
                if let number = payload[name] as? NSNumber, number.doubleValue != number.doubleValue.rounded(.down) {
                    return .failure(
                        AssertionProblem("Invalid JWT: \(name) must be whole seconds since 1970, not \(number)."))
                }
            }
        }
        let unverified: ServiceAccountAssertionClaims
        do {
            unverified = try await JWTKeyCollection().unverified(assertion, as: ServiceAccountAssertionClaims.self)
        } catch {
            return .failure(AssertionProblem("Invalid JWT: claims iss, aud, iat and exp are required."))
        }
        guard let account = state.withLock({ $0.accounts[unverified.iss.value] }) else {
            return .failure(AssertionProblem("Invalid grant: account not found"))
        }
        if let kid = header["kid"] as? String, kid != account.privateKeyID {
            return .failure(AssertionProblem("Invalid JWT Signature. (unknown kid '\(kid)')"))
        }
        let claims: ServiceAccountAssertionClaims
        do {
            claims = try await account.keys.verify(assertion, as: ServiceAccountAssertionClaims.self)
        } catch {
            return .failure(AssertionProblem("Invalid JWT Signature."))
        }
        guard claims.aud.value.contains(tokenURI) || claims.aud.value.contains(Self.googleTokenAudience) else {
            return .failure(
                AssertionProblem(
                    "Invalid JWT: Failed audience check. (aud must be \(tokenURI) or \(Self.googleTokenAudience))"))
        }
        let scopes = Set((claims.scope ?? "").split(separator: " ").map(String.init))
        guard !scopes.isDisjoint(with: Self.sendingScopes) else {
            return .failure(
                AssertionProblem("No FCM scope requested (got '\(claims.scope ?? "")').", error: "invalid_scope"))
        }
        let issued = claims.iat.value
        let expires = claims.exp.value
        let current = now()
        guard expires.timeIntervalSince(issued) <= 3600, expires > issued,
            issued <= current.addingTimeInterval(Self.allowedSkew),
            expires >= current.addingTimeInterval(-Self.allowedSkew)
        else {
            return .failure(
                AssertionProblem(
                    "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                        + "Check your iat and exp values in the JWT claim."))
        }
        return .success(account.projectID)
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

}
