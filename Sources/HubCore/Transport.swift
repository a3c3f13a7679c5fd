public import struct Foundation.Date

/// A plugin that carries deliveries to endpoints of one kind (`apns`, `fcm`, `wns`, `polling`, …).
///
/// Keep implementations small: the dispatcher handles queueing, coalescing, retries and back-off;
/// a transport sends one delivery and says how it went. It must not throw for provider answers:
/// every answer maps to a ``DeliveryOutcome``.
///
/// ```swift
/// struct WebhookTransport: Transport {
///     let id = TransportID("webhook")
///     func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome { … }
/// }
/// ```
public protocol Transport: Sendable {
    /// The name endpoints use in their `transport` field.
    var id: TransportID { get }

    /// Sends one delivery. Called concurrently; must return within a bounded time.
    func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome

    /// Checks an endpoint at registration (token format, channel URI host, …).
    /// - Returns: `nil` when acceptable, otherwise what the device must fix.
    func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String?
}

extension Transport {
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? { nil }
}

/// Everything a transport needs for one send.
public struct OutboundDelivery: Sendable {
    public var delivery: Delivery
    public var endpoint: Endpoint
    public var app: CrossDeviceApp
    /// For visible and fallback deliveries: what to render.
    public var notification: UserNotification?

    public init(delivery: Delivery, endpoint: Endpoint, app: CrossDeviceApp, notification: UserNotification?) {
        self.delivery = delivery
        self.endpoint = endpoint
        self.app = app
        self.notification = notification
    }

    public var kind: DeliveryKind { delivery.kind }
}

/// What happened to one send.
public enum DeliveryOutcome: Sendable, Hashable {
    /// The provider took it.
    case accepted
    /// Transient failure: try again, not before `after` when the provider said so.
    case retry(after: Duration?, reason: String)
    /// The token is dead since `since` (the provider's timestamp, when given): deactivate the endpoint.
    case endpointGone(since: Date?, reason: String)
    /// The request is wrong and will fail again unchanged (a payload the provider refuses, a bug):
    /// do not retry.
    case rejected(reason: String)
    /// The hub's configuration is wrong for the provider (a revoked or invalid key or certificate,
    /// a provider 401/403 for the credentials, a topic wrong for the whole app): every delivery of
    /// this app and transport would fail the same way until an operator fixes it. The delivery is
    /// parked, not dropped: it stays queued but is not sent again until the hub starts again
    /// (``OutboxStore/resumeSuspended(at:)``). `reason` should say what to fix.
    case suspended(reason: String)

    /// A stable label for metrics.
    public var label: String {
        switch self {
        case .accepted: "accepted"
        case .retry: "retry"
        case .endpointGone: "endpointGone"
        case .rejected: "rejected"
        case .suspended: "suspended"
        }
    }
}
