import Foundation
import HTTPTypes
import HubCore
import HubEmulators
import HubPolling
import HubSQLite
import HubServer
import HubTesting
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import NIOCore
import Prometheus
import Testing

/// A hub with two apps behind the HTTP API, as the tests drive it.
///
/// - `notes.contoso.com`: iOS / Android / web; users sign in with ES256 tokens whose key is in a
///   JWKS file; publisher key ``Harness/notesKey``.
/// - `tasks.fabrikam.com`: Android / Windows; users sign in with HS256 tokens of a shared secret;
///   publisher key ``Harness/tasksKey``.
///
/// Polling deliveries go through a ``RecordingTransport`` (so tests see every tap) that forwards
/// to the real ``PollingTransport``; the `recording` transport declares tokens `dead` gone,
/// suspends deliveries to `misconfigured…` ones (a configuration fault), answers a first attempt
/// to `flaky` with a retry, asks to retry every attempt to other `flaky…` ones and rejects those to
/// `rejected…` ones (``rejectedReason``).
struct Harness: Sendable {
    static let notes = "notes.contoso.com"
    static let tasks = "tasks.fabrikam.com"
    static let notesKey = "pk-notes-7b0e4c1d9a"
    static let tasksKey = "pk-tasks-52f1a8e3c6"
    static let adminToken = "admin-9c2d7e4f1b"
    static let suspendedReason = "403 InvalidProviderToken: check keyId, teamId and privateKey"
    static let rejectedReason = "400 BadDeviceToken: the device token is not valid for this topic"
    static let notesIssuer = "https://login.contoso.com"
    static let notesAudience = "notes-ios-client"
    static let tasksIssuer = "https://auth.fabrikam.com"
    static let tasksAudience = "tasks-api"
    static let tasksSecret = "hs256-shared-secret-for-fabrikam-tasks"

    let hub: Hub
    let polling: RecordingTransport
    let custom: RecordingTransport
    let configuration: HubServerConfiguration
    let identity: IdentityVerifier
    let signingKeys: JWTKeyCollection
    let metrics: PrometheusCollectorRegistry?
    /// What ``IdentityVerifier/loadKeys()`` threw, if anything.
    let keyLoadingError: HubError?

    init(
        maxPayloadBytes: Int = 4096, maxBodyBytes: Int = 16 * 1024, adminToken: String? = Harness.adminToken,
        subscriptionLifetime: Duration = .seconds(3600), metrics: PrometheusCollectorRegistry? = nil,
        extraIdentity: [IdentityRegistration] = [], plug: StorePlug? = nil, storeTimeout: Duration = .seconds(5),
        extraApps: [CrossDeviceApp] = [], clock: any HubClock = SystemClock(),
        storePath: String? = nil, statisticsFlushInterval: Duration = .seconds(5),
        sweepInterval: Duration = DispatcherConfiguration().sweepInterval, rateLimits: RateLimits = RateLimits(),
        maxBatchBodyBytes: Int? = nil, broadcasts: Bool = true,
        broadcastChunkSize: Int = 3, broadcastUsersPerWrite: Int = 2,
        maxEndpointsPerUser: Int? = EndpointLimit.defaultMaxPerUser
    ) async throws {
        let key = ES256PrivateKey()
        let directory = try TemporaryFolder.make("hubserver")
        let jwksFile = directory.appendingPathComponent("jwks.json")
        let (x, y) = key.publicKey.parameters!
        let jwks =
            #"{"keys":[{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"notes-1","x":"\#(x)","y":"\#(y)"}]}"#
        try Data(jwks.utf8).write(to: jwksFile)

        let apps =
            [
                CrossDeviceApp(
                    id: Self.notes, name: "Contoso Notes",
                    platforms: [
                        .ios: ["com.contoso.notes"], .android: ["com.contoso.notes"],
                        .web: ["https://notes.contoso.com"],
                    ],
                    identity: [
                        IdentityRegistration(
                            issuer: Self.notesIssuer, audiences: [Self.notesAudience],
                            keys: .jwksFile(path: jwksFile.path))
                    ] + extraIdentity,
                    publishers: [Publisher(name: "backend", key: Secret(Self.notesKey, source: "env:NOTES_KEY"))]),
                CrossDeviceApp(
                    id: Self.tasks, name: "Fabrikam Tasks",
                    platforms: [.android: ["com.fabrikam.tasks"], .windows: ["Fabrikam.Tasks_8wekyb3d8bbwe"]],
                    identity: [
                        IdentityRegistration(
                            issuer: Self.tasksIssuer, audiences: [Self.tasksAudience],
                            keys: .secret(Secret(Self.tasksSecret, source: "env:TASKS_SECRET")))
                    ],
                    publishers: [Publisher(name: "backend", key: Secret(Self.tasksKey, source: "env:TASKS_KEY"))]),
            ] + extraApps
        let signals = FeedSignals(clock: clock)
        let forward = PollingTransport(signals: signals)
        polling = RecordingTransport(id: .polling, capabilities: [.wakesInProcess, .tokenless]) {
            await forward.send($0)
        }
        custom = RecordingTransport(id: TransportID("recording")) { delivery in
            let token = delivery.endpoint.token ?? ""
            if token == "dead" { return .endpointGone(since: nil, reason: "Unregistered") }
            if token == "flaky" && delivery.delivery.attempts == 1 {
                return .retry(after: .milliseconds(200), reason: "503 ServiceUnavailable")
            }
            if token.hasPrefix("flaky-") { return .retry(after: nil, reason: "503 ServiceUnavailable: try later") }
            if token.hasPrefix("rejected") { return .rejected(reason: Harness.rejectedReason) }
            return token.hasPrefix("misconfigured") ? .suspended(reason: Harness.suspendedReason) : .accepted
        }
        var hubConfiguration = HubConfiguration(
            apps: apps, maxPayloadBytes: maxPayloadBytes, storeTimeout: storeTimeout)
        hubConfiguration.dispatcher.idleInterval = .milliseconds(50)
        hubConfiguration.dispatcher.sweepInterval = sweepInterval
        hubConfiguration.statisticsFlushInterval = statisticsFlushInterval
        hubConfiguration.broadcasts.enabled = broadcasts
        hubConfiguration.broadcasts.chunkSize = broadcastChunkSize
        // Chunks of 3 written 2 users at a time: every broadcast test publishes chunks in parts.
        hubConfiguration.broadcasts.usersPerWrite = broadcastUsersPerWrite
        hubConfiguration.maxEndpointsPerUser = maxEndpointsPerUser
        let store = try storePath.map(SQLiteStore.init(path:)) ?? SQLiteStore.inMemory()
        hub = try Hub(
            configuration: hubConfiguration,
            store: plug.map { InterceptedStore(store, $0) } ?? store,
            transports: [polling, custom],
            signals: signals, clock: clock)
        var server = HubServerConfiguration(
            adminToken: adminToken.map { Secret($0, source: "env:HUB_ADMIN_TOKEN") }, maxBodyBytes: maxBodyBytes,
            cursorKey: Array("cursor-key-for-tests-0123456789ab".utf8), sseHeartbeat: .milliseconds(300),
            maxWait: .seconds(10), subscriptionLifetime: subscriptionLifetime)
        server.rateLimits = rateLimits
        if let maxBatchBodyBytes { server.maxBatchBodyBytes = maxBatchBodyBytes }
        configuration = server
        identity = IdentityVerifier(apps: apps)
        do {
            try await identity.loadKeys()
            keyLoadingError = nil
        } catch let error as HubError {
            keyLoadingError = error
        }
        signingKeys = JWTKeyCollection()
        await signingKeys.add(ecdsa: key, kid: "notes-1")
        await signingKeys.add(hmac: HMACKey(from: Self.tasksSecret), digestAlgorithm: .sha256, kid: "tasks")
        self.metrics = metrics
    }

