import Foundation
import HubCore
import HubEmulators
import HubTesting
import HubWebPush

/// A Web Push emulator and a transport that allows its host and holds a VAPID key for the app.
struct WebPushFixture {
    static let appID = "notes.contoso.com"
    static let origin = "https://notes.contoso.com"
    static let subject = "mailto:ops@contoso.com"

    let emulator: WebPushEmulator
    let transport: WebPushTransport
    let vapid: VAPIDCredentials
    let app: CrossDeviceApp

    /// Runs `body` with a fresh emulator and transport, and shuts both down afterwards.
    static func with(
        withCredentials: Bool = true, configure: (inout WebPushConfiguration) -> Void = { _ in },
        _ body: (WebPushFixture) async throws -> Void
    ) async throws {
        let emulator = try await WebPushEmulator.start()
        let vapid = try VAPIDCredentials(key: .generate(), subject: subject)
        var configuration = WebPushConfiguration(
            endpointPolicy: WebPushEndpointPolicy(allowedHosts: [emulator.host]), trustRootsPEM: [emulator.trustRootPEM]
        )
        configure(&configuration)
        let transport = try WebPushTransport(configuration: configuration)
        let app = CrossDeviceApp(
            id: appID, name: "Notes", platforms: [.web: [origin]],
            credentials: withCredentials ? PushCredentials([WebPushCredentials(vapid: vapid)]) : PushCredentials())
        let fixture = WebPushFixture(emulator: emulator, transport: transport, vapid: vapid, app: app)
        try await withShutdown([transport.shutdown, emulator.shutdown]) { try await body(fixture) }
    }

    /// A new subscription made with the fixture's VAPID public key.
    func subscription() -> WebPushEmulator.Subscription {
        emulator.makeSubscription(applicationServerKey: vapid.key.publicKey)
    }

    /// A web endpoint of alice whose token is `subscription`'s JSON.
    func endpoint(_ subscription: WebPushEmulator.Subscription) -> Endpoint {
        Endpoint(
            id: "browser-\(subscription.id.prefix(6))", appId: app.id, userId: "alice", platform: .web,
            platformAppId: Self.origin, transport: .webpush, token: subscription.json, registeredAt: Date())
    }

    /// A delivery of `kind` to `subscription`.
    func outbound(
        _ subscription: WebPushEmulator.Subscription, kind: DeliveryKind = .shoulderTap,
        priority: NotificationPriority = .none, notification: UserNotification? = nil, version: Int64 = 7
    ) -> OutboundDelivery {
        .fixture(
            kind, to: endpoint(subscription), app: app, notification: notification, priority: priority,
            changeVersion: version)
    }

    /// A stored notification with a visual.
    static func notification(
        title: String = "Lunch?", body: String? = "At noon", appNotificationId: String = "lunch1",
        lifetime: TimeInterval = 3600
    ) -> UserNotification {
        .fixture(
            VisualContent(title: title, body: body), appId: appID, appNotificationId: appNotificationId,
            lifetime: lifetime)
    }
}
/// URL-safe base64 for test vectors.
enum B64 {
    static func decode(_ text: String) -> [UInt8] {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Array(Data(base64Encoded: standard)!)
    }

    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
