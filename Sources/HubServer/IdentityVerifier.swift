public import AsyncHTTPClient
public import Foundation
public import HubCore
import JWTKit
import NIOCore
import Synchronization

/// Verifies the user tokens devices send, against the identity registrations of each app.
///
/// A token is accepted for app `A` when one of `A`'s registrations has the token's `iss` as its
/// issuer, the signature verifies with that registration's keys (RS256 / ES256 / PS256 … from
/// its JWKS file or URL; HS256 with its shared secret), `aud` names one of its audiences, and
/// `exp` (required) and `nbf` hold with 60 seconds of leeway. `exp`, `nbf` and `iat` must be
/// numbers when present, the header must not name critical extensions (`crit`), and every segment
/// must be canonical base64url without padding. The user is the registration's user claim (`sub`
/// unless configured), which must be an ``Identifier`` (otherwise 401). Registrations are per app,
/// so a token for one app never opens another; an HS256 secret shorter than 32 bytes is not loaded.
///
/// ```swift
/// let identity = IdentityVerifier(apps: configuration.apps, httpClient: .shared)
/// try await identity.loadKeys()   // read JWKS files, fetch JWKS URLs, add HS256 secrets
/// ```
public final class IdentityVerifier: Sendable {
    /// One registration with its loaded keys.
    private struct Entry: Sendable {
        let registration: IdentityRegistration
        let keys: JWTKeyCollection
        /// The key IDs of a JWKS; a token naming another one makes a JWKS URL refetch.
        let keyIDs: Set<String>
        let loadedAt: Date
    }

    private let registrations: [String: [IdentityRegistration]]
    private let httpClient: HTTPClient?
    private let now: @Sendable () -> Date
    /// App ID → loaded registrations; `nil` until ``loadKeys()`` ran.
    private let entries = Mutex<[String: [Entry]]?>(nil)
    /// When loading a registration's keys last failed, to retry at most every ``refetchInterval``.
    private let failures = Mutex<[IdentityRegistration: Date]>([:])
    /// Tokens verified recently (``VerifiedTokens``): forgotten whenever keys are (re)loaded.
    private let verified = Mutex(VerifiedTokens())
    /// How many signatures were checked (a token answered from ``verified`` is not): for tests.
    private let signatureChecks = Atomic<Int>(0)
    /// The clock skew tolerated on `exp` and `nbf`.
    static let leeway: TimeInterval = 60
    /// The least time between two fetches of one JWKS URL prompted by an unknown key ID.
    static let refetchInterval: TimeInterval = 60

    /// - Parameters:
    ///   - apps: the configured apps; their `identity` registrations are used.
    ///   - httpClient: fetches JWKS URLs; `HTTPClient.shared` when `nil`.
    ///   - now: the clock for `exp` / `nbf`; tests inject their own.
    public init(
        apps: [CrossDeviceApp], httpClient: HTTPClient? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.registrations = Dictionary(apps.map { ($0.id, $0.identity) }, uniquingKeysWith: { first, _ in first })
        self.httpClient = httpClient
        self.now = now
    }

    /// Loads the keys of every registration: reads JWKS files, fetches JWKS URLs and adds HS256
    /// secrets. Call it at start (and again to pick up rotated keys); the first verification
    /// calls it if nobody did.
    ///
    /// - Throws: a ``HubError`` (`not-configured`) naming every registration whose keys could
    ///   not be loaded. The others are loaded and usable all the same.
    public func loadKeys() async throws {
        var loaded: [String: [Entry]] = [:]
        var problems: [String] = []
        for (app, registrations) in registrations {
            for registration in registrations {
                do {
                    loaded[app, default: []].append(try await load(registration))
                    failures.withLock { $0[registration] = nil }
                } catch {
                    problems.append("app '\(app)', issuer '\(registration.issuer)': \(error)")
                    let failedAt = now()
                    failures.withLock { $0[registration] = failedAt }
                }
            }
        }
        entries.withLock { $0 = loaded }
        verified.withLock { $0.removeAll() }
        if !problems.isEmpty {
            throw HubError(
                .notConfigured,
                "Could not load the keys of \(problems.count) identity registration(s): "
                    + problems.joined(separator: "; "))
        }
    }

