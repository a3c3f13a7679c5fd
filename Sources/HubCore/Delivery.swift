public import struct Foundation.Date

/// What a delivery carries to its endpoint.
public struct DeliveryKind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A content-free "sync your feed"; taps to one endpoint coalesce into the newest.
    public static let shoulderTap = DeliveryKind(rawValue: "shoulderTap")
    /// The notification rendered natively (alert, notification, toast).
    public static let visible = DeliveryKind(rawValue: "visible")
    /// A visible alert sent because the endpoint did not sync in time after a high-priority tap.
    public static let fallback = DeliveryKind(rawValue: "fallback")
    public var description: String { rawValue }
}

/// A queued delivery as the outbox holds it.
public struct Delivery: Sendable, Hashable, Identifiable {
    public var id: Int64
    public var appId: String
    public var userId: String
    public var endpointId: String
    public var kind: DeliveryKind
    /// The notification a visible delivery renders, or the newest one behind a tap.
    public var notificationId: String?
    /// The feed version this delivery announces.
    public var changeVersion: Int64
    public var priority: NotificationPriority
    /// Attempts made so far.
    public var attempts: Int
    public var createdAt: Date
    public var dueAt: Date
    public var lastError: String?

    public init(
        id: Int64, appId: String, userId: String, endpointId: String, kind: DeliveryKind, notificationId: String?,
        changeVersion: Int64, priority: NotificationPriority, attempts: Int = 0, createdAt: Date, dueAt: Date,
        lastError: String? = nil
    ) {
        self.id = id
        self.appId = appId
        self.userId = userId
        self.endpointId = endpointId
        self.kind = kind
        self.notificationId = notificationId
        self.changeVersion = changeVersion
        self.priority = priority
        self.attempts = attempts
        self.createdAt = createdAt
        self.dueAt = dueAt
        self.lastError = lastError
    }
}

/// A delivery claimed from the outbox, with what a transport needs to send it.
public struct ClaimedDelivery: Sendable, Hashable {
    public var delivery: Delivery
    public var endpoint: Endpoint
    /// Present for visible and fallback deliveries, and for taps whose notification still exists.
    public var notification: UserNotification?
    /// For a webhook event (kind ``DeliveryKind/webhook``): the event to post.
    public var event: WebhookEvent?
    public init(delivery: Delivery, endpoint: Endpoint, notification: UserNotification?, event: WebhookEvent? = nil) {
        self.delivery = delivery
        self.endpoint = endpoint
        self.notification = notification
        self.event = event
    }
}

/// How a delivery ended, as recorded in the outbox.
public struct DeliveryResult: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let delivered = DeliveryResult(rawValue: "delivered")
    /// The endpoint was gone; it is now inactive.
    public static let endpointGone = DeliveryResult(rawValue: "endpointGone")
    /// The provider refused the request; retrying would not help.
    public static let rejected = DeliveryResult(rawValue: "rejected")
    /// Attempts or age ran out.
    public static let gaveUp = DeliveryResult(rawValue: "gaveUp")
    /// A newer tap to the same endpoint replaced it, or the endpoint went away.
    public static let superseded = DeliveryResult(rawValue: "superseded")
    public var description: String { rawValue }
}

/// Counts of the outbox, for `/metrics` and the admin statistics.
public struct DeliveryStatistics: Sendable, Hashable, Codable {
    /// Pending deliveries, suspended ones included.
    public var pending: Int
    /// Finished deliveries by transport, then by result.
    public var finished: [String: [String: Int]]
    /// Parked deliveries (a configuration fault), per app and transport, ordered by app then transport.
    public var suspended: [SuspendedDeliveries]
    public init(pending: Int, finished: [String: [String: Int]], suspended: [SuspendedDeliveries] = []) {
        self.pending = pending
        self.finished = finished
        self.suspended = suspended
    }
}

/// The deliveries of one app and transport parked by ``DeliveryOutcome/suspended(reason:)``.
public struct SuspendedDeliveries: Sendable, Hashable, Codable {
    public var appId: String
    public var transport: TransportID
    public var count: Int
    /// The reason of the latest suspension: what the operator should fix.
    public var lastReason: String?
    /// When the latest suspension happened.
    public var lastSuspendedAt: Date?

    public init(appId: String, transport: TransportID, count: Int, lastReason: String?, lastSuspendedAt: Date?) {
        self.appId = appId
        self.transport = transport
        self.count = count
        self.lastReason = lastReason
        self.lastSuspendedAt = lastSuspendedAt
    }
}
