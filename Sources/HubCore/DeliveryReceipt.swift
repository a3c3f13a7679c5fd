public import struct Foundation.Date

/// One outbox row as a receipt reads it: the delivery, and what became of it so far.
public struct DeliveryTrace: Sendable, Hashable {
    public var delivery: Delivery
    public var transport: TransportID
    /// `nil` while pending.
    public var result: DeliveryResult?
    /// The provider's or the hub's reason of the finish (``DeliveryResult`` other than delivered).
    public var detail: String?
    /// Parked for a configuration fault: the reason, while pending.
    public var suspendedReason: String?
    /// Leased to an instance that is sending it now.
    public var inFlight: Bool
    /// The first time an instance took it to send (a claim or a publish's hand-off).
    public var firstSentAt: Date?
    /// The latest time an instance took it to send.
    public var lastSentAt: Date?
    public var finishedAt: Date?
    /// The provider's ID of the message, from the latest answer that carried one.
    public var providerMessageId: String?

    public init(
        delivery: Delivery, transport: TransportID, result: DeliveryResult?, detail: String?,
        suspendedReason: String?, inFlight: Bool, firstSentAt: Date?, lastSentAt: Date?, finishedAt: Date?,
        providerMessageId: String?
    ) {
        self.delivery = delivery
        self.transport = transport
        self.result = result
        self.detail = detail
        self.suspendedReason = suspendedReason
        self.inFlight = inFlight
        self.firstSentAt = firstSentAt
        self.lastSentAt = lastSentAt
        self.finishedAt = finishedAt
        self.providerMessageId = providerMessageId
    }
}

/// What a store knows of one notification's deliveries (``DeliveryReportStore/deliveryTrace(_:id:)``).
public struct NotificationTrace: Sendable, Hashable {
    public var notification: UserNotification
    /// The feed version of its latest publish (or scheduled release): a shoulder tap with this
    /// version or a later one told the device about it.
    public var publishedVersion: Int64
    /// The endpoint that marked it read, and when (the latest such change).
    public var readBy: String?
    public var readAt: Date?
    /// The endpoint that dismissed it, and when (the latest such change).
    public var dismissedBy: String?
    public var dismissedAt: Date?
    /// Its visible and fallback deliveries, and the shoulder taps to the user's endpoints that may
    /// have announced it (those with ``publishedVersion`` or a later version), in outbox order.
    public var deliveries: [DeliveryTrace]

    public init(
        notification: UserNotification, publishedVersion: Int64, readBy: String?, readAt: Date?,
        dismissedBy: String?, dismissedAt: Date?, deliveries: [DeliveryTrace]
    ) {
        self.notification = notification
        self.publishedVersion = publishedVersion
        self.readBy = readBy
        self.readAt = readAt
        self.dismissedBy = dismissedBy
        self.dismissedAt = dismissedAt
        self.deliveries = deliveries
    }
}

/// Where one delivery stands, as a receipt says it.
public struct ReceiptState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Queued or being sent, not answered yet.
    public static let pending = ReceiptState(rawValue: "pending")
    /// The provider took it.
    public static let delivered = ReceiptState(rawValue: "delivered")
    /// A provider or network failure; another attempt is due (``DeliveryReceipt/Attempt/nextAttemptAt``).
    public static let retrying = ReceiptState(rawValue: "retrying")
    /// The provider said the device's token is dead; the endpoint is now inactive.
    public static let gone = ReceiptState(rawValue: "gone")
    /// The provider refused the message; it is not sent again.
    public static let rejected = ReceiptState(rawValue: "rejected")
    /// Parked for a configuration fault (credentials); sent when the hub restarts with it fixed.
    public static let suspended = ReceiptState(rawValue: "suspended")
    /// Attempts or age ran out.
    public static let gaveUp = ReceiptState(rawValue: "gaveUp")
    /// Not needed any more (a newer tap carried the news, the device synced before a fallback, the
    /// notification ended before it went out).
    public static let superseded = ReceiptState(rawValue: "superseded")
    /// No delivery was made to this device (see ``DeliveryReceipt/reason``).
    public static let none = ReceiptState(rawValue: "none")
    public var description: String { rawValue }

    /// The state of `trace`.
    public init(_ trace: DeliveryTrace) {
        switch trace.result {
        case .delivered?: self = .delivered
        case .endpointGone?: self = .gone
        case .rejected?: self = .rejected
        case .gaveUp?: self = .gaveUp
        case .superseded?: self = .superseded
        case let other?: self = ReceiptState(rawValue: other.rawValue)
        case nil:
            if trace.suspendedReason != nil {
                self = .suspended
            } else if !trace.inFlight, trace.delivery.attempts > 0, trace.delivery.lastError != nil {
                self = .retrying
            } else {
                self = .pending
            }
        }
    }
}

