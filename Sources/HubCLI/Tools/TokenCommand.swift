import ArgumentParser
import Foundation
import HubConfig
import HubCore
import JWTKit

/// `hub token`: a development user token, signed with the app's HS256 identity secret of hub.yaml.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint a development user token (HS256) from an app's identity secret in hub.yaml.",
        discussion: """
            Prints one JSON Web Token on standard output, signed with the first identity registration \
            of --app that has `secret:` (or the one of --issuer), with that registration's issuer, its first \
            audience, the user in its user claim (sub), and an expiry --ttl from now. Devices send it as \
            `Authorization: Bearer <token>`. Apps whose identities are JWKS only get their tokens from the \
            identity provider; hub token cannot sign for them.

                TOKEN=$(hub token --app notes.contoso.com --user alice)
            """)

    @OptionGroup var options: ConfigOption
    @Option(help: "The app's ID (its domain), as in hub.yaml.") var app: String
    @Option(help: "The user the token signs in (its sub claim).") var user: String
    @Option(help: "Lifetime: a duration such as 30m, 12h or 7d, or seconds.") var ttl = "1h"
    @Option(help: "The identity registration's issuer, when the app has several with secrets.") var issuer: String?

    func run() async throws {
        let file = try options.loadOrExit()
        let registration = try Self.registration(in: file, app: app, issuer: issuer)
        guard let lifetime = DurationText.seconds(ttl), lifetime > 0 else {
            throw ValidationError("--ttl must be a duration such as 30m, 12h or 7d, not '\(ttl)'")
        }
        if let violation = Identifier.violation(in: user) {
            throw ValidationError("--user is not a user ID the hub accepts: it \(violation.message)")
        }
        guard case .secret(let secret) = registration.keys else { throw ExitCode(1) }
        print(try await Self.sign(user: user, registration: registration, secret: secret, lifetime: lifetime))
    }

    /// The HS256 registration of `app`, or an error that says why there is none.
    static func registration(in file: HubFile, app: String, issuer: String?) throws -> IdentityRegistration {
        guard let mapped = file.apps.first(where: { $0.id == app }) else {
            let known = file.apps.map(\.id).joined(separator: ", ")
            throw ValidationError("\(file.path) has no app '\(app)'; its apps: \(known.isEmpty ? "none" : known)")
        }
        let secrets = mapped.identity.filter {
            if case .secret = $0.keys { return issuer == nil || $0.issuer == issuer }
            return false
        }
        guard let registration = secrets.first else {
            if mapped.identity.isEmpty {
                throw ValidationError(
                    "\(app) has no identity registration; add one with `secret: env:NAME` (HS256) to mint tokens")
            }
            if let issuer {
                throw ValidationError("\(app) has no identity registration with issuer '\(issuer)' and a secret")
            }
            let issuers = mapped.identity.map(\.issuer).joined(separator: ", ")
            throw ValidationError(
                "\(app) accepts only JWKS-signed tokens (RS256/ES256 from \(issuers)): hub token has no private key "
                    + "to sign them; get a token from that identity provider, or add a registration with "
                    + "`secret: env:NAME` for development tokens")
        }
        guard !registration.audiences.isEmpty else {
            throw ValidationError("the identity registration of \(registration.issuer) has no audience")
        }
        return registration
    }

    static func sign(
        user: String, registration: IdentityRegistration, secret: Secret, lifetime: Int64, now: Date = Date()
    ) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret.revealBytes()), digestAlgorithm: .sha256)
        let claims = DevelopmentClaims(
            claims: [
                "iss": .string(registration.issuer), "aud": .string(registration.audiences[0]),
                registration.userClaim: .string(user), "iat": .int(Int64(now.timeIntervalSince1970)),
                "exp": .int(Int64(now.timeIntervalSince1970) + lifetime),
            ])
        return try await keys.sign(claims)
    }
}

/// The claims of a development token; the user claim's name comes from hub.yaml.
struct DevelopmentClaims: JWTPayload {
    enum Value: Encodable {
        case string(String)
        case int(Int64)
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .int(let number): try container.encode(number)
            }
        }
    }
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    var claims: [String: Value]

    init(claims: [String: Value]) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = [:] }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (key, value) in claims.sorted(by: { $0.key < $1.key }) {
            try container.encode(value, forKey: Key(stringValue: key))
        }
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Durations as hub.yaml writes them: `30s`, `15m`, `12h`, `7d`, or seconds.
enum DurationText {
    static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let seconds = Int64(text) { return seconds }
        guard let unit = text.last, let factor = units[unit], let count = Int64(text.dropLast()) else { return nil }
        return count * factor
    }
}
