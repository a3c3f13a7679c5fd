import Foundation
import HubCore
import HubEmulators
import HubTesting
import Logging
import Synchronization
import Testing

@testable import HubAPNS

/// A wall clock the test moves by hand; the transport and the emulator can share one.
final class ManualClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_900_000_000)) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(minutes: Double) { current.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }
}

/// An emulator with a registered key, and a transport pointed at it that trusts its CA.
struct APNSHarness {
    static let bundleID = "com.contoso.notes"
    static let app = CrossDeviceApp(id: "notes.contoso.com", name: "Notes", platforms: [.ios: [bundleID]])

    let emulator: APNSEmulator
    let transport: APNSTransport
    let key: APNSTestKey
    let logs: LogCapture

    /// Starts the pair; `emulator` and `transport` adjust the configurations first.
    static func start(
        emulator adjustEmulator: (inout APNSEmulator.Configuration) -> Void = { _ in },
        transport adjustTransport: (inout APNSTransport.Configuration) -> Void = { _ in },
        bundleIDs: [String] = [bundleID]
    ) async throws -> APNSHarness {
        var emulatorConfiguration = APNSEmulator.Configuration()
        adjustEmulator(&emulatorConfiguration)
        let emulator = try await APNSEmulator.start(emulatorConfiguration)
        let key = APNSTestKey()
        emulator.register(key, bundleIDs: bundleIDs)
        var configuration = APNSTransport.Configuration(
            productionHost: "127.0.0.1", developmentHost: "127.0.0.1", port: emulator.port,
            trustRoots: .pem(emulator.trustRootPEM))
        // Generous: the fan-out test may hog both cores while others run; timeout tests set their own.
        configuration.requestTimeout = .seconds(30)
        // Debug builds of swift-nio-http2 slow down with many streams on one connection.
        configuration.maxStreamsPerConnection = 32
        adjustTransport(&configuration)
        let logs = LogCapture()
        let transport = APNSTransport(configuration: configuration, logger: logs.logger)
        return APNSHarness(emulator: emulator, transport: transport, key: key, logs: logs)
    }

    /// Runs `body` with a started harness and shuts both ends down afterwards, also on failure.
    static func with(
        emulator adjustEmulator: (inout APNSEmulator.Configuration) -> Void = { _ in },
        transport adjustTransport: (inout APNSTransport.Configuration) -> Void = { _ in },
        _ body: (APNSHarness) async throws -> Void
    ) async throws {
        let harness = try await start(emulator: adjustEmulator, transport: adjustTransport)
        do {
            try await body(harness)
        } catch {
            await harness.shutdown()
            throw error
        }
        await harness.shutdown()
    }

    func shutdown() async {
        await transport.shutdown(grace: .milliseconds(200))
        await emulator.shutdown()
    }

    var credentials: APNSCredentials { key.credentials() }

    /// A 32-byte device token as 64 hex digits, distinct per `index`.
    static func token(_ index: Int) -> String {
        String(format: "%064x", index + 0xA000)
    }

    /// A background push to `token`.
    func request(_ token: String, payload: APNSPayload = .background()) -> APNSRequest {
        APNSRequest(deviceToken: token, environment: .production, bundleID: Self.bundleID, payload: payload)
    }

    func send(_ token: String, payload: APNSPayload = .background()) async -> DeliveryOutcome {
        await transport.send(request(token, payload: payload), credentials: credentials)
    }

    /// A hub delivery of `kind` to an iOS endpoint with `token`.
    func delivery(
        _ kind: DeliveryKind, token: String, notification: UserNotification? = nil,
        environment: APNSEnvironment = .production
    ) -> OutboundDelivery {
        var app = Self.app
        app.credentials.apns = credentials
        let now = Date()
        let endpoint = Endpoint(
            id: "phone", appId: app.id, userId: "alice", platform: .ios, platformAppId: Self.bundleID,
            transport: .apns, token: token, attributes: [APNSEnvironment.attribute: environment.rawValue],
            registeredAt: now)
        let delivery = Delivery(
            id: 1, appId: app.id, userId: "alice", endpointId: "phone", kind: kind, notificationId: notification?.id,
            changeVersion: 42, priority: notification?.priority ?? .none, createdAt: now, dueAt: now)
        return OutboundDelivery(delivery: delivery, endpoint: endpoint, app: app, notification: notification)
    }

    static func notification(
        title: String = "Meeting moved", body: String? = "Now at 3 pm", group: String? = "calendar",
        priority: NotificationPriority = .high, appNotificationId: String = "meeting-42",
        expires: Date = Date(timeIntervalSince1970: 2_000_000_000)
    ) -> UserNotification {
        UserNotification(
            id: "n-1", appId: app.id, userId: "alice", appNotificationId: appNotificationId, groupName: group,
            priority: priority, payload: NotificationPayload(visualContent: VisualContent(title: title, body: body)),
            expirationDateTime: expires, createdDateTime: Date(), lastModifiedDateTime: Date())
    }
}

extension DeliveryOutcome {
    var isAccepted: Bool { self == .accepted }
    var isRetry: Bool {
        if case .retry = self { return true }
        return false
    }
    var retryAfter: Duration? {
        if case .retry(let after, _) = self { return after }
        return nil
    }
    var reasonText: String {
        switch self {
        case .accepted: "accepted"
        case .retry(_, let reason), .rejected(let reason), .endpointGone(_, let reason), .suspended(let reason):
            reason
        }
    }
}
