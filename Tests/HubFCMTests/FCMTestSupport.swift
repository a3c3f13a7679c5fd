import Foundation
import HubCore
import HubEmulators
import HubFCM
import HubTesting
import Logging
import Synchronization

/// A wall clock the test moves by hand, shared by the transport and the emulator.
final class TestClock: Sendable {
    private let current = Mutex(Date())
    var now: Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// An FCM emulator with the primary test account registered, and a transport pointed at it.
struct FCMFixture {
    static let appID = "notes.contoso.com"
    static let package = "com.contoso.notes"

    let emulator: FCMEmulator
    let transport: FCMTransport
    let credentials: FCMCredentials
    let app: CrossDeviceApp

    /// Runs `body` with a fresh emulator and transport, and shuts both down afterwards.
    static func with(
        clock: TestClock? = nil, logs: LogCapture? = nil, configure: (inout FCMConfiguration) -> Void = { _ in },
        _ body: (FCMFixture) async throws -> Void
    ) async throws {
        let now: @Sendable () -> Date
        if let clock {
            now = { clock.now }
        } else {
            now = { Date() }
        }
        let emulator = try await FCMEmulator.start(now: now)
        try await emulator.register(.primary)
        var configuration = FCMConfiguration(
            sendBaseURL: emulator.baseURL, trustRootsPEM: [emulator.trustRootPEM], now: now)
        configure(&configuration)
        let transport = try FCMTransport(configuration: configuration, logger: logs?.logger ?? Logger(label: "fcm"))
        let credentials = FCMTestServiceAccount.primary.credentials(tokenURI: emulator.tokenURI)
        let app = CrossDeviceApp(
            id: appID, name: "Notes", platforms: [.android: [package], .ios: ["com.contoso.notes"]],
            credentials: PushCredentials([credentials]))
        let fixture = FCMFixture(emulator: emulator, transport: transport, credentials: credentials, app: app)
        try await withShutdown([transport.shutdown, emulator.shutdown]) { try await body(fixture) }
    }

    /// A delivery of `kind` to an Android endpoint with `token`.
    func outbound(
        token: String = "device-token-1", kind: DeliveryKind = .shoulderTap, priority: NotificationPriority = .none,
        notification: UserNotification? = nil, version: Int64 = 7
    ) -> OutboundDelivery {
        let endpoint = Endpoint(
            id: "android", appId: app.id, userId: "alice", platform: .android, platformAppId: Self.package,
            transport: .fcm, token: token, registeredAt: Date())
        return .fixture(
            kind, to: endpoint, app: app, notification: notification, priority: priority, changeVersion: version)
    }

    /// A stored notification with a visual, expiring `lifetime` seconds after `now`.
    static func notification(
        title: String = "Lunch?", body: String? = "At noon", now: Date = Date(), lifetime: TimeInterval = 3600,
        appNotificationId: String = "lunch-1"
    ) -> UserNotification {
        .fixture(
            VisualContent(title: title, body: body), appId: appID, appNotificationId: appNotificationId, now: now,
            lifetime: lifetime)
    }
}
