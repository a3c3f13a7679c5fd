import Foundation
import HubCore
import HubEmulators
import HubTesting
import HubWNS

/// A WNS emulator with one classic (package SID) app and one Entra ID app, and a transport that
/// allows the emulator's host.
struct WNSFixture {
    static let appID = "notes.contoso.com"
    static let package = "Contoso.Notes_8wekyb3d8bbwe"
    static let sid = "ms-app://s-1-15-2-1234567890-1234567890-1234567890-1234567890-1234567890-1234567890-123456789"
    static let tenant = "contoso-tenant"
    static let clientID = "6f1c0b9e-0000-4000-8000-000000000001"

    let emulator: WNSEmulator
    let transport: WNSTransport
    let app: CrossDeviceApp

    static let classic = WNSCredentials(authentication: .packageSID(sid: sid, secret: Secret("package-secret")))
    static let entra = WNSCredentials(
        authentication: .entra(tenantID: tenant, clientID: clientID, clientSecret: Secret("entra-secret")))

    /// Runs `body` with a fresh emulator and transport (classic credentials unless told otherwise),
    /// and shuts both down afterwards.
    static func with(
        credentials: WNSCredentials = WNSFixture.classic, configure: (inout WNSConfiguration) -> Void = { _ in },
        _ body: (WNSFixture) async throws -> Void
    ) async throws {
        let emulator = try await WNSEmulator.start()
        emulator.registerPackage(sid: sid, secret: "package-secret")
        emulator.registerEntraApp(tenantID: tenant, clientID: clientID, secret: "entra-secret")
        let transport = try WNSTransport(configuration: configuration(for: emulator, configure))
        let app = CrossDeviceApp(
            id: appID, name: "Notes", platforms: [.windows: [package]], credentials: PushCredentials([credentials]))
        let fixture = WNSFixture(emulator: emulator, transport: transport, app: app)
        try await withShutdown([transport.shutdown, emulator.shutdown]) { try await body(fixture) }
    }

    /// The configuration that reaches `emulator`: its token URLs, its host allowed, its CA trusted.
    static func configuration(
        for emulator: WNSEmulator, _ configure: (inout WNSConfiguration) -> Void = { _ in }
    ) -> WNSConfiguration {
        var configuration = WNSConfiguration(
            classicTokenURL: emulator.classicTokenURL, entraAuthority: emulator.entraAuthority,
            channelPolicy: WNSChannelPolicy(additionalHosts: [emulator.host]), trustRootsPEM: [emulator.trustRootPEM])
        configure(&configuration)
        return configuration
    }

    /// The identity that owns channels of the fixture's app.
    var owner: String {
        if case .entra(_, let clientID, _) = app.credentials.wns?.authentication { return clientID }
        return Self.sid
    }

    /// A new channel of the fixture's app.
    func channel() -> String { emulator.makeChannel(forApp: owner) }

    /// A delivery of `kind` to a Windows endpoint with `channelURI`.
    func outbound(
        channelURI: String, kind: DeliveryKind = .shoulderTap, priority: NotificationPriority = .none,
        notification: UserNotification? = nil, version: Int64 = 7
    ) -> OutboundDelivery {
        let endpoint = Endpoint(
            id: "surface", appId: app.id, userId: "alice", platform: .windows, platformAppId: Self.package,
            transport: .wns, token: channelURI, registeredAt: Date())
        return .fixture(
            kind, to: endpoint, app: app, notification: notification, priority: priority, changeVersion: version)
    }

    /// A stored notification with a visual.
    static func notification(
        title: String = "Lunch?", body: String? = "At noon", appNotificationId: String = "lunch1",
        groupName: String? = nil, lifetime: TimeInterval = 3600
    ) -> UserNotification {
        .fixture(
            VisualContent(title: title, body: body), appId: appID, appNotificationId: appNotificationId,
            groupName: groupName, lifetime: lifetime)
    }
}
