public import struct Foundation.Date

/// The rules of a delivery once it is in the outbox, once: what each event does to a row.
///
/// The ``DeliveryPlanner`` decides which deliveries a change enqueues; the machine decides what
/// happens to them after that: how a planned tap merges into its endpoint's waiting tap, what a
/// claim, a hand-off, a renewal, an outcome, a released lease, a gone or removed endpoint and a
/// resumption change. It is pure. Stores apply its decisions, in Swift over rows they read
/// anyway or as set-based SQL rendered from its rules (``tapMerge``, ``supersedingMerge``);
/// they never restate a rule of their own. See <doc:DeliveryStates> for the diagram.
public enum OutboxMachine {
    /// Where a delivery is in its life.
    public enum Phase: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Pending and unleased: a claim takes it once it is due.
        case waiting
        /// Pending and leased to an instance that is sending it.
        case leased
        /// Pending but parked for a configuration fault: no claim takes it until the hub starts again.
        case suspended
        /// Done, with a ``DeliveryResult``.
        case finished
        /// Gone from the outbox (its endpoint was removed, or its receipt's retention passed).
        case removed
        public var description: String { rawValue }
    }

    /// What happens to a delivery.
    public enum Event: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// A change planned it (``DeliveryPlanner``): a new row.
        case planned
        /// A newer planned tap merged into this waiting tap.
        case merged
        /// A claim leased it (`attempts + 1`); also a claim that takes over an expired lease.
        case claimed
        /// The publishing instance leased it in the publish's transaction (``HandOff``).
        case handedOff
        /// Its owner extended the lease.
        case renewed
        /// The lease ended without an outcome; it waits for a claim to take it over.
        case leaseExpired
        /// A final outcome: delivered, rejected, given up, or the endpoint was gone.
        case finished
        /// A retry outcome, or its owner restarted (``OutboxStore/releaseLeases(owner:)``): it
        /// waits again.
        case putBack
        /// A tap put back while a newer tap to its endpoint waited: finished as `superseded`,
        /// passing its priority and version on to that tap.
        case superseded
        /// A suspension outcome parked it.
        case suspended
        /// The hub started again (``OutboxStore/resumeSuspended(at:)``), or a newer tap merged into it.
        case resumed
        /// Its endpoint went away: gone at the provider (another delivery's verdict), or inactive
        /// or removed when a claim found it.
        case endpointGone
        /// Its endpoint was removed: pending rows go with it.
        case endpointDeleted
        /// The sweep purged a finished row whose notification expired or went away, after the retention.
        case purged
        public var description: String { rawValue }
    }

    /// One arrow of the state diagram: `event` takes a delivery from `from` to `to`.
    public struct Transition: Sendable, Hashable {
        /// The phase before; `nil` when the event creates the row.
        public var from: Phase?
        /// What happened.
        public var event: Event
        /// The phase after.
        public var to: Phase
        /// - Parameters:
        ///   - from: the phase before (`nil`: the row does not exist yet).
        ///   - event: what happened.
        ///   - to: the phase after.
        public init(_ from: Phase?, _ event: Event, _ to: Phase) {
            self.from = from
            self.event = event
            self.to = to
        }
    }

    /// Every transition a delivery can make. The article <doc:DeliveryStates> shows this table
    /// (a test checks that it does), and ``phase(after:from:)`` answers from it.
    public static let transitions: [Transition] = [
        Transition(nil, .planned, .waiting),
        Transition(nil, .handedOff, .leased),
        Transition(.waiting, .merged, .waiting),
        Transition(.suspended, .merged, .waiting),
        Transition(.waiting, .claimed, .leased),
        Transition(.waiting, .handedOff, .leased),
        Transition(.suspended, .handedOff, .leased),
        Transition(.leased, .renewed, .leased),
        Transition(.leased, .leaseExpired, .waiting),
        Transition(.leased, .claimed, .leased),
        Transition(.leased, .finished, .finished),
        Transition(.leased, .putBack, .waiting),
        Transition(.leased, .superseded, .finished),
        Transition(.leased, .suspended, .suspended),
        Transition(.suspended, .resumed, .waiting),
        Transition(.waiting, .endpointGone, .finished),
        Transition(.leased, .endpointGone, .finished),
        Transition(.suspended, .endpointGone, .finished),
        Transition(.waiting, .endpointDeleted, .removed),
        Transition(.leased, .endpointDeleted, .removed),
        Transition(.suspended, .endpointDeleted, .removed),
        Transition(.finished, .purged, .removed),
    ]

    /// The phase `event` leaves a delivery in that was in `phase`; `nil` when the event does not
    /// apply to it (the store leaves the row alone).
    public static func phase(after event: Event, from phase: Phase?) -> Phase? {
        transitions.first { $0.from == phase && $0.event == event }?.to
    }

    // MARK: Priorities

    /// Claim order of a delivery's priority: higher is sent first. Unknown priorities rank like `none`.
    public static func urgency(_ priority: NotificationPriority) -> Int {
        switch priority {
        case .high: 2
        case .low: 1
        default: 0
        }
    }

    /// The more urgent of two priorities (`current` on a tie).
    public static func higher(_ current: NotificationPriority, _ other: NotificationPriority) -> NotificationPriority {
        urgency(other) > urgency(current) ? other : current
    }

    // MARK: Merging taps

    /// A column of the outbox that a rule decides or reads (a store maps each to its own name).
    public enum Column: String, Sendable, Hashable, CaseIterable {
        case transport, notificationId, changeVersion, priority, urgency, dueAt, suspendedAt, suspendedReason
        case id, state, attempts, leaseOwner, leaseUntil, claimedAt, finishedAt
        case kind, result, detail, lastError, firstSentAt, providerMessageId
    }

    /// How a merge decides one column from the row kept (`current`) and the one merged into it (`incoming`).
    public enum Rule: Sendable, Hashable {
        /// `incoming`'s value when its change version is at least `current`'s: the newest change wins.
        case fromNewerVersion
        /// The greater of the two (versions never go backwards).
        case greatest
        /// `incoming`'s value when its urgency is greater.
        case fromMoreUrgent
        /// The smaller of the two (the earlier due time).
        case least
        /// Cleared: a merged tap is never parked; the lane tries the endpoint again.
        case cleared
    }

    /// How a planned tap merges into its endpoint's waiting (pending, unleased) tap: the tap then
    /// announces the newest version and notification and goes by the endpoint's transport as that
    /// change found it (a device re-registered from APNs to polling gets its tap on the new
    /// transport), keeps the higher priority and the earlier due time, and is un-parked. Stores
    /// render their `ON CONFLICT … DO UPDATE` from this table; ``merge(_:into:)`` applies it to rows
    /// in memory.
    public static let tapMerge: [(column: Column, rule: Rule)] = [
        (.transport, .fromNewerVersion),
        (.notificationId, .fromNewerVersion),
        (.changeVersion, .greatest),
        (.priority, .fromMoreUrgent),
        (.urgency, .greatest),
        (.dueAt, .least),
        (.suspendedAt, .cleared),
        (.suspendedReason, .cleared),
    ]

    /// How a tap put back while a newer tap to its endpoint waits passes on to that tap: its
    /// priority, and its version, notification and transport if newer (the newest change decides
    /// where the tap goes, as in ``tapMerge``; the waiting tap keeps its due time); the waiting
    /// tap is un-parked. Rows put back together (``OutboxStore/releaseLeases(owner:)``) are put
    /// back in the order they were created.
    public static let supersedingMerge: [(column: Column, rule: Rule)] = [
        (.transport, .fromNewerVersion),
        (.notificationId, .fromNewerVersion),
        (.changeVersion, .greatest),
        (.priority, .fromMoreUrgent),
        (.urgency, .greatest),
        (.suspendedAt, .cleared),
        (.suspendedReason, .cleared),
    ]

    /// `rules` as the `SET` list of an SQL `UPDATE` (or `ON CONFLICT … DO UPDATE`) of a row from
    /// another: how a store renders a merge in its dialect.
    /// - Parameters:
    ///   - rules: ``tapMerge``, ``supersedingMerge`` or ``resume``.
    ///   - target: a column's name as the left side of an assignment.
    ///   - current: a column of the row updated, as an expression.
    ///   - incoming: a column of the other row (or bound value), as an expression.
    ///   - greatest: the dialect's two-argument maximum (`MAX`, `GREATEST`).
    ///   - least: the dialect's two-argument minimum (`MIN`, `LEAST`).
    public static func setList(
        _ rules: [(column: Column, rule: Rule)], target: (Column) -> String, current: (Column) -> String,
        incoming: (Column) -> String, greatest: String, least: String
    ) -> String {
        rules.map { column, rule in
            let (mine, other) = (current(column), incoming(column))
            let value =
                switch rule {
                case .fromNewerVersion:
                    "CASE WHEN \(incoming(.changeVersion)) >= \(current(.changeVersion)) THEN \(other) ELSE \(mine) END"
                case .greatest: "\(greatest)(\(mine), \(other))"
                case .fromMoreUrgent:
                    "CASE WHEN \(incoming(.urgency)) > \(current(.urgency)) THEN \(other) ELSE \(mine) END"
                case .least: "\(least)(\(mine), \(other))"
                case .cleared: "NULL"
                }
            return "\(target(column)) = \(value)"
        }
        .joined(separator: ", ")
    }

    /// What a tap row holds that merges decide.
    public struct Tap: Sendable, Hashable {
        /// The transport the row goes by (its lane).
        public var transport: TransportID
        /// The notification the tap announces.
        public var notificationId: String?
        /// The feed version the tap announces.
        public var changeVersion: Int64
        /// Its priority (claim order).
        public var priority: NotificationPriority
        /// When it is due.
        public var dueAt: Date
        /// Parked (``Phase/suspended``).
        public var suspended: Bool

        /// - Parameters:
        ///   - transport: the transport the row goes by.
        ///   - notificationId: the notification it announces.
        ///   - changeVersion: the feed version it announces.
        ///   - priority: its priority.
        ///   - dueAt: when it is due.
        ///   - suspended: whether it is parked.
        public init(
            transport: TransportID, notificationId: String?, changeVersion: Int64, priority: NotificationPriority,
            dueAt: Date, suspended: Bool = false
        ) {
            self.transport = transport
            self.notificationId = notificationId
            self.changeVersion = changeVersion
            self.priority = priority
            self.dueAt = dueAt
            self.suspended = suspended
        }
    }

    /// `incoming` merged into `current` by ``tapMerge``.
    public static func merge(_ incoming: Tap, into current: Tap) -> Tap {
        apply(tapMerge, incoming, into: current)
    }

    /// `putBack` passed on to the waiting tap `current` by ``supersedingMerge``.
    public static func supersede(_ putBack: Tap, into current: Tap) -> Tap {
        apply(supersedingMerge, putBack, into: current)
    }

    private static func apply(_ rules: [(column: Column, rule: Rule)], _ incoming: Tap, into current: Tap) -> Tap {
        var tap = current
        let newer = incoming.changeVersion >= current.changeVersion
        let moreUrgent = urgency(incoming.priority) > urgency(current.priority)
        for (column, rule) in rules {
            switch (column, rule) {
            case (.transport, .fromNewerVersion) where newer: tap.transport = incoming.transport
            case (.notificationId, .fromNewerVersion) where newer: tap.notificationId = incoming.notificationId
            case (.changeVersion, .greatest): tap.changeVersion = max(current.changeVersion, incoming.changeVersion)
            case (.priority, .fromMoreUrgent) where moreUrgent: tap.priority = incoming.priority
            case (.dueAt, .least): tap.dueAt = min(current.dueAt, incoming.dueAt)
            case (.suspendedAt, .cleared): tap.suspended = false
            default: break
            }
        }
        return tap
    }

    // MARK: Putting back

    /// What a put-back (retry, suspension, released lease) of a claimed row does.
    public enum PutBack: Sendable, Hashable {
        /// The row waits again (or is parked, for a suspension): lease cleared.
        case waits
        /// The row is finished as `superseded`; the endpoint's waiting tap takes ``supersede(_:into:)``.
        case supersedes
    }

    /// Whether a row of `kind` put back while its endpoint has another waiting tap (`newerTapWaits`)
    /// waits again or is superseded by that tap.
    public static func putBack(kind: DeliveryKind, newerTapWaits: Bool) -> PutBack {
        kind == .shoulderTap && newerTapWaits ? .supersedes : .waits
    }

    /// The result and detail of a tap superseded by a newer waiting one.
    public static let supersededByNewerTap = (
        result: DeliveryResult.superseded, detail: "A newer tap to the endpoint replaced it."
    )

    // MARK: Outcomes

    /// Whether `change` is recorded before the other outcomes of its batch: a delivery's own final
    /// answer (delivered, rejected, given up, superseded) is recorded first, so that the side
    /// effects of the batch's other outcomes (a gone endpoint supersedes its pending deliveries,
    /// a put-back tap merges into a waiting one) never overwrite what a provider said of a row.
    /// The rest apply in the batch's order.
    public static func isRecordedFirst(_ change: OutboxOutcome.Change) -> Bool {
        if case .finish(let result, _, _) = change { return result != .endpointGone }
        return false
    }

    // MARK: Gone endpoints

    /// The time a provider's "gone" verdict speaks of: its own time, else when the delivery was
    /// claimed (the send happened after that), else when the outcome was recorded.
    public static func verdictTime(goneSince: Date?, claimedAt: Date?, at now: Date) -> Date {
        goneSince ?? claimedAt ?? now
    }

    /// Whether an `endpointGone` outcome deactivates the endpoint: only if it was registered at
    /// or before the verdict's time (a device that registered again after it keeps its endpoint).
    public static func deactivates(registeredAt: Date, goneSince: Date?, claimedAt: Date?, at now: Date) -> Bool {
        registeredAt <= verdictTime(goneSince: goneSince, claimedAt: claimedAt, at: now)
    }

    /// The `inactiveSince` an `endpointGone` outcome records: the provider's time, else the outcome's.
    public static func inactiveSince(goneSince: Date?, at now: Date) -> Date { goneSince ?? now }

    /// The result and detail of the other pending deliveries of an endpoint that became inactive.
    public static let supersededByGoneEndpoint = (
        result: DeliveryResult.superseded, detail: "The endpoint became inactive."
    )

    /// The result and detail of a row a claim found with its endpoint removed or inactive.
    public static let supersededAtClaim = (
        result: DeliveryResult.superseded, detail: "The endpoint was removed or is inactive."
    )

    // MARK: Resuming

    /// How a parked row is un-parked when the hub starts again, from the time it starts
    /// (`incoming`'s `dueAt`): due at once at the latest, suspension cleared. Stores render their
    /// `UPDATE` from this table.
    public static let resume: [(column: Column, rule: Rule)] = [
        (.dueAt, .least),
        (.suspendedAt, .cleared),
        (.suspendedReason, .cleared),
    ]

    // MARK: Webhook events

    /// Which webhook events a claim may take: the oldest pending event (smallest ID) of each app,
    /// user and webhook, and none behind it. An event being sent, retried (waiting for its back-off)
    /// or parked holds back the later events of its user for that webhook, so a receiver hears
    /// each user's events in the order they happened, while other users' events go on. Events are
    /// never merged or superseded; every other rule of the outbox applies to them as to any row.
    ///
    /// Rendered for a store as a condition on the candidate row `row`: no pending row of `table`
    /// with the same app, user and endpoint (the webhook) and a smaller ID.
    /// - Parameters:
    ///   - table: the outbox table's name.
    ///   - row: the candidate row's alias (or table name) in the claim's query.
    ///   - column: a logical column's name in the store's dialect: `appId`, `userId`,
    ///     `endpointId`, `state`, `id`.
    public static func webhookOrder(table: String, row: String, column: (String) -> String) -> String {
        let (app, user, endpoint, state, id) = (
            column("appId"), column("userId"), column("endpointId"), column("state"), column("id")
        )
        return """
            NOT EXISTS (SELECT 1 FROM \(table) AS older WHERE older.\(app) = \(row).\(app) \
            AND older.\(user) = \(row).\(user) AND older.\(endpoint) = \(row).\(endpoint) \
            AND older.\(state) = 'pending' AND older.\(id) < \(row).\(id))
            """
    }
}
