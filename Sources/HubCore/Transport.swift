public import ServiceLifecycle

public import struct Foundation.Date

/// What carries deliveries to endpoints of one kind; made by its ``TransportPlugin``.
///
/// Keep implementations small: the dispatcher handles queueing, coalescing, retries and back-off;
/// a transport sends one delivery and says how it went. It must not throw for provider answers:
/// every answer maps to a ``DeliveryOutcome``.
///
/// A transport is a `Service`: `hub serve` runs it in its `ServiceGroup` after the store and
/// before the hub, so on shutdown it stops after the hub has drained its in-flight sends and
/// before the store stops. The default ``run()`` waits for graceful shutdown; a transport that
/// holds connections overrides it to close them then. ``send(_:)`` must work whether or not the
/// transport runs (tests and embedders may only hand it to a ``Hub``).
///
/// ```swift
/// struct WebhookTransport: Transport {
///     let id = TransportID("webhook")
///     func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome { … }
/// }
/// ```
public protocol Transport: Service {
    /// The name endpoints use in their `transport` field.
    var id: TransportID { get }

    /// The platforms whose devices may register with this transport; empty for every platform.
    var platforms: Set<Platform> { get }

    /// What the hub does differently for this transport's endpoints.
    var capabilities: TransportCapabilities { get }

    /// The registration field that holds the device's address (`token`, or `channelUri` for a
    /// channel URI), named in field errors.
    var tokenField: String { get }

    /// The ``Endpoint/attributes`` its endpoints may have (such as `environment`); others are refused
    /// at registration.
    var endpointAttributes: Set<String> { get }

    /// Sends one delivery. Called concurrently; must return within a bounded time.
    func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome

    /// Sends one delivery and says, beside the outcome, the provider's ID of the message when the
    /// provider gave one (`apns-id`, FCM's message name, WNS's `X-WNS-Msg-ID`, Web Push's
    /// `Location`). The dispatcher calls this; the ID is kept in the delivery's receipt, where an
    /// operator can quote it to the provider. The default calls ``send(_:)`` and gives no ID: a
    /// transport that learns IDs implements this one and has ``send(_:)`` return its outcome.
    func transmit(_ delivery: OutboundDelivery) async -> ProviderReply

    /// How many sends its lane keeps in flight, unless hub.yaml's `dispatcher.concurrency` or
    /// `dispatcher.lanes.<id>` says otherwise; `nil` (the default) for the hub's
    /// (``DispatcherConfiguration/defaultConcurrency``). A transport that multiplexes many sends
    /// over few connections (HTTP/2) keeps its provider busiest with a deeper lane; one whose
    /// client queues beyond a small pool gains nothing from it.
    var preferredConcurrency: Int? { get }

    /// Checks an endpoint at registration (token format, channel URI host, attributes, …), after
    /// ``prepare(_:for:)``.
    /// - Returns: `nil` when acceptable, otherwise what the device must fix.
    func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String?

    /// Completes an endpoint at registration, such as a default for an attribute the device did not
    /// give (the APNs environment from the app's credentials).
    func prepare(_ endpoint: Endpoint, for app: CrossDeviceApp) -> Endpoint

    /// Checks an endpoint at registration over the network, after ``problem(registering:for:)``
    /// found nothing: such as asking the endpoint's server whether it is one this transport may
    /// post to (UnifiedPush's endpoint check). Called on every registration and refresh, never
    /// before a send; it must return within a bounded time. The default finds nothing.
    /// - Parameters:
    ///   - endpoint: the endpoint as it would be stored (after ``prepare(_:for:)``).
    ///   - app: the endpoint's app.
    /// - Returns: `nil` when acceptable, otherwise what the device must fix (the registration is
    ///   refused with it, as a field error of ``tokenField``).
    func check(registering endpoint: Endpoint, for app: CrossDeviceApp) async -> String?

    /// The host a send to `endpoint` connects to, when endpoints of this transport name their
    /// own (a WNS channel URI, a Web Push endpoint); `nil` (the default) for a transport that
    /// sends to one provider. The dispatcher caps the sends in flight per host and backs off a
    /// host that cannot be reached (see ``ProviderReply/unreachable``).
    /// - Parameter endpoint: an endpoint of this transport.
    func destination(of endpoint: Endpoint) -> String?
}

extension Transport {
    public var platforms: Set<Platform> { [] }

    public var capabilities: TransportCapabilities { [] }

    public var tokenField: String { "token" }

    public var endpointAttributes: Set<String> { [] }