    /// Runs the hub's dispatcher while `test` drives the API through HummingbirdTesting; the
    /// hub runs as a service of the application, so it stops by graceful shutdown at the end.
    /// `.live` serves real HTTP/1.1 as `hub serve` does (``HTTPServerBuilder/hubHTTP1``).
    /// `connections` are the live server's limits.
    func run<Value: Sendable>(
        _ setup: TestingSetup = .router, logger: Logger? = nil, connections: ConnectionLimits = ConnectionLimits(),
        _ test: @Sendable @escaping (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        let app = Application(
            router: buildRouter(hub: hub, configuration: configuration, identity: identity, metrics: metrics),
            server: .hubHTTP1(connections: connections), services: [hub], logger: logger)
        return try await app.test(setup, test)
    }

    // MARK: Tokens

    /// A user token of `app`'s registration, with claims that can be spoiled one at a time.
    func token(
        app: String = Harness.notes, user: String, issuer: String? = nil, audience: String? = nil,
        expiresIn: TimeInterval = 600
    ) async throws -> String {
        let notes = app == Self.notes
        let claims = TestUserClaims(
            user: user, issuer: issuer ?? (notes ? Self.notesIssuer : Self.tasksIssuer),
            audience: audience ?? (notes ? Self.notesAudience : Self.tasksAudience), expiresIn: expiresIn)
        return try await signingKeys.sign(claims, kid: JWKIdentifier(string: notes ? "notes-1" : "tasks"))
    }
}

// MARK: Requests

extension TestClientProtocol {
    /// Sends a request with an optional bearer token and JSON body.
    func send(
        _ method: HTTPRequest.Method, _ uri: String, bearer: String? = nil, json: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = headers
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        if json != nil && headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }

    /// Registers the Android endpoint `id` of the user whose token is `bearer`, on the `recording`
    /// transport with push token `token` (which picks what the transport answers: `dead`, `flaky`, …).
    func registerRecording(_ id: String, token: String, bearer: String) async throws {
        let response = try await send(
            .put, "/v1/apps/\(Harness.notes)/me/endpoints/\(id)", bearer: bearer,
            json: #"{"platform":"android","appId":"com.contoso.notes","transport":"recording","token":"\#(token)"}"#)
        #expect(response.status == .created, "\(response.text)")
    }

    /// Publishes `body` for `user` of `app` with the app's publisher key.
    func publish(
        _ body: String, user: String, app: String = Harness.notes, key: String? = nil
    ) async throws -> TestResponse {
        try await send(
            .post, "/v1/apps/\(app)/users/\(user)/notifications",
            bearer: key ?? (app == Harness.notes ? Harness.notesKey : Harness.tasksKey), json: body)
    }
}

/// A minimal valid publish body.
func notification(_ id: String, title: String = "Hello", extra: String = "") -> String {
    #"{"appNotificationId":"\#(id)","payload":{"visualContent":{"title":"\#(title)","body":"Body"}}\#(extra)}"#
}

extension TestResponse {
    /// The body as a JSON object (empty when it is not one).
    var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
    }
    var text: String { String(buffer: body) }
    /// The `type` slug of a problem response.
    var problemType: String? {
        (object["type"] as? String)?.replacingOccurrences(of: "https://notificationhub.dev/problems/", with: "")
    }
    /// The `field`s of a problem's `errors`.
    var errorFields: [String] {
        (object["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
    }
}

extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func objects(_ key: String) -> [[String: Any]] { self[key] as? [[String: Any]] ?? [] }
}
