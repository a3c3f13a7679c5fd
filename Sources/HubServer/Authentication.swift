import Foundation
import HTTPTypes
import HubCore
import Hummingbird

// The three kinds of callers: publishers (an app server, with a publisher key of the app),
// devices (a user, with a token of one of the app's identity registrations) and admins.
// Keys and tokens are compared in constant time and never logged or echoed.

extension HubAPI {
    /// The bearer token of the request.
    /// - Throws: ``Problem`` 401 when there is none.
    func bearerToken(_ request: Request, expecting what: String) throws -> String {
        guard let header = request.headers.value(.authorization) else {
            throw Problem.unauthorized("Send 'Authorization: Bearer <\(what)>'.")
        }
        guard let token = HTTPText.bearerToken(header) else {
            throw Problem.unauthorized("Use the Bearer scheme: 'Authorization: Bearer <\(what)>'.")
        }
        return token
    }

    /// Checks that the request carries a publisher key of `app`. Every key is compared, in
    /// constant time, so the answer time tells nothing about which key came close.
    func authenticatePublisher(_ request: Request, app: CrossDeviceApp) throws {
        let token = try bearerToken(request, expecting: "publisher key")
        guard Self.isPublisherKey(token, of: app) else { throw Self.notPublisherKey(of: app.id) }
    }

    /// Accepts a publisher key of `app` or the admin token (operators read what publishers read):
    /// the receipts and the statistics history. Both are compared in constant time.
    func authenticatePublisherOrAdmin(_ request: Request, app: CrossDeviceApp) throws {
        let token = try bearerToken(request, expecting: "publisher key or admin token")
        guard Self.isPublisherKey(token, of: app) || isAdminToken(token) else {
            throw Self.neitherPublisherNorAdmin(of: app.id)
        }
    }

    /// Which callers a route with an `{app}` path parameter takes, for ``pathApp(_:context:caller:)``.
    enum AppCaller {
        /// A publisher key of the app.
        case publisher
        /// A publisher key of the app or the admin token.
        case publisherOrAdmin
    }

    /// The configured app the path names. For an app ID that is not configured, the answer is the
    /// one a configured app gives a caller without valid credentials (401, same detail), so that
    /// app IDs cannot be probed; only the admin token, where the route takes it, learns that
    /// there is no such app (404). The caller still authenticates for a configured app.
    func pathApp(_ request: Request, context: HubRequestContext, caller: AppCaller) throws -> CrossDeviceApp {
        let id = try context.pathParameter("app")
        if let app = try? hub.app(id) { return app }
        switch caller {
        case .publisher:
            _ = try bearerToken(request, expecting: "publisher key")
            throw Self.notPublisherKey(of: id)
        case .publisherOrAdmin:
            let token = try bearerToken(request, expecting: "publisher key or admin token")
            guard isAdminToken(token) else { throw Self.neitherPublisherNorAdmin(of: id) }
            return try hub.app(id)
        }
    }

    private func isAdminToken(_ token: String) -> Bool {
        configuration.adminToken.map { !$0.isEmpty && $0.constantTimeEquals(token) } ?? false
    }

    private static func notPublisherKey(of app: String) -> Problem {
        Problem.unauthorized("The publisher key is not one of the app '\(app)'.")
    }

    private static func neitherPublisherNorAdmin(of app: String) -> Problem {
        Problem.unauthorized("The token is neither a publisher key of the app '\(app)' nor the admin token.")
    }

    /// The apps whose publisher keys include the request's bearer token (Graph's publish names
    /// its app only in `X-UNS-ID`, which is read after this). Every key of every app is compared.
    func authenticatePublisherOfAnyApp(_ request: Request) throws -> Set<String> {
        let token = try bearerToken(request, expecting: "publisher key")
        let apps = Set(hub.configuration.apps.filter { Self.isPublisherKey(token, of: $0) }.map(\.id))
        guard !apps.isEmpty else {
            throw Problem.unauthorized("The publisher key is not one of any app of this hub.")
        }
        return apps
    }

    private static func isPublisherKey(_ token: String, of app: CrossDeviceApp) -> Bool {
        app.publishers.reduce(false) { found, publisher in publisher.key.constantTimeEquals(token) || found }
    }

    /// The app named by the path and the user its token signs in. The token is verified before
    /// the app is looked up: an app ID that is not configured has no identity registration, so
    /// its answer is the 401 a configured app gives a token it does not accept.
    func authenticateDevice(
        _ request: Request, context: HubRequestContext
    ) async throws -> (
        app: CrossDeviceApp, user: String
    ) {
        let id = try context.pathParameter("app")
        let token = try bearerToken(request, expecting: "user token")
        let user = try await identity.verify(token: token, app: id)
        return (try hub.app(id), user)
    }

    /// Checks the admin token; without one configured, admin routes are off (403).
    func authenticateAdmin(_ request: Request) throws {
        guard let adminToken = configuration.adminToken, !adminToken.isEmpty else {
            throw Problem(
                .forbidden, "The admin routes are disabled: set server.adminToken in hub.yaml to enable them.")
        }
        let token = try bearerToken(request, expecting: "admin token")
        guard adminToken.constantTimeEquals(token) else {
            throw Problem.unauthorized("The admin token is not valid.")
        }
    }

    /// The endpoint a device names in `X-Hub-Endpoint`, if any.
    func callerEndpoint(_ request: Request) throws -> String? {
        guard let value = request.headers.value(.hubEndpoint).map({ String(HTTPText.trimmed($0[...])) }), !value.isEmpty
        else { return nil }
        guard value.utf8.count <= 128,
            value.unicodeScalars.allSatisfy({ Self.endpointCharacters.contains($0) })
        else {
            throw Problem(
                .invalidRequest, "X-Hub-Endpoint must be an endpoint ID: 1–128 letters, digits, '.', '_' or '-'.",
                errors: [.init(field: "X-Hub-Endpoint", message: "is not an endpoint ID")])
        }
        return value
    }

    private static let endpointCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".unicodeScalars)
}

extension HubRequestContext {
    /// A path parameter, percent-decoded (user IDs such as `auth0|42` arrive encoded) and checked
    /// against the ``Identifier`` grammar.
    /// - Throws: ``Problem`` 400 `invalid-request` naming the parameter when the segment has a
    ///   malformed escape, is not UTF-8 once decoded, or is not an identifier.
    func pathParameter(_ name: String) throws -> String {
        do {
            return try Identifier.decodingPercentEscapes(try parameters.require(name))
        } catch let violation as Identifier.Violation {
            throw Problem(
                .invalidRequest, "The path segment {\(name)} \(violation.message).",
                errors: [.init(field: name, message: violation.message)])
        }
    }
}

extension HTTPField.Name {
    static let hubEndpoint = HTTPField.Name("X-Hub-Endpoint")!
    /// The caller's app icon badge after a state change (apps with `delivery.badge: unread`).
    static let hubBadge = HTTPField.Name("X-Hub-Badge")!
    static let unsID = HTTPField.Name("X-UNS-ID")!
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
}
