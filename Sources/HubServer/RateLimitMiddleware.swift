import HTTPTypes
import HubCore
import Hummingbird
import Metrics
import NIOCore

/// Applies the ``RateLimits`` of the app in the path before the route runs (STYLE §10: a
/// cross-cutting limit as middleware). Publisher keys and the admin token are recognised here
/// (constant-time comparisons, as in `Authentication.swift`); user tokens are not verified twice:
/// their bucket is keyed by a hash of the token, and a token is known good once a request with it
/// passed the route's verification. Requests without known-good credentials from an address whose
/// `clientIP` bucket is empty get 429 before any verification; each one that fails (401) takes a token.
///
/// The `clientIP` bucket is one per address, shared by every app, by app IDs that are not
/// configured and by the console's sign-in (`POST /console/login`, whose wrong tokens count like any
/// failed credential): an address that used it up on one app cannot tell a configured app from
/// another by which one still answers. For the same reason a user token's bucket is keyed by the
/// app ID of the path as written, configured or not.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext

    let api: HubAPI
    let limiter: RateLimiter

    init(api: HubAPI) {
        self.api = api
        self.limiter = api.limiter
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let route = context.endpointPath else { return try await next(request, context) }
        if route == ConsolePaths.login && request.method == .post {
            return try await limitSignIn(request, context: context, next: next)
        }
        guard route.hasPrefix("/v1/") || route.hasPrefix("/beta/") else {
            return try await next(request, context)
        }
        let configuration = api.configuration
        let pathApp = context.parameters.get("app").flatMap { try? Identifier.decodingPercentEscapes($0) }
        let app = pathApp.flatMap { try? api.hub.app($0) }
        let appID = app?.id ?? ""
        let limits = configuration.appRateLimits[appID] ?? configuration.rateLimits
        let token = Self.bearer(request)
        var charges: [(RateLimitKind, String, RateLimit?)] = []
        var deviceKey: RateLimiter.Key?
        var known = false

        if route.hasPrefix("/v1/apps/{app}/me/") {
            if let token {
                var hasher = Hasher()
                hasher.combine(token)
                let subject = String(hasher.finalize(), radix: 36)
                deviceKey = RateLimiter.Key(kind: .deviceToken, app: pathApp ?? "", subject: subject)
                known = limiter.isVerified(deviceKey!)
                charges.append((.deviceToken, subject, limits.deviceToken))
            }
        } else if let token {
            if let app, let publisher = app.publishers.first(where: { $0.key.constantTimeEquals(token) }) {
                known = true
                charges.append((.publisherKey, publisher.name, limits.publisherKey))
                if request.method == .post, let user = context.parameters.get("userId") {
                    charges.append(
                        (.userPublishes, (try? Identifier.decodingPercentEscapes(user)) ?? user, limits.userPublishes))
                }
            } else if let admin = configuration.adminToken, !admin.isEmpty, admin.constantTimeEquals(token) {
                known = true
            }
        }

        let clientKey = clientBucket(request, context: context)
        if !known, let clientKey, let limit = limits.clientIP, let wait = limiter.hasToken(clientKey, limit: limit) {
            throw Self.limited(.clientIP, app: appID, retryAfter: wait)
        }
        for (kind, subject, limit) in charges {
            guard let limit else { continue }
            let key = RateLimiter.Key(kind: kind, app: kind == .deviceToken ? pathApp ?? "" : appID, subject: subject)
            if let wait = limiter.take(key, limit: limit) {
                throw Self.limited(kind, app: appID, retryAfter: wait)
            }
        }
        do {
            let response = try await next(request, context)
            if let deviceKey, !known { limiter.markVerified(deviceKey) }
            return response
        } catch {
            if Self.isUnauthorized(error) {
                if let clientKey, let limit = limits.clientIP { _ = limiter.take(clientKey, limit: limit) }
            } else if let deviceKey, !known {
                limiter.markVerified(deviceKey)
            }
            throw error
        }
    }

    /// `POST /console/login`: refused with 429 while the address's `clientIP` bucket (the hub-wide
    /// limit) is empty; a wrong admin token (the form again with 401) takes a token.
    private func limitSignIn(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let clientKey = clientBucket(request, context: context), let limit = api.configuration.rateLimits.clientIP
        else { return try await next(request, context) }
        if let wait = limiter.hasToken(clientKey, limit: limit) {
            throw Self.limited(.clientIP, app: "", retryAfter: wait)
        }
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            if Self.isUnauthorized(error) { _ = limiter.take(clientKey, limit: limit) }
            throw error
        }
        if response.status == .unauthorized { _ = limiter.take(clientKey, limit: limit) }
        return response
    }

    /// The `clientIP` bucket of the request's address: one for the whole hub.
    private func clientBucket(_ request: Request, context: Context) -> RateLimiter.Key? {
        clientAddress(request, context: context).map { RateLimiter.Key(kind: .clientIP, app: "", subject: $0) }
    }

    /// The client's address: the peer, or, when the peer is a trusted proxy, the last address in
    /// `X-Forwarded-For` that is not one. `nil` without a socket (in-process tests).
    private func clientAddress(_ request: Request, context: Context) -> String? {
        guard let peer = context.remoteAddress?.ipAddress else { return nil }
        let proxies = api.configuration.trustedProxies
        guard proxies.contains(peer) else { return peer }
        let hops = request.headers[values: .xForwardedFor].flatMap { $0.split(separator: ",") }
            .map { String(HTTPText.trimmed($0)) }
        return hops.last { !proxies.contains($0) && !$0.isEmpty } ?? peer
    }

    private static func bearer(_ request: Request) -> String? {
        guard let header = request.headers.value(.authorization) else { return nil }
        return HTTPText.bearerToken(header)
    }

    private static func isUnauthorized(_ error: any Error) -> Bool {
        if let problem = error as? Problem { return problem.kind.status == .unauthorized }
        return (error as? any HTTPResponseError)?.status == .unauthorized
    }

    static func limited(_ kind: RateLimitKind, app: String, retryAfter: Duration) -> Problem {
        Counter(label: "hub_rate_limited_total", dimensions: [("limit", kind.rawValue), ("app", app)]).increment()
        let seconds = max(1, Int(retryAfter.seconds.rounded(.up)))
        let what =
            switch kind {
            case .publisherKey: "this publisher key"
            case .userPublishes: "publishes to this user"
            case .deviceToken: "this user token"
            case .clientIP: "requests without valid credentials from your address"
            }
        return Problem(
            .rateLimited, "Too many requests for \(what); retry after \(seconds) s (Retry-After).",
            headers: [.retryAfter: "\(seconds)"])
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

extension HubAPI {
    /// Charges the items of a batch publish: `users.count - charged` tokens of the publisher key's
    /// bucket (``RateLimitMiddleware`` charged the batch route's request as one, `charged: 1`;
    /// it cannot tell the app of `/beta/$batch`, `charged: 0`), all or none (a 429 for the whole
    /// batch, nothing stored), then one token of `userPublishes` for each item's user (`nil`: an
    /// item refused before, not charged).
    /// - Returns: per item, the 429 of an item whose user is over `userPublishes`, or `nil`.
    /// - Throws: ``Problem`` 429 `rate-limited` when the publisher key's bucket lacks the items.
    func chargeBatch(_ request: Request, app: CrossDeviceApp, users: [String?], charged: Int = 1) throws -> [Problem?] {
        let limits = configuration.appRateLimits[app.id] ?? configuration.rateLimits
        let token = request.headers.value(.authorization).flatMap { HTTPText.bearerToken($0) }
        if users.count > charged, let limit = limits.publisherKey, let token,
            let publisher = app.publishers.first(where: { $0.key.constantTimeEquals(token) }),
            let wait = limiter.take(
                RateLimiter.Key(kind: .publisherKey, app: app.id, subject: publisher.name), limit: limit,
                count: users.count - charged)
        {
            throw RateLimitMiddleware.limited(.publisherKey, app: app.id, retryAfter: wait)
        }
        guard let limit = limits.userPublishes else { return users.map { _ in nil } }
        return users.map { user in
            guard let user else { return nil }
            guard
                let wait = limiter.take(RateLimiter.Key(kind: .userPublishes, app: app.id, subject: user), limit: limit)
            else { return nil }
            return RateLimitMiddleware.limited(.userPublishes, app: app.id, retryAfter: wait)
        }
    }
}
