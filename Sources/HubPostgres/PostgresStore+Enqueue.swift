import Foundation
import HubCore
import Logging
import PostgresNIO

// Persisting delivery plans: called inside the transactions that change a notification, with its
// feed locked. Which deliveries a change needs is the `DeliveryPlanner`'s decision alone (target
// platforms, tap or visible, fallbacks, no rows for in-process transports such as polling); the
// store reads the user's endpoints in the transaction, asks the planner, and writes exactly the
// plan, in one statement.
extension PostgresStore {
    /// One planned delivery with the notification it is for: a row of the outbox to write.
    struct OutboxRow: Sendable {
        var appId: String
        var userId: String
        var endpointId: String
        var transport: String
        var kind: String
        var notificationId: String
        var changeVersion: Int64
        var priority: String
        var urgency: Int16
        var dueAt: Date
        /// Merges into the endpoint's pending, unleased tap (``HubCore/PlannedDelivery/coalesces``).
        var coalesces: Bool

        init(_ planned: PlannedDelivery, of notification: UserNotification) {
            appId = notification.appId
            userId = notification.userId
            endpointId = planned.endpointId
            transport = planned.transport.rawValue
            kind = planned.kind.rawValue
            notificationId = notification.id
            changeVersion = notification.changeVersion
            priority = notification.priority.rawValue
            urgency = notification.priority.urgency
            dueAt = planned.dueAt
            coalesces = planned.coalesces
        }

        /// What ``HubCore/OutboxMachine``'s tap merges decide of this row (never parked).
        var tap: OutboxMachine.Tap {
            get {
                OutboxMachine.Tap(
                    transport: TransportID(transport), notificationId: notificationId, changeVersion: changeVersion,
                    priority: NotificationPriority(rawValue: priority), dueAt: dueAt)
            }
            set {
                transport = newValue.transport.rawValue
                notificationId = newValue.notificationId ?? notificationId
                changeVersion = newValue.changeVersion
                priority = newValue.priority.rawValue
                urgency = newValue.priority.urgency
                dueAt = newValue.dueAt
            }
        }
    }

    /// Plans the deliveries `change` of `notification` needs for `endpoints` and writes them.
    /// (Publishes write their plan with the notification, in `PostgresStore+Publish.swift`.)
    static func enqueue(
        _ notification: UserNotification, _ change: DeliveryPlanner.Change, endpoints: [Endpoint],
        planner: DeliveryPlanner, now: Date, on db: Session
    ) async throws {
        let plan = OutboxMachine.creationOrder(planner.plan(notification, change, endpoints: endpoints, now: now))
        try await enqueue(plan.map { OutboxRow($0, of: notification) }, now: now, on: db)
    }

    /// Writes `rows` to the outbox in one statement (nothing when empty), new rows created in the
    /// order of `rows` (``HubCore/OutboxMachine/creationOrder(_:)`` of each plan).
    ///
    /// Rows that coalesce merge into their endpoint's pending, unleased tap through the partial
    /// unique index `hub_delivery_pending_tap` (`ON CONFLICT … DO UPDATE`): the tap then announces
    /// the newest version and notification, keeps the higher priority and the earlier due time,
    /// and goes by the endpoint's current transport; a parked (suspended) tap is un-parked, so the
    /// lane tries it again. Coalescing rows to one endpoint are merged
    /// here first, because one `INSERT … ON CONFLICT DO UPDATE` cannot update a row twice (a sweep
    /// expires several notifications of one feed at once). The other rows (visible, fallback)
    /// go through the same upsert: they are not taps, so they never conflict.
    /// - Returns: the IDs and due times of the rows written (inserted or merged into).
    @discardableResult
    static func enqueue(_ rows: [OutboxRow], now: Date, on db: Session) async throws -> [(id: Int64, dueAt: Date)] {
        guard !rows.isEmpty else { return [] }
        let rows = coalesced(rows)
        var binds = PostgresBindings(capacity: 12)
        binds.append(rows.map(\.appId))
        binds.append(rows.map(\.userId))
        binds.append(rows.map(\.endpointId))
        binds.append(rows.map(\.transport))
        binds.append(rows.map(\.kind))
        binds.append(rows.map(\.notificationId))
        binds.append(rows.map(\.changeVersion))
        binds.append(rows.map(\.priority))
        binds.append(rows.map(\.urgency))
        binds.append(rows.map(\.dueAt))
        binds.append(rows.map(\.coalesces))
        binds.append(now)
        return try await db.run(Enqueue.self, binds).map { row in
            let (id, dueAt) = try row.decode((Int64, Date).self)
            return (id, dueAt)
        }
    }

    /// `rows` with the coalescing rows of each endpoint merged into one, the way the database
    /// merges a tap into a pending one; the order of first appearance is kept.
    static func coalesced(_ rows: [OutboxRow]) -> [OutboxRow] {
        var merged: [OutboxRow] = []
        merged.reserveCapacity(rows.count)
        var index: [RowKey: Int] = [:]
        for row in rows {
            guard row.coalesces else {
                merged.append(row)
                continue
            }
            let key = RowKey(row.appId, row.userId, row.endpointId)
            guard let at = index[key] else {
                index[key] = merged.count
                merged.append(row)
                continue
            }
            merged[at].tap = OutboxMachine.merge(row.tap, into: merged[at].tap)
        }
        return merged
    }

    /// The one statement that writes a plan: taps upsert, the rest insert; it returns the ID and
    /// due time of each row written. It writes into the pending partition, whose index
    /// `hub_delivery_pending_tap` finds the conflict (`PostgresStore+Partitions.swift`).
    enum Enqueue: NamedStatement {
        static let name = "hub_enqueue"
        static let sql = enqueueSQL
    }

    static let enqueueSQL = """
        WITH planned AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                $7::bigint[], $8::text[], $9::smallint[], $10::timestamptz[], $11::boolean[]) WITH ORDINALITY
                AS p(app_id, user_id, endpoint_id, transport, kind, notification_id, change_version, priority,
                    urgency, due_at, coalesces, position)
        )
        INSERT INTO hub_delivery_pending AS d (app_id, user_id, endpoint_id, transport, kind, notification_id,
            change_version, priority, urgency, state, created_at, due_at)
        SELECT app_id, user_id, endpoint_id, transport, kind, notification_id, change_version, priority, urgency,
            'pending', $12, due_at
        FROM planned ORDER BY position
        ON CONFLICT (app_id, user_id, endpoint_id) WHERE \(DeliveryColumns.waitingTap)
        DO UPDATE SET
            \(DeliveryColumns.tapMerge)
        RETURNING d.id, d.due_at
        """
}

/// (app, user, id): the key of an endpoint or a notification row.
struct RowKey: Hashable {
    let appId: String
    let userId: String
    let id: String
    init(_ appId: String, _ userId: String, _ id: String) {
        self.appId = appId
        self.userId = userId
        self.id = id
    }
}