    private func load(_ registration: IdentityRegistration) async throws -> Entry {
        let keys = JWTKeyCollection()
        var keyIDs: Set<String> = []
        switch registration.keys {
        case .jwksFile(let path):
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw HubError(.notConfigured, "cannot read the JWKS file \(path)")
            }
            keyIDs = try await add(jwks: data, to: keys)
        case .jwksURL(let url):
            keyIDs = try await add(jwks: try await fetch(url), to: keys)
        case .secret(let secret):
            // Checked before the key is made: JWTKit asserts on a key shorter than the hash.
            if let problem = SecretStrength.keyProblem(secret) {
                throw HubError(.notConfigured, "the HS256 secret (\(secret.source)) \(problem)")
            }
            await keys.add(hmac: HMACKey(from: secret.revealBytes()), digestAlgorithm: .sha256)
        }
        return Entry(registration: registration, keys: keys, keyIDs: keyIDs, loadedAt: now())
    }

    private func add(jwks data: Data, to keys: JWTKeyCollection) async throws -> Set<String> {
        let jwks: JWKS
        do {
            jwks = try JSONDecoder().decode(JWKS.self, from: data)
        } catch {
            throw HubError(.notConfigured, "the JWKS is not a JSON Web Key Set ({\"keys\": [...]})")
        }
        try await keys.add(jwks: jwks)
        return Set(jwks.keys.compactMap { $0.keyIdentifier?.string })
    }

    private func fetch(_ url: String) async throws -> Data {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await (httpClient ?? .shared).execute(request, timeout: .seconds(10))
        guard response.status == .ok else {
            throw HubError(.unavailable, "GET \(url) answered \(response.status.code)")
        }
        let body = try await response.body.collect(upTo: 1 << 20)
        return Data(body.readableBytesView)
    }

    // MARK: Verification

    /// The user a token signs in to `app`.
    /// - Throws: ``Problem`` 401 saying why the token is refused (never echoing it), or 503 when
    ///   the keys of the token's issuer could not be loaded.
    func verify(token: String, app: String) async throws -> String {
        if entries.withLock({ $0 == nil }) { try? await loadKeys() }
        let key = VerifiedTokens.Key(app: app, token: token)
        let current = now().timeIntervalSince1970
        if let user = verified.withLock({ $0.user(key, at: current) }) { return user }
        let parts = try TokenParts(token)
        guard let issuer = parts.claims["iss"].flatMap(\.stringValue) else {
            throw Problem.unauthorized("The bearer token has no 'iss' claim.")
        }
        let configured = (registrations[app] ?? []).filter { $0.issuer == issuer }
        guard !configured.isEmpty else {
            throw Problem.unauthorized("The app '\(app)' does not accept tokens from issuer '\(issuer.prefix(200))'.")
        }
        var candidates = (entries.withLock { $0?[app] } ?? []).filter { $0.registration.issuer == issuer }
        if candidates.count < configured.count {
            candidates += await retryUnloaded(configured, loaded: candidates, app: app)
        }
        guard !candidates.isEmpty else {
            throw Problem(
                .unavailable,
                "The keys of issuer '\(issuer.prefix(200))' could not be loaded (see the hub's log); retry later.")
        }
        var reason = "The bearer token's signature does not verify with the keys of issuer '\(issuer.prefix(200))'."
        for var entry in candidates {
            guard Self.allows(parts.algorithm, for: entry.registration.keys) else {
                reason = "The bearer token's algorithm '\(parts.algorithm.prefix(20))' is not accepted for this issuer."
                continue
            }
            if let kid = parts.keyID, !entry.keyIDs.contains(kid), case .jwksURL = entry.registration.keys,
                now().timeIntervalSince(entry.loadedAt) > Self.refetchInterval
            {
                entry = await refresh(entry, app: app)
            }
            signatureChecks.add(1, ordering: .relaxed)
            do {
                _ = try await entry.keys.verify(token, as: IdentityClaims.self, iteratingKeys: true)
            } catch {
                continue
            }
            let user = try check(parts.claims, against: entry.registration)
            if case .number(let expiry) = parts.claims["exp"] {
                verified.withLock { $0.insert(key, user: user, acceptedUntil: expiry + Self.leeway) }
            }
            return user
        }
        throw Problem.unauthorized(reason)
    }

    /// How many token signatures this verifier checked (a token it verified before and still
    /// accepts is answered without one), and how many tokens it remembers: for tests.
    var verificationCounts: (signatures: Int, remembered: Int) {
        (signatureChecks.load(ordering: .relaxed), verified.withLock { $0.count })
    }

    /// Loads registrations whose keys failed to load before, at most once per ``refetchInterval`` each.
    private func retryUnloaded(_ configured: [IdentityRegistration], loaded: [Entry], app: String) async -> [Entry] {
        var fresh: [Entry] = []
        for registration in configured where !loaded.contains(where: { $0.registration == registration }) {
            let current = now()
            let due = failures.withLock { failures in
                guard current.timeIntervalSince(failures[registration] ?? .distantPast) > Self.refetchInterval
                else { return false }
                failures[registration] = current
                return true
            }
            guard due, let entry = try? await load(registration) else { continue }
            failures.withLock { $0[registration] = nil }
            entries.withLock { $0?[app, default: []].append(entry) }
            fresh.append(entry)
        }
        return fresh
    }

    /// Refetches a JWKS URL whose keys may have rotated, keeping the old keys if that fails.
    private func refresh(_ entry: Entry, app: String) async -> Entry {
        guard let fresh = try? await load(entry.registration) else { return entry }
        entries.withLock { entries in
            guard var list = entries?[app],
                let index = list.firstIndex(where: { $0.registration == entry.registration })
            else { return }
            list[index] = fresh
            entries?[app] = list
        }
        verified.withLock { $0.removeAll() }
        return fresh
    }

    private func check(_ claims: [String: JSONValue], against registration: IdentityRegistration) throws -> String {
        let audiences: [String] =
            switch claims["aud"] {
            case .string(let audience): [audience]
            case .array(let items): items.compactMap(\.stringValue)
            default: []
            }
        guard audiences.contains(where: registration.audiences.contains) else {
            throw Problem.unauthorized("The bearer token is not meant for this app (its 'aud' is not accepted).")
        }
        // The time claims are NumericDate (RFC 7519 §2): a number of seconds. Any other type is
        // refused, never skipped, so that a string 'nbf' cannot pass as no 'nbf' at all.
        for name in ["exp", "nbf", "iat"] {
            guard let value = claims[name] else { continue }
            guard case .number = value else {
                throw Problem.unauthorized(
                    "The bearer token's '\(name)' claim is not a number; it must be seconds since 1970-01-01 (NumericDate)."
                )
            }
        }
        let current = now().timeIntervalSince1970
        guard case .number(let expiry) = claims["exp"] else {
            throw Problem.unauthorized("The bearer token has no 'exp' claim; tokens must expire.")
        }
        guard current < expiry + Self.leeway else {
            throw Problem.unauthorized("The bearer token has expired; get a new one.")
        }
        if case .number(let notBefore) = claims["nbf"], current < notBefore - Self.leeway {
            throw Problem.unauthorized("The bearer token is not valid yet ('nbf' is in the future).")
        }
        guard let user = claims[registration.userClaim]?.stringValue else {
            throw Problem.unauthorized(
                "The bearer token has no usable '\(registration.userClaim)' claim naming the user.")
        }
        if let violation = Identifier.violation(in: user) {
            throw Problem.unauthorized(
                "The bearer token's '\(registration.userClaim)' claim is not a user ID this hub accepts: it \(violation.message)."
            )
        }
        return user
    }

    private static let asymmetric: Set<String> = [
        "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
    ]

    /// JWKS registrations take only asymmetric algorithms and secrets only HS256, so a public key
    /// can never be used as an HMAC secret.
    private static func allows(_ algorithm: String, for keys: IdentityRegistration.KeySource) -> Bool {
        switch keys {
        case .jwksFile, .jwksURL: asymmetric.contains(algorithm)
        case .secret: algorithm == "HS256"
        }
    }
}

