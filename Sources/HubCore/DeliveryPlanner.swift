public import struct Foundation.Date

/// The delivery rules, once: which deliveries a change of a notification puts in the outbox.
///
/// The planner is pure. A store calls it inside the transaction that changes the notification,
/// with the user's endpoints as that transaction reads them, and persists what it returns; stores
/// never re-derive these rules in SQL or code of their own.
///
/// The rules:
/// - Only active endpoints get deliveries, and none whose transport wakes its devices in-process
///   (``inProcessTransports``, those declaring ``TransportCapabilities/wakesInProcess``): the hub wakes those after the commit.
/// - Every change reaches only the endpoints whose platform the notification's `targetPolicy`
///   includes (the others never see it in their feeds); a state change skips the endpoint that
///   made it.
/// - A publish in visible mode whose payload has `visualContent` gets one `visible` delivery per
///   endpoint. Everything else is a shoulder tap, which coalesces with the endpoint's pending tap
///   (``PlannedDelivery/coalesces``).
/// - A `scheduled` notification gets nothing, nor its deletion before its time: devices never saw
///   it. Its release at `scheduledDateTime` is a `published` change.
/// - A high-priority publish with a `fallbackPolicy` that is tapped also gets a `fallback`
///   delivery per endpoint of the policy's platforms, due when the policy's timeout has passed.
/// - A state change of a notification of an app with badges (``badgeApps``) taps the other
///   endpoints ``badgeUpdateWindow`` later, so that a burst of reads merges into one badge update.
///
/// ```swift
/// let plan = DeliveryPlanner(transports: transports).plan(notification, .published(mode: .shoulderTap),
///                                          endpoints: endpoints, now: now)
/// ```
public struct DeliveryPlanner: Sendable, Hashable {
    /// Transports whose devices the hub wakes itself (long-poll, server-sent events): no outbox rows.
    public var inProcessTransports: Set<TransportID>
    /// Apps whose pushes carry the user's badge (``DeliveryPolicy/badge``): their state-change
    /// taps are due ``badgeUpdateWindow`` after the change, so that a burst of reads or dismissals
    /// merges into one tap (one badge update) per endpoint.
    public var badgeApps: Set<String>

    /// How long a state-change tap of a badge app waits for more changes to merge into it. The
    /// merged tap keeps the earliest due time (``OutboxMachine/tapMerge``), so the other devices'
    /// badges are at most this late, and a burst of changes sends one update per endpoint per window.
    public static let badgeUpdateWindow: Double = 0.25

    /// - Parameters:
    ///   - inProcessTransports: transports whose devices the hub wakes itself.
    ///   - badgeApps: apps whose state-change taps wait ``badgeUpdateWindow`` to coalesce.
    public init(inProcessTransports: Set<TransportID>, badgeApps: Set<String> = []) {
        self.inProcessTransports = inProcessTransports
        self.badgeApps = badgeApps
    }

    /// The default of store calls made without a planner (store tests and tools): it treats the
    /// transport named `polling` as in-process, as a hub with the first-party polling plugin does.
    /// A ``Hub`` plans with ``init(transports:badgeApps:)``.
    public static let standard = DeliveryPlanner(inProcessTransports: [TransportID("polling")])

    /// The planner of a hub with `transports`: those that declare
    /// ``TransportCapabilities/wakesInProcess`` get no outbox rows.
    /// - Parameters:
    ///   - transports: the hub's transports.
    ///   - badgeApps: apps whose state-change taps wait ``badgeUpdateWindow`` to coalesce.
    public init(transports: [any Transport], badgeApps: Set<String> = []) {
        self.init(
            inProcessTransports: Set(transports.filter { $0.capabilities.contains(.wakesInProcess) }.map(\.id)),
            badgeApps: badgeApps)
    }

    /// What happened to a notification.
    public enum Change: Sendable, Hashable {
        /// Created or updated by its publisher, sent in `mode` (the app default or the publish's override).
        case published(mode: DeliveryMode)
        /// A device changed its read or action state; `except` is that device's endpoint.
        case stateChanged(except: String?)
        /// Deleted by its publisher.
        case deleted
        /// Past its expiration.
        case expired
    }

    /// The deliveries `change` of `notification` needs, in endpoint order.
    ///
    /// - Parameters:
    ///   - notification: the notification as the change leaves it (new change version).
    ///   - change: what happened to it.
    ///   - endpoints: the user's endpoints (any state; inactive ones are skipped).
    ///   - now: when the change commits; deliveries are due then, fallbacks later.
    public func plan(
        _ notification: UserNotification, _ change: Change, endpoints: [Endpoint], now: Date
    ) -> [PlannedDelivery] {
        // Devices see nothing of a scheduled notification (``NotificationView``) until the sweep
        // releases it (a `published` change of the then active notification), nor its cancellation.
        if notification.status == .scheduled || NotificationView.cancelledBeforeRelease(notification) { return [] }
        var planned: [PlannedDelivery] = []
        planned.reserveCapacity(endpoints.count)
        for endpoint in endpoints where receives(endpoint, change, notification) {
            switch change {
            case .published(let mode):
                if mode == .visible && notification.payload.visualContent != nil {
                    planned.append(PlannedDelivery(endpoint, .visible, dueAt: now))
                    continue
                }
                planned.append(PlannedDelivery(endpoint, .shoulderTap, dueAt: now))
                if notification.priority == .high, let policy = notification.fallbackPolicy,
                    policy.includes(endpoint.platform)
                {
                    let due = now.addingTimeInterval(Double(policy.timeoutSeconds))
                    planned.append(PlannedDelivery(endpoint, .fallback, dueAt: due))
                }
            case .stateChanged where badgeApps.contains(notification.appId):
                planned.append(
                    PlannedDelivery(endpoint, .shoulderTap, dueAt: now.addingTimeInterval(Self.badgeUpdateWindow)))
            case .stateChanged, .deleted, .expired:
                planned.append(PlannedDelivery(endpoint, .shoulderTap, dueAt: now))
            }
        }
        return planned
    }

    /// Whether `endpoint` gets anything for `change`: only endpoints of the targeted platforms, as
    /// only they show the notification in their feeds (``NotificationView``).
    private func receives(_ endpoint: Endpoint, _ change: Change, _ notification: UserNotification) -> Bool {
        guard endpoint.state == .active, !inProcessTransports.contains(endpoint.transport),
            notification.targetPolicy.includes(endpoint.platform)
        else { return false }
        if case .stateChanged(let except) = change { return endpoint.id != except }
        return true
    }
}

/// One delivery a store must enqueue: to one endpoint, of one kind, due at one time. The rest
/// (notification, version, priority) comes from the notification the plan is for.
public struct PlannedDelivery: Sendable, Hashable {
    public var endpointId: String
    public var transport: TransportID
    public var kind: DeliveryKind
    public var dueAt: Date

    public init(endpointId: String, transport: TransportID, kind: DeliveryKind, dueAt: Date) {
        self.endpointId = endpointId
        self.transport = transport
        self.kind = kind
        self.dueAt = dueAt
    }

    init(_ endpoint: Endpoint, _ kind: DeliveryKind, dueAt: Date) {
        self.init(endpointId: endpoint.id, transport: endpoint.transport, kind: kind, dueAt: dueAt)
    }

    /// Whether the delivery merges into the endpoint's pending, unleased tap instead of adding a
    /// row: the merged tap announces the newest version and notification, keeps the higher
    /// priority and the earlier due time. Its coalescing key is (app, user, endpoint): taps of
    /// distinct users or endpoints never merge.
    public var coalesces: Bool { kind == .shoulderTap }
}
