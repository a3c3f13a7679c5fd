import Foundation
import HubCore
import HubEmulators
import HubFCM
import HubSQLite
import HubTesting
import Testing

@Suite("FCM: through the hub's dispatcher and store")
struct FCMHubTests {
    static var fastDispatcher: DispatcherConfiguration {
        var configuration = DispatcherConfiguration()
        configuration.initialBackoff = .milliseconds(10)
        configuration.maxBackoff = .milliseconds(50)
        configuration.idleInterval = .milliseconds(20)
        return configuration
    }

    /// Runs `body` with a hub whose only transport is the fixture's FCM transport.
    static func withHub(_ fixture: FCMFixture, _ body: (Hub) async throws -> Void) async throws {
        var configuration = HubConfiguration(apps: [fixture.app])
        configuration.dispatcher = fastDispatcher
        let hub = try Hub(
            configuration: configuration, store: try SQLiteStore.inMemory(), transports: [fixture.transport])
        try await hub.store.migrate()
        let running = Task { try await hub.run() }
        defer { running.cancel() }
        try await body(hub)
    }

    static func register(_ hub: Hub, _ id: String, token: String) async throws -> Endpoint {
        try await hub.registerEndpoint(
            app: FCMFixture.appID, user: "alice", id: id,
            EndpointRegistration(platform: .android, appId: FCMFixture.package, transport: .fcm, token: token))
    }

    @Test(
        "a publish taps the Android endpoint once; an UNREGISTERED token and one FCM says is not valid deactivate theirs"
    )
    func publishAndDeadToken() async throws {
        try await FCMFixture.with { fixture in
            fixture.emulator.setFailure(.unregistered, forToken: "uninstalled")
            fixture.emulator.setFailure(.invalidArgument, forToken: "other-apps-token")
            try await Self.withHub(fixture) { hub in
                _ = try await Self.register(hub, "pixel", token: "live-token")
                _ = try await Self.register(hub, "old-phone", token: "uninstalled")
                _ = try await Self.register(hub, "tablet", token: "other-apps-token")
                _ = try await hub.publish(
                    app: FCMFixture.appID, user: "alice",
                    NotificationDraft(appNotificationId: "n1", payload: NotificationPayload(rawContent: "x")))
                #expect(await eventually { fixture.emulator.messages.count == 1 })
                #expect(
                    try await eventually {
                        try await hub.appEndpoints(app: FCMFixture.appID, state: .inactive).map(\.id).sorted()
                            == ["old-phone", "tablet"]
                    })
                let dead = try await hub.endpoint(app: FCMFixture.appID, user: "alice", id: "old-phone")
                #expect(dead.inactiveReason?.contains("UNREGISTERED") == true)
                let invalid = try await hub.endpoint(app: FCMFixture.appID, user: "alice", id: "tablet")
                #expect(invalid.inactiveReason?.contains("not a valid FCM registration token") == true)
                #expect(await hub.settled())
                #expect(fixture.emulator.messages.map(\.token) == ["live-token"])
            }
        }
    }

    @Test("registration refuses tokens that cannot be FCM tokens and apps without FCM credentials")
    func registration() async throws {
        try await FCMFixture.with { fixture in
            try await Self.withHub(fixture) { hub in
                await #expect(throws: HubError.self) { try await Self.register(hub, "bad", token: "has spaces in it") }
                #expect(
                    fixture.transport.problem(
                        registering: try await Self.register(hub, "ok", token: "abc:APA91b"), for: fixture.app) == nil)
                var bare = fixture.app
                bare.credentials = PushCredentials()
                let endpoint = try await hub.endpoint(app: FCMFixture.appID, user: "alice", id: "ok")
                #expect(
                    fixture.transport.problem(registering: endpoint, for: bare)?.contains("no FCM credentials") == true)
            }
        }
    }
}