/// A token's header fields and claims, read before verification only to pick the registration.
///
/// The token must be a compact JWS whose three segments are canonical base64url without padding
/// (RFC 7515 §2: one encoding per value, so a token cannot be varied without changing its bytes
/// under the signature), and whose header names no critical extension (`crit`, RFC 7515 §4.1.11:
/// this hub understands none, so it must refuse any).
private struct TokenParts {
    var algorithm: String
    var keyID: String?
    var claims: [String: JSONValue]

    /// - Throws: ``Problem`` 401 saying what is wrong with the token (never echoing it).
    init(_ token: String) throws {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= 16 * 1024, segments.count == 3,
            let header = Self.object(segments[0]), let claims = Self.object(segments[1]),
            let algorithm = header["alg"]?.stringValue
        else { throw Problem.unauthorized("The bearer token is not a JSON Web Token.") }
        guard Self.isCanonical(segments[2]) else {
            throw Problem.unauthorized(
                "The bearer token's signature is not base64url without padding ('=') in its one canonical form.")
        }
        if header["crit"] != nil {
            throw Problem.unauthorized(
                "The bearer token's header lists critical extensions ('crit') that this hub does not understand.")
        }
        self.algorithm = algorithm
        self.keyID = header["kid"]?.stringValue
        self.claims = claims
    }

    /// Whether `segment` is base64url without padding and the one encoding of its bytes (no
    /// stray bits in its last character, no length that no byte string encodes to).
    private static func isCanonical(_ segment: Substring) -> Bool {
        guard let bytes = Base64URL.decode(String(segment)) else { return false }
        return Base64URL.encode(bytes) == segment
    }

    /// A segment's JSON object. Its bytes must be UTF-8: a decoder that repaired them would let
    /// two different signed claims name the same user.
    private static func object(_ segment: Substring) -> [String: JSONValue]? {
        guard isCanonical(segment), let bytes = Base64URL.decode(String(segment)),
            String(validating: bytes, as: UTF8.self) != nil,
            case .object(let object) = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        else { return nil }
        return object
    }
}

/// The verified claims; checked against the registration by ``IdentityVerifier`` itself.
private struct IdentityClaims: JWTPayload {
    var claims: [String: JSONValue]

    init(from decoder: any Decoder) throws {
        claims = try [String: JSONValue](from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        try claims.encode(to: encoder)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}