    public var preferredConcurrency: Int? { nil }

    public func transmit(_ delivery: OutboundDelivery) async -> ProviderReply {
        ProviderReply(await send(delivery))
    }

    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? { nil }

    public func prepare(_ endpoint: Endpoint, for app: CrossDeviceApp) -> Endpoint { endpoint }

    public func check(registering endpoint: Endpoint, for app: CrossDeviceApp) async -> String? { nil }

    public func destination(of endpoint: Endpoint) -> String? { nil }

    /// Waits for graceful shutdown. Override to release connections once the hub has drained.
    public func run() async throws {
        try await gracefulShutdown()
    }

    /// Whether a device of `platform` may register with this transport.
    public func serves(_ platform: Platform) -> Bool { platforms.isEmpty || platforms.contains(platform) }
}

/// What a transport declares the hub must do differently for its endpoints.
///
/// A growing set of static members, like ``Platform``.
public struct TransportCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The hub wakes this transport's devices itself, in process (their long-polls and
    /// server-sent-event streams, relayed to other instances by a shared store): a change plans no
    /// outbox rows for its endpoints (``DeliveryPlanner/inProcessTransports``), and its endpoints
    /// register without a token.
    public static let wakesInProcess = TransportCapabilities(rawValue: 1 << 0)

    /// Registration needs no token: the transport reaches the device some other way.
    public static let tokenless = TransportCapabilities(rawValue: 1 << 1)
}

/// Everything a transport needs for one send.
public struct OutboundDelivery: Sendable {
    public var delivery: Delivery
    public var endpoint: Endpoint
    public var app: CrossDeviceApp
    /// For visible and fallback deliveries: what to render.
    public var notification: UserNotification?
    /// The user's badge on this endpoint's platform as the hub counted it just before the send
    /// (``BadgeCount``), when the app shows the hub's count (``DeliveryPolicy/badge``); `nil`
    /// otherwise. Transports send it with every push: a tap then updates the badge without an alert.
    public var badge: Int?

    /// For a webhook event: the event to post (see ``WebhookStore``).
    public var event: WebhookEvent?

    /// - Parameters:
    ///   - delivery: the delivery to send.
    ///   - endpoint: the endpoint it goes to.
    ///   - app: the endpoint's app.
    ///   - notification: for visible and fallback deliveries, what to render.
    ///   - badge: the hub's badge count for the endpoint, when the app shows it.
    ///   - event: for a webhook event, the event to post.
    public init(
        delivery: Delivery, endpoint: Endpoint, app: CrossDeviceApp, notification: UserNotification?,
        badge: Int? = nil, event: WebhookEvent? = nil
    ) {
        self.delivery = delivery
        self.endpoint = endpoint
        self.app = app
        self.notification = notification
        self.badge = badge
        self.event = event
    }

    public var kind: DeliveryKind { delivery.kind }

    /// The badge a push shows: the hub's count (``badge``) when the app shows it, else the one the
    /// publisher gave in `visualContent.badge` (visible and fallback deliveries), else none.
    public var shownBadge: Int? {
        badge ?? (kind == .shoulderTap ? nil : notification?.payload.visualContent?.badge)
    }
}

/// A provider's answer to one send: the outcome, and the provider's own ID of the message when it
/// gave one (see ``Transport/transmit(_:)``).
public struct ProviderReply: Sendable, Hashable {
    public var outcome: DeliveryOutcome
    /// The provider's ID of the message, as it sent it (at most ``maxMessageIdLength`` characters are kept).
    public var messageId: String?

    /// The longest provider message ID a receipt keeps; longer ones are cut.
    public static let maxMessageIdLength = 512

    /// Why the send never reached its destination host, when it did not: the host name did not
    /// resolve, or connecting failed or timed out (not a provider's answer, nor a request that
    /// timed out on an open connection). The dispatcher then backs off the host
    /// (``Transport/destination(of:)``), so sends to it fail fast instead of each waiting.
    public var unreachable: String?

    /// - Parameters:
    ///   - outcome: what the dispatcher should do with the delivery.
    ///   - messageId: the provider's ID of the message, when it gave one.
    ///   - unreachable: why the destination host could not be reached, when it could not.
    public init(_ outcome: DeliveryOutcome, messageId: String? = nil, unreachable: String? = nil) {
        self.outcome = outcome
        self.messageId = messageId.flatMap { $0.isEmpty ? nil : String($0.prefix(Self.maxMessageIdLength)) }
        self.unreachable = unreachable
    }
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
