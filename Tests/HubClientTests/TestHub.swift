import Foundation
import HubCore
import HubEmulators
import HubPolling
import HubSQLite
import HubServer
import HubTesting
import Hummingbird
import JWTKit
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// This file speaks HubCore and HubServer; the client tests speak HubClient only. Both modules
// name types `UserNotification`, `Endpoint`, `Platform`…, so no file imports both, and this one
// hands out plain values (URLs, strings, JSON).

/// A real hub listening on 127.0.0.1 (a port the system picks) for the client tests: the app
/// `notes.contoso.com` with iOS and Android IDs, HS256 user tokens, polling and a recording `apns`
/// transport, the dispatcher checking its outbox every 50 ms.
final class TestHub: Sendable {
    static let app = "notes.contoso.com"
    static let iosAppID = "com.contoso.notes"
    static let issuer = "https://login.contoso.com"
    static let audience = "contoso-notes"
    static let userSecret = "user-token-secret-for-client-tests"
    static let publisherKey = "pk-client-tests-3f9a2c7d"

    let baseURL: URL
    /// Every delivery to `apns` endpoints (they are accepted without leaving the process).
    let apns: RecordingTransport
    /// The tokens of the `apns` endpoints tapped so far, in order.
    var apnsTokensTapped: [String] { apns.deliveries.compactMap(\.endpoint.token) }
    private let signingKeys: JWTKeyCollection
    /// Without a URL cache, like the client's sessions (see `HubClient.uncachedConfiguration()`).
    private let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()

    private init(baseURL: URL, apns: RecordingTransport, signingKeys: JWTKeyCollection) {
        self.baseURL = baseURL
        self.apns = apns
        self.signingKeys = signingKeys
    }

    /// Runs `body` against a fresh hub (in-memory SQLite), then shuts the hub down gracefully.
    /// - Parameter badges: whether the app shows the hub's badge (`delivery.badge: unread`).
    static func run<Value: Sendable>(
        sseHeartbeat: Duration = .seconds(1), badges: Bool = false,
        _ body: @Sendable (TestHub) async throws -> Value
    ) async throws -> Value {
        var apps = [
            CrossDeviceApp(
                id: app, name: "Contoso Notes",
                platforms: [.ios: [iosAppID], .android: ["com.contoso.notes"]],
                identity: [
                    IdentityRegistration(
                        issuer: issuer, audiences: [audience], keys: .secret(Secret(userSecret, source: "test")))
                ],
                publishers: [Publisher(name: "backend", key: Secret(publisherKey, source: "test"))])
        ]
        apps[0].delivery.badge = badges ? .unread : nil
        let signals = FeedSignals()
        let apns = RecordingTransport(
            id: TransportID("apns"), platforms: [.ios], endpointAttributes: ["environment"])
        var configuration = HubConfiguration(apps: apps)
        configuration.dispatcher.idleInterval = .milliseconds(50)
        let hub = try Hub(
            configuration: configuration, store: try SQLiteStore.inMemory(),
            transports: [PollingTransport(signals: signals), apns], signals: signals, logger: Logger(label: "test-hub"))
        let identity = IdentityVerifier(apps: apps)
        try await identity.loadKeys()
        let server = HubServerConfiguration(
            host: "127.0.0.1", port: 0, cursorKey: Array("client-tests-cursor-key-0123456789".utf8),
            sseHeartbeat: sseHeartbeat, maxWait: .seconds(10))
        let port = PortBox()
        let application = Application(
            router: buildRouter(hub: hub, configuration: server, identity: identity, metrics: nil),
            // The hub's own server, as `hub serve` runs it: long-polls and event streams park in it.
            server: .hubHTTP1(connections: ConnectionLimits()),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.set(channel.localAddress?.port ?? 0) },
            logger: Logger(label: "test-hub-http"))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [hub, application], logger: Logger(label: "test-hub")))
        let signingKeys = JWTKeyCollection()
        await signingKeys.add(hmac: HMACKey(from: userSecret), digestAlgorithm: .sha256)

        return try await withThrowingTaskGroup(of: Value?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            let listening = try await port.wait()
            let testHub = TestHub(
                baseURL: URL(string: "http://127.0.0.1:\(listening)")!, apns: apns, signingKeys: signingKeys)
            let result: Result<Value, any Error>
            do {
                result = .success(try await body(testHub))
            } catch {
                result = .failure(error)
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return try result.get()
        }
    }

    // MARK: Users

    /// A user token for `user`; `expiresIn` below −60 s makes one the hub refuses as expired.
    func token(user: String, expiresIn: TimeInterval = 600) async throws -> String {
        try await signingKeys.sign(
            TestUserClaims(user: user, issuer: Self.issuer, audience: Self.audience, expiresIn: expiresIn))
    }

    /// A well-formed token signed with the wrong secret.
    func forgedToken(user: String) async throws -> String {
        try await TestUserClaims(user: user, issuer: Self.issuer, audience: Self.audience)
            .signed(secret: "not-the-secret-of-this-hub-but-as-long")
    }

    // MARK: Publisher API

    /// Publishes a notification for `user`; returns the hub's JSON answer.
    @discardableResult
    func publish(_ appNotificationId: String, to user: String, title: String = "Hello") async throws -> [String: Any] {
        let body: [String: Any] = [
            "appNotificationId": appNotificationId, "payload": ["visualContent": ["title": title, "body": "Body"]],
        ]
        return try await publisherRequest(
            "POST", "users/\(user)/notifications", body: try JSONSerialization.data(withJSONObject: body))
    }

    /// Deletes a notification of `user` by its `appNotificationId`.
    func delete(_ appNotificationId: String, of user: String) async throws {
        _ = try await publisherRequest("DELETE", "users/\(user)/notifications/\(appNotificationId)")
    }

    /// Erases everything the hub holds about `user` (`DELETE /v1/apps/{app}/users/{user}`).
    @discardableResult
    func eraseUser(_ user: String) async throws -> [String: Any] {
        try await publisherRequest("DELETE", "users/\(user)")
    }

    private func publisherRequest(_ method: String, _ path: String, body: Data? = nil) async throws -> [String: Any] {
        var request = URLRequest(url: baseURL.appendingPathComponent("v1/apps/\(Self.app)/\(path)"))
        request.httpMethod = method
        request.setValue("Bearer \(Self.publisherKey)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await session.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            throw TestHubError(message: "\(method) \(path): HTTP \(status) \(String(decoding: data, as: UTF8.self))")
        }
        return data.isEmpty ? [:] : (try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:])
    }
}

struct TestHubError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The port the server bound, handed from `onServerRunning` to the test.
final class PortBox: Sendable {
    private let state = Mutex<(port: Int?, waiter: CheckedContinuation<Int, any Error>?)>((nil, nil))

    func set(_ port: Int) {
        let waiter = state.withLock { state in
            state.port = port
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: port)
    }

    func wait() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let port = state.withLock { state in
                if state.port == nil { state.waiter = continuation }
                return state.port
            }
            if let port { continuation.resume(returning: port) }
        }
    }
}