/// What became of one notification on one of its user's devices: the delivery that matters most
/// (the latest one enqueued for it: a fallback after its tap), the earlier ones, and what the
/// device itself did (its last sync, and whether it read or dismissed the notification).
public struct DeliveryReceipt: Sendable, Hashable {
    /// One delivery to the device.
    public struct Attempt: Sendable, Hashable {
        public var deliveryId: Int64
        public var kind: DeliveryKind
        public var state: ReceiptState
        /// Sends made so far.
        public var attempts: Int
        /// The last answer: `delivered`, `retry`, `endpointGone`, `rejected`, `suspended`, `gaveUp`,
        /// `superseded`; `nil` before the first.
        public var lastOutcome: String?
        /// The provider's (or the hub's) reason of the last answer.
        public var reason: String?
        public var providerMessageId: String?
        public var enqueuedAt: Date
        /// The first send.
        public var sentAt: Date?
        /// The latest send (after retries: the last one).
        public var lastSentAt: Date?
        /// The failure a retry answered, kept after a later attempt succeeded.
        public var retriedAfter: String?
        /// When the provider took it.
        public var acceptedAt: Date?
        /// When it ended (any result).
        public var finishedAt: Date?
        /// While retrying: when the next attempt is due.
        public var nextAttemptAt: Date?

        public init(_ trace: DeliveryTrace) {
            let state = ReceiptState(trace)
            deliveryId = trace.delivery.id
            kind = trace.delivery.kind
            self.state = state
            attempts = trace.delivery.attempts
            switch state {
            case .pending: lastOutcome = nil
            case .retrying: lastOutcome = "retry"
            case .suspended: lastOutcome = "suspended"
            default: lastOutcome = trace.result?.rawValue
            }
            reason =
                switch state {
                case .pending, .delivered: nil
                case .suspended: trace.suspendedReason
                case .retrying: trace.delivery.lastError
                default: trace.detail ?? trace.delivery.lastError
                }
            providerMessageId = trace.providerMessageId
            enqueuedAt = trace.delivery.createdAt
            sentAt = trace.firstSentAt ?? trace.lastSentAt
            lastSentAt = trace.lastSentAt
            retriedAfter = trace.delivery.attempts > 1 ? trace.delivery.lastError : nil
            acceptedAt = trace.result == .delivered ? trace.finishedAt : nil
            finishedAt = trace.finishedAt
            nextAttemptAt = state == .retrying ? trace.delivery.dueAt : nil
        }
    }

    public var endpointId: String
    public var platform: Platform
    public var transport: TransportID
    public var appDisplayName: String?
    public var endpointState: EndpointState
    /// The latest delivery enqueued for the notification to this device; `nil` for ``ReceiptState/none``.
    public var latest: Attempt?
    /// The deliveries before ``latest``, oldest first (a tap before its fallback).
    public var earlier: [Attempt]
    /// ``latest``'s state, or ``ReceiptState/none``.
    public var state: ReceiptState
    /// With ``ReceiptState/none``: why no delivery was made.
    public var reason: String?
    /// The device's latest feed sync, and whether it came after the notification's latest publish.
    public var lastSyncAt: Date?
    public var syncedSincePublish: Bool
    /// When this device marked the notification read or dismissed it (`nil`: another device did,
    /// or none).
    public var readAt: Date?
    public var dismissedAt: Date?

