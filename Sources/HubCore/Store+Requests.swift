public import struct Foundation.Date

/// Deliveries leased to the instance that makes a change, in the change's own transaction.
///
/// The dispatcher of the instance that publishes has the notification and the user's endpoints
/// at hand when the publish commits: with a hand-off the store leases the deliveries the publish
/// makes due at once (exactly as a claim at `now` would: `attempts + 1`, lease to `owner` until
/// `leaseUntil`) and returns them with their endpoints and notification, so they go to the
/// transport without a claim (one transaction, and one commit, fewer per publish). A tap merged
/// into the endpoint's pending tap is handed off as that row. Deliveries due later (fallbacks),
/// and those of other transports, stay in the outbox for a claim.
public struct HandOff: Sendable, Hashable {
    /// The instance (dispatcher) that takes the leases.
    public var owner: String
    public var leaseUntil: Date
    /// The transports whose deliveries the owner takes now (its lanes with room).
    public var transports: Set<TransportID>

    public init(owner: String, leaseUntil: Date, transports: Set<TransportID>) {
        self.owner = owner
        self.leaseUntil = leaseUntil
        self.transports = transports
    }
}

extension HandOff {
    /// The rows a store leased for a hand-off, each with what a send needs: its endpoint (one of
    /// `endpoints`, those the plan was made for) and `notification` when the row announces it. A
    /// row whose endpoint is not among them is left out (its lease ends and a claim takes it).
    public static func claimed(
        _ leased: [Delivery], endpoints: [Endpoint], notification: UserNotification
    ) -> [ClaimedDelivery] {
        let byId = Dictionary(endpoints.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return leased.compactMap { delivery in
            byId[delivery.endpointId].map {
                ClaimedDelivery(
                    delivery: delivery, endpoint: $0,
                    notification: delivery.notificationId == notification.id ? notification : nil)
            }
        }
    }
}

/// What a publish stored.
public struct PublishResult: Sendable {
    public var notification: UserNotification
    /// `false`: an existing notification was updated.
    public var created: Bool
    /// The deliveries leased to the request's ``HandOff`` owner (empty without one).
    public var handedOff: [ClaimedDelivery]
    /// How many deliveries due at once the publish left in the outbox for a claim (not handed
    /// off); `nil` when the store does not say.
    public var leftForClaim: Int?

    public init(
        notification: UserNotification, created: Bool, handedOff: [ClaimedDelivery] = [], leftForClaim: Int? = nil
    ) {
        self.notification = notification
        self.created = created
        self.handedOff = handedOff
        self.leftForClaim = leftForClaim
    }
}

/// A publish as the store takes it: validated, with IDs and times filled in.
public struct PublishRequest: Sendable {
    public var key: FeedKey
    public var draft: NotificationDraft
    /// Used if the notification is new.
    public var newId: String
    public var expirationDateTime: Date
    /// The delivery mode after the app default and the per-publish override.
    public var deliveryMode: DeliveryMode
    public var now: Date
    /// Plans the deliveries the publish enqueues.
    public var planner: DeliveryPlanner
    /// Leases the deliveries due at once to the publishing instance (see ``HandOff``).
    public var handOff: HandOff?

    public init(
        key: FeedKey, draft: NotificationDraft, newId: String, expirationDateTime: Date, deliveryMode: DeliveryMode,
        now: Date, planner: DeliveryPlanner = .standard, handOff: HandOff? = nil
    ) {
        self.planner = planner
        self.handOff = handOff
        self.key = key
        self.draft = draft
        self.newId = newId
        self.expirationDateTime = expirationDateTime
        self.deliveryMode = deliveryMode
        self.now = now
    }
}

/// A device's change of a notification's state (universal dismiss).
public struct StateChange: Sendable {
    public var key: FeedKey
    /// The hub's ID or the `appNotificationId`.
    public var id: String
    public var readState: ReadState?
    public var userActionState: UserActionState?
    /// The endpoint that made the change; it is not tapped back.
    public var exceptEndpoint: String?
    public var now: Date
    /// Plans the taps the change enqueues.
    public var planner: DeliveryPlanner

    public init(
        key: FeedKey, id: String, readState: ReadState?, userActionState: UserActionState?,
        exceptEndpoint: String?, now: Date, planner: DeliveryPlanner = .standard
    ) {
        self.planner = planner
        self.key = key
        self.id = id
        self.readState = readState
        self.userActionState = userActionState
        self.exceptEndpoint = exceptEndpoint
        self.now = now
    }
}
