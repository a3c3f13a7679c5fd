import Foundation
import HubConfig
import HubCore
import HubEmulators
import HubPolling
import HubTesting
import Testing

@testable import HubWebPush

@Suite("WebPushPlugin: transports.webpush and credentials.webpush in hub.yaml")
struct WebPushPluginTests {
    /// A folder with a VAPID key file, and the loader of hub.yaml text in it.
    struct Workspace {
        let folder: URL
        let key = VAPIDKey.generate()

        init() throws {
            folder = try TemporaryFolder.make("webpush-plugin")
            try key.pemRepresentation.reveal().write(
                to: folder.appendingPathComponent("vapid.pem"), atomically: true, encoding: .utf8)
            try "not a certificate".write(
                to: folder.appendingPathComponent("bad.pem"), atomically: true, encoding: .utf8)
        }

        func load(
            transports: String = "", credentials: String, environment: [String: String] = [:]
        )
            -> ConfigLoader.Result
        {
            let yaml = """
                \(transports)
                apps:
                  - id: notes.contoso.com
                    platforms:
                      web: { appIds: ["https://notes.contoso.com"] }
                    credentials:
                      webpush: \(credentials)
                """
            return ConfigLoader(environment: environment, plugins: [WebPushPlugin()]).load(
                text: yaml, path: "hub.yaml", baseDirectory: folder.path)
        }
    }

