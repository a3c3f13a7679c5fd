import Foundation
import HubAPNS
import HubCore
import HubEmulators
import HubFCM
import HubPolling
import HubSQLite
import HubTesting
import HubWNS
import Logging
import Testing

@Suite("all transports: one user, four devices, one tap each, universal dismiss")
struct AllTransportsTests {
    static let appID = "notes.contoso.com"

    @Test("iOS, Android, Windows and polling get exactly one tap; a dismiss on Android taps the other three")
    func tapsAndUniversalDismiss() async throws {
        let apnsEmulator = try await APNSEmulator.start()
        let apnsKey = APNSTestKey()
        apnsEmulator.register(apnsKey, bundleIDs: ["com.contoso.notes"])
        let apns = APNSTransport(
            configuration: APNSTransport.Configuration(
                productionHost: "127.0.0.1", developmentHost: "127.0.0.1", port: apnsEmulator.port,
                trustRoots: .pem(apnsEmulator.trustRootPEM)),
            logger: Logger(label: "apns"))
        let fcmEmulator = try await FCMEmulator.start()
        let wnsEmulator = try await WNSEmulator.start(authority: fcmEmulator.authority)
        try await fcmEmulator.register(.primary)
        wnsEmulator.registerPackage(sid: WNSFixture.sid, secret: "package-secret")
        let fcm = try FCMTransport(
            configuration: FCMConfiguration(sendBaseURL: fcmEmulator.baseURL, trustRootsPEM: [fcmEmulator.trustRootPEM])
        )
        let wns = try WNSTransport(configuration: WNSFixture.configuration(for: wnsEmulator))
        do {
            try await run(
                apns: apns, apnsEmulator: apnsEmulator, apnsKey: apnsKey, fcm: fcm, fcmEmulator: fcmEmulator, wns: wns,
                wnsEmulator: wnsEmulator)
        } catch {
            Issue.record(error)
        }
        await apns.shutdown(grace: .milliseconds(200))
        await apnsEmulator.shutdown()
        try await fcm.shutdown()
        try await wns.shutdown()
        try await fcmEmulator.shutdown()
        try await wnsEmulator.shutdown()
    }

    private func run(
        apns: APNSTransport, apnsEmulator: APNSEmulator, apnsKey: APNSTestKey, fcm: FCMTransport,
        fcmEmulator: FCMEmulator, wns: WNSTransport, wnsEmulator: WNSEmulator
    ) async throws {
        let app = CrossDeviceApp(
            id: Self.appID, name: "Notes",
            platforms: [
                .ios: ["com.contoso.notes"], .android: ["com.contoso.notes"], .windows: [WNSFixture.package],
                .web: ["https://notes.contoso.com"],
            ],
            credentials: PushCredentials([
                apnsKey.credentials(), FCMTestServiceAccount.primary.credentials(tokenURI: fcmEmulator.tokenURI),
                WNSFixture.classic,
            ])
        )
        let signals = FeedSignals()
        let polling = PollingTransport(signals: signals)
        let recordedPolling = RecordingTransport(id: .polling, capabilities: [.wakesInProcess, .tokenless]) {
            await polling.send($0)
        }
        var configuration = HubConfiguration(apps: [app])
        configuration.dispatcher.initialBackoff = .milliseconds(10)
        configuration.dispatcher.idleInterval = .milliseconds(20)
        let hub = try Hub(
            configuration: configuration, store: try SQLiteStore.inMemory(),
            transports: [apns, fcm, wns, recordedPolling], signals: signals)
        try await hub.store.migrate()
        let running = Task { try await hub.run() }
        defer { running.cancel() }

        func register(_ id: String, _ platform: Platform, _ transport: TransportID, _ token: String?) async throws {
            _ = try await hub.registerEndpoint(
                app: Self.appID, user: "alice", id: id,
                EndpointRegistration(
                    platform: platform, appId: app.platforms[platform]![0], transport: transport, token: token))
        }
        let channel = wnsEmulator.makeChannel(forApp: WNSFixture.sid)
        try await register("iphone", .ios, .apns, "a1b2c3d4")
        try await register("pixel", .android, .fcm, "fcm-token-pixel")
        try await register("surface", .windows, .wns, channel)
        try await register("browser", .web, .polling, nil)

        // Publish while the browser long-polls: every endpoint gets one tap.
        async let firstPage = hub.longPoll(
            app: Self.appID, user: "alice", after: 0, wait: .seconds(10), endpoint: "browser")
        #expect(await eventually { hub.waitingRoom?.waiterCount == 1 }, "the long-poll waits")
        let published = try await hub.publish(
            app: Self.appID, user: "alice",
            NotificationDraft(appNotificationId: "lunch", payload: NotificationPayload(rawContent: "{}"))
        ).notification
        #expect(try await firstPage.changes.map(\.id) == [published.id], "the long-poll woke with the change")
        #expect(
            await eventually {
                apnsEmulator.requestCounts(status: 200).values.reduce(0, +) == 1 && fcmEmulator.messages.count == 1
                    && wnsEmulator.received.count == 1
            })

        // Dismiss on Android: iOS, Windows and the browser are tapped again, Android is not.
        async let secondPage = hub.longPoll(
            app: Self.appID, user: "alice", after: published.changeVersion, wait: .seconds(10), endpoint: "browser")
        #expect(await eventually { hub.waitingRoom?.waiterCount == 1 }, "the long-poll waits")
        let dismissed = try await hub.updateState(
            app: Self.appID, user: "alice", id: published.id, readState: .read, userActionState: .dismissed,
            fromEndpoint: "pixel")
        #expect(try await secondPage.changes.map(\.userActionState) == [.dismissed])
        #expect(
            await eventually {
                apnsEmulator.requests.count == 2 && wnsEmulator.received.count == 2
            })
        #expect(await hub.settled())
        #expect(fcmEmulator.messages.count == 1, "the dismissing Android device is not tapped back")
        let apnsRequests = apnsEmulator.requests
        #expect(apnsRequests.count == 2 && wnsEmulator.received.count == 2)
        #expect(
            recordedPolling.deliveries.isEmpty,
            "the browser is woken by the hub (its long-polls), not through the outbox")
        #expect(apnsRequests.allSatisfy { $0.status == 200 && $0.deviceToken == "a1b2c3d4" })
        #expect(apnsRequests.last?.json?["hub"]?["v"] == .integer(Int64(dismissed.changeVersion)))
        #expect(wnsEmulator.received.last?.text.contains(#""v":"\#(dismissed.changeVersion)""#) == true)
        #expect(apnsRequests.allSatisfy { $0.header("apns-push-type") == "background" }, "shoulder taps")
    }
}
