import Foundation
public import HubCore

/// What the transport conformance suite needs to exercise a transport: the app deliveries belong
/// to, and how to make endpoints its provider treats as working (and, optionally, as gone).
///
/// ```swift
/// let harness = TransportConformanceHarness(
///     app: CrossDeviceApp(id: "notes.contoso.com", name: "Notes", platforms: [.ios: ["com.contoso.notes"]]),
///     workingEndpoint: { TransportConformance.endpoint(transport: .apns, token: emulator.validToken()) },
///     deadEndpoint: { TransportConformance.endpoint(transport: .apns, token: emulator.unregisteredToken()) })
/// try await TransportConformance.run(APNSTransport(configuration), harness: harness)
/// ```
public struct TransportConformanceHarness: Sendable {
    /// The app the deliveries belong to, with the credentials the transport expects.
    public var app: CrossDeviceApp
    /// Makes an endpoint the transport delivers to successfully (a provider emulator's token, a
    /// local receiver's URL); called once per check.
    public var workingEndpoint: @Sendable () async throws -> Endpoint
    /// Makes an endpoint the provider reports gone (unregistered token, expired channel); `nil`
    /// skips ``TransportConformance/deadEndpointIsGone(_:_:)``.
    public var deadEndpoint: (@Sendable () async throws -> Endpoint)?
    /// The longest one send may take, cancelled or not.
    public var sendTimeLimit: Duration
    /// How many sends ``TransportConformance/concurrentSends(_:_:)`` starts at once.
    public var concurrentSends: Int

    public init(
        app: CrossDeviceApp, workingEndpoint: @escaping @Sendable () async throws -> Endpoint,
        deadEndpoint: (@Sendable () async throws -> Endpoint)? = nil, sendTimeLimit: Duration = .seconds(15),
        concurrentSends: Int = 100
    ) {
        self.app = app
        self.workingEndpoint = workingEndpoint
        self.deadEndpoint = deadEndpoint
        self.sendTimeLimit = sendTimeLimit
        self.concurrentSends = concurrentSends
    }

    /// A harness whose endpoints differ only by token: endpoints of `app` on `platform`
    /// (``TransportConformance/endpoint(id:platform:platformAppId:transport:token:attributes:appId:)``)
    /// with a token from `workingToken` (one the provider accepts) or `deadToken` (one it reports gone).
    public init(
        app: CrossDeviceApp, platform: Platform, platformAppId: String, transport: TransportID,
        attributes: [String: String] = [:], workingToken: @escaping @Sendable () async throws -> String,
        deadToken: @escaping @Sendable () async throws -> String, sendTimeLimit: Duration = .seconds(15),
        concurrentSends: Int = 100
    ) {
        let endpoint = { @Sendable (token: String) in
            TransportConformance.endpoint(
                platform: platform, platformAppId: platformAppId, transport: transport, token: token,
                attributes: attributes, appId: app.id)
        }
        self.init(
            app: app, workingEndpoint: { try await endpoint(workingToken()) },
            deadEndpoint: { try await endpoint(deadToken()) }, sendTimeLimit: sendTimeLimit,
            concurrentSends: concurrentSends)
    }
}

/// The behaviour every ``HubCore/Transport`` must share — ours (APNs, FCM, WNS, polling) and any a
/// user writes. Run it against the transport and a provider emulator or local receiver:
///
/// ```swift
/// @Test(arguments: TransportConformance.all)
/// func conformance(_ check: TransportConformance.Check) async throws {
///     try await check.run(transport, harness)
/// }
/// ```
///
/// Each check throws a ``ConformanceFailure`` that names it and says what the transport did.
public enum TransportConformance {
    /// One named check.
    public struct Check: Sendable, CustomStringConvertible {
        public let name: String
        public let run: @Sendable (any Transport, TransportConformanceHarness) async throws -> Void

        public init(
            name: String, run: @escaping @Sendable (any Transport, TransportConformanceHarness) async throws -> Void
        ) {
            self.name = name
            self.run = run
        }

        public var description: String { name }
    }

    /// Every check of the suite.
    public static let all: [Check] = [
        Check(name: "shoulderTapIsAccepted", run: shoulderTapIsAccepted),
        Check(name: "visibleDeliveryIsAccepted", run: visibleDeliveryIsAccepted),
        Check(name: "deadEndpointIsGone", run: deadEndpointIsGone),
        Check(name: "concurrentSends", run: concurrentSends),
        Check(name: "cancelledSendReturns", run: cancelledSendReturns),
        Check(name: "registrationCheckIsTotal", run: registrationCheckIsTotal),
    ]

    /// Runs every check and throws one ``ConformanceFailure`` listing all that failed.
    public static func run(_ transport: any Transport, harness: TransportConformanceHarness) async throws {
        var failures: [String] = []
        for check in all {
            do {
                try await check.run(transport, harness)
            } catch {
                failures.append("\(error)")
            }
        }
        guard failures.isEmpty else {
            throw ConformanceFailure(
                check: "TransportConformance(\(transport.id))",
                message: "\(failures.count) check(s) failed:\n" + failures.joined(separator: "\n"),
                location: "run(_:harness:)")
        }
    }

    // MARK: Fixtures

    /// An endpoint of `alice` of the app `notes.contoso.com`, for harnesses to adapt.
    public static func endpoint(
        id: String = "device-\(UInt32.random(in: .min ... .max))", platform: Platform = .ios,
        platformAppId: String = "com.contoso.notes", transport: TransportID, token: String?,
        attributes: [String: String] = [:], appId: String = "notes.contoso.com"
    ) -> Endpoint {
        Endpoint(
            id: id, appId: appId, userId: "alice", platform: platform, platformAppId: platformAppId,
            transport: transport, token: token, attributes: attributes, appDisplayName: "Conformance",
            registeredAt: Date())
    }

    /// A delivery of `kind` to `endpoint`; visible kinds carry a notification to render.
    public static func delivery(
        _ kind: DeliveryKind, to endpoint: Endpoint, app: CrossDeviceApp, sequence: Int64 = 1
    ) -> OutboundDelivery {
        let now = Date()
        let notification = UserNotification(
            id: "conformance-\(sequence)", appId: endpoint.appId, userId: endpoint.userId,
            appNotificationId: "conformance-\(sequence)", priority: .high,
            payload: NotificationPayload(
                rawContent: #"{"n":\#(sequence)}"#,
                visualContent: VisualContent(title: "Conformance \(sequence)", body: "A delivery of the suite")),
            expirationDateTime: now.addingTimeInterval(3600), createdDateTime: now, lastModifiedDateTime: now,
            changeVersion: sequence)
        let delivery = Delivery(
            id: sequence, appId: endpoint.appId, userId: endpoint.userId, endpointId: endpoint.id, kind: kind,
            notificationId: notification.id, changeVersion: sequence, priority: .high, createdAt: now, dueAt: now)
        return OutboundDelivery(
            delivery: delivery, endpoint: endpoint, app: app, notification: kind == .shoulderTap ? nil : notification)
    }
}