    @Test("reads the VAPID key from a file: reference and the subject; transports.webpush sets the policy")
    func reads() throws {
        let workspace = try Workspace()
        let result = workspace.load(
            transports:
                #"transports: { webpush: { allowedHosts: ["fcm.googleapis.com", "127.0.0.1:4444"], timeout: 5s, tapTtl: 2h } }"#,
            credentials: #"{ vapidPrivateKey: file:vapid.pem, subject: "mailto:ops@contoso.com" }"#)
        #expect(result.errors.isEmpty, "\(result.errors)")
        let file = try result.get()
        let credentials = try #require(file.apps.first?.credentials.webpush)
        #expect(credentials.vapid.key == workspace.key)
        #expect(credentials.vapid.subject == "mailto:ops@contoso.com")
        #expect(!credentials.summary.contains("PRIVATE"))
        let settings = try #require(file.transports[.webpush] as? WebPushConfiguration)
        #expect(settings.endpointPolicy.allowedHosts == ["fcm.googleapis.com", "127.0.0.1:4444"])
        #expect(settings.requestTimeout == .seconds(5))
        #expect(settings.tapTimeToLive == .seconds(7200))
    }

    @Test("HUB_TRANSPORTS_WEBPUSH_ALLOWED_HOSTS overrides the allow-list")
    func environment() throws {
        let workspace = try Workspace()
        let result = workspace.load(
            credentials: #"{ vapidPrivateKey: file:vapid.pem, subject: "https://contoso.com/contact" }"#,
            environment: ["HUB_TRANSPORTS_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1:9443,*.push.apple.com"])
        #expect(result.errors.isEmpty, "\(result.errors)")
        let settings = try #require(try result.get().transports[.webpush] as? WebPushConfiguration)
        #expect(settings.endpointPolicy.allowedHosts == ["127.0.0.1:9443", "*.push.apple.com"])
    }

    @Test(
        "says what is wrong, where, without printing the key",
        arguments: [
            (#"{ vapidPrivateKey: file:vapid.pem, subject: "ops@contoso.com" }"#, "subject", 7),
            (#"{ vapidPrivateKey: file:vapid.pem }"#, "missing 'subject'", 7),
            (#"{ vapidPrivateKey: file:bad.pem, subject: "mailto:a@b.c" }"#, "vapidPrivateKey", 7),
            (#"{ vapidPrivateKey: file:absent.pem, subject: "mailto:a@b.c" }"#, "absent.pem", 7),
            (#"{ vapidKey: file:vapid.pem, subject: "mailto:a@b.c" }"#, "vapidKey", 7),
        ])
    func diagnostics(_ credentials: String, _ expected: String, _ line: Int) throws {
        let workspace = try Workspace()
        let result = workspace.load(credentials: credentials)
        let error = try #require(result.errors.first, "\(credentials)")
        #expect(error.message.contains(expected), "\(error)")
        #expect(error.line == line, "\(error)")
        #expect(error.column > 1)
        let pem = workspace.key.pemRepresentation.reveal().split(separator: "\n")[1]
        #expect(!result.diagnostics.map(\.description).joined().contains(pem))
    }

    @Test("transports.webpush: unknown keys and unreadable trust roots are reported")
    func settings() throws {
        let workspace = try Workspace()
        for (transports, expected) in [
            ("transports: { webpush: { allowedHost: [x.example] } }", "allowedHost"),
            ("transports: { webpush: { trustRoots: file:bad.pem } }", "trustRoots"),
            ("transports: { webpush: { tapTtl: 60d } }", "tapTtl"),
            ("transports: { webpush: { allowedHosts: [\"https://x.example/\"] } }", "allowedHosts"),
        ] {
            let result = workspace.load(
                transports: transports, credentials: #"{ vapidPrivateKey: file:vapid.pem, subject: "mailto:a@b.c" }"#)
            #expect(result.errors.contains { $0.message.contains(expected) }, "\(transports): \(result.errors)")
        }
    }

    @Test("makes the transport only when an app has credentials; checks that the key signs")
    func makeTransport() async throws {
        let plugin = WebPushPlugin()
        let signals = FeedSignals()
        let none = try plugin.makeTransport(
            TransportContext(
                settings: WebPushConfiguration(), apps: [CrossDeviceApp(id: "a.example", name: "A")], signals: signals,
                logger: .init(label: "test")))
        #expect(none == nil)
        let vapid = try VAPIDCredentials(key: .generate(), subject: "mailto:ops@contoso.com")
        let app = CrossDeviceApp(
            id: "a.example", name: "A", platforms: [.web: ["https://a.example"]],
            credentials: PushCredentials([WebPushCredentials(vapid: vapid)]))
        let transport = try #require(
            try plugin.makeTransport(
                TransportContext(
                    settings: WebPushConfiguration(), apps: [app], signals: signals, logger: .init(label: "t"))
            ) as? WebPushTransport)
        #expect(transport.platforms == [.web])
        try await transport.shutdown()
        #expect(
            await plugin.checkCredentials(WebPushCredentials(vapid: vapid), settings: NoSettings(), online: true)
                .isEmpty)
    }

    @Test("the plugin's transport reads the hub's clock: VAPID exp is 12 h after it and follows it, TTLs count from it")
    func hubClock() async throws {
        let start = Date(timeIntervalSince1970: 1_900_000_000)
        let clock = ManualClock(date: start)
        // The push service lives on the same clock: a JWT signed on the system's (years earlier) is refused.
        let emulator = try await WebPushEmulator.start(now: { clock.date })
        let vapid = try VAPIDCredentials(key: .generate(), subject: "mailto:ops@contoso.com")
        let app = CrossDeviceApp(
            id: "a.example", name: "A", platforms: [.web: ["https://a.example"]],
            credentials: PushCredentials([WebPushCredentials(vapid: vapid)]))
        let settings = WebPushConfiguration(
            endpointPolicy: WebPushEndpointPolicy(allowedHosts: [emulator.host]), trustRootsPEM: [emulator.trustRootPEM]
        )
        let context = TransportContext(
            settings: settings, apps: [app], signals: FeedSignals(clock: clock), logger: .init(label: "t"), clock: clock
        )
        let transport = try #require(try WebPushPlugin().makeTransport(context) as? WebPushTransport)
        try await withShutdown([transport.shutdown, emulator.shutdown]) {
            let subscription = emulator.makeSubscription(applicationServerKey: vapid.key.publicKey)
            let endpoint = Endpoint(
                id: "browser", appId: app.id, userId: "alice", platform: .web, platformAppId: "https://a.example",
                transport: .webpush, token: subscription.json, registeredAt: start)
            #expect(await transport.send(.fixture(.shoulderTap, to: endpoint, app: app)) == .accepted)
            clock.advance(by: .seconds(13 * 3600))
            let notification = UserNotification.fixture(
                VisualContent(title: "Lunch?", body: "At noon"), appId: app.id, appNotificationId: "lunch",
                now: clock.date, lifetime: 3600)
            #expect(
                await transport.send(.fixture(.visible, to: endpoint, app: app, notification: notification))
                    == .accepted)
            let received = emulator.received(by: subscription)
            #expect(received.map(\.vapidExpiry) == [start + 12 * 3600, start + 25 * 3600])
            #expect(received.last?.timeToLive == 3600, "the notification expires an hour after the hub's now")
        }
    }
}