    /// The receipts of `trace`'s notification, one per endpoint in `endpoints`, in their order.
    /// - Parameters:
    ///   - trace: the notification and its deliveries, as the store read them.
    ///   - endpoints: the user's endpoints, active or not.
    ///   - wakesInProcess: whether a transport reaches its devices in process (polling), with no
    ///     outbox delivery.
    public static func receipts(
        _ trace: NotificationTrace, endpoints: [Endpoint], wakesInProcess: (TransportID) -> Bool
    ) -> [DeliveryReceipt] {
        let notification = trace.notification
        let mine = Dictionary(grouping: trace.deliveries, by: \.delivery.endpointId)
        return endpoints.map { endpoint in
            let rows = Self.rows(
                of: notification, in: mine[endpoint.id] ?? [], publishedVersion: trace.publishedVersion)
            let attempts = rows.map(Attempt.init)
            var receipt = DeliveryReceipt(
                endpointId: endpoint.id, platform: endpoint.platform, transport: endpoint.transport,
                appDisplayName: endpoint.appDisplayName, endpointState: endpoint.state, latest: attempts.last,
                earlier: Array(attempts.dropLast()), state: attempts.last?.state ?? .none, reason: nil,
                lastSyncAt: endpoint.lastSyncAt,
                syncedSincePublish: endpoint.lastSyncAt.map { $0 >= notification.lastPublishedAt } ?? false,
                readAt: trace.readBy == endpoint.id ? trace.readAt : nil,
                dismissedAt: trace.dismissedBy == endpoint.id ? trace.dismissedAt : nil)
            if attempts.isEmpty {
                receipt.reason = Self.noDeliveryReason(notification, endpoint, wakesInProcess: wakesInProcess)
            }
            return receipt
        }
    }

    /// `endpoint`'s deliveries that concern `notification`, in outbox order: its visible and
    /// fallback deliveries, and the first shoulder tap that announced its latest publish (a tap
    /// says "sync your feed", so the first one at or after that version carried the news; one that a
    /// newer tap superseded is passed over for that newer one).
    static func rows(
        of notification: UserNotification, in rows: [DeliveryTrace], publishedVersion: Int64
    ) -> [DeliveryTrace] {
        let own = rows.filter { $0.delivery.kind != .shoulderTap && $0.delivery.notificationId == notification.id }
        let taps = rows.filter { $0.delivery.kind == .shoulderTap && $0.delivery.changeVersion >= publishedVersion }
            .sorted { ($0.delivery.changeVersion, $0.delivery.id) < ($1.delivery.changeVersion, $1.delivery.id) }
        let tap = taps.first { $0.result != .superseded } ?? taps.first
        return (own + (tap.map { [$0] } ?? [])).sorted { $0.delivery.id < $1.delivery.id }
    }

    private static func noDeliveryReason(
        _ notification: UserNotification, _ endpoint: Endpoint, wakesInProcess: (TransportID) -> Bool
    ) -> String {
        if !notification.targetPolicy.includes(endpoint.platform) {
            return "the notification does not target \(endpoint.platform)"
        }
        if wakesInProcess(endpoint.transport) {
            return "the \(endpoint.transport) transport wakes the device in process; see its last sync"
        }
        if notification.status == .scheduled { return "the notification is scheduled and not released yet" }
        if endpoint.registeredAt > notification.lastPublishedAt {
            return "the device registered after the notification was published"
        }
        if endpoint.state == .inactive { return "the endpoint was inactive" }
        return
            "no delivery is on record (finished deliveries are kept for the notification's lifetime and the retention)"
    }
}

extension UserNotification {
    /// When it was last published (its creation, a republish or a scheduled release moves it).
    var lastPublishedAt: Date { max(createdDateTime, scheduledDateTime ?? createdDateTime) }
}
