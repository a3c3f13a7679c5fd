import Foundation
import GRDB
import HubCore

// Writing delivery plans (inside the write transactions that change a notification) and the
// outbox rows they touch: the endpoint's pending tap, finishing or removing an endpoint's rows.

extension SQLiteStore {
    /// The endpoint's pending, unleased shoulder tap, if any (at most one, by a unique index).
    static func pendingTap(_ db: Database, endpointOf record: DeliveryRecord) throws -> DeliveryRecord? {
        try DeliveryRecord.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT * FROM delivery
                    WHERE appId = ? AND userId = ? AND endpointId = ?
                        AND state = 'pending' AND kind = 'shoulderTap' AND leaseOwner IS NULL
                    """),
            arguments: [record.appId, record.userId, record.endpointId])
    }

    /// What ``enqueue(_:_:_:now:_:handOff:)`` did with the deliveries due at once.
    struct Enqueued {
        var handedOff: [ClaimedDelivery] = []
        /// Due at once and left in the outbox for a claim.
        var leftForClaim = 0
    }

    /// Plans `change` of `notification` for the user's active endpoints with `planner` and
    /// persists the plan in one statement per due time: taps merge into their endpoint's pending,
    /// unleased tap (newest version and notification, the higher priority, the earlier due time;
    /// a parked tap is un-parked, so the lane tries it again);
    /// visible and fallback deliveries are new rows. With a `handOff`, the rows due at once whose
    /// transport it names are then leased to its owner, as a claim would (one more statement).
    @discardableResult
    static func enqueue(
        _ planner: DeliveryPlanner, _ notification: UserNotification, _ change: DeliveryPlanner.Change, now: Date,
        _ db: Database, handOff: HandOff? = nil
    ) throws -> Enqueued {
        let key = FeedKey(appId: notification.appId, userId: notification.userId)
        let endpoints = try activeEndpoints(db, key)
        let plan = planner.plan(notification, change, endpoints: endpoints, now: now)
        var dueNow: [Int64] = []
        // One statement per due time (a plan has one or two: now, and its fallbacks' time).
        for (dueAt, planned) in Dictionary(grouping: plan, by: \.dueAt) {
            let rows = JSONText.array(
                planned.map {
                    JSONText.array([
                        JSONText.string($0.endpointId), JSONText.string($0.transport.rawValue),
                        JSONText.string($0.kind.rawValue),
                    ])
                })
            let n = notification
            let ids = try Int64.fetchAll(
                db.cachedStatement(
                    sql: """
                        INSERT INTO delivery (appId, userId, endpointId, transport, kind, notificationId, changeVersion,
                            priority, urgency, state, attempts, createdAt, dueAt)
                        SELECT ?, ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
                            ?, ?, ?, ?, 'pending', 0, ?, ?
                        FROM json_each(?) WHERE true
                        ON CONFLICT (appId, userId, endpointId)
                            WHERE state = 'pending' AND kind = 'shoulderTap' AND leaseOwner IS NULL
                        DO UPDATE SET changeVersion = excluded.changeVersion, notificationId = excluded.notificationId,
                            suspendedAt = NULL, suspendedReason = NULL,
                            priority = CASE WHEN excluded.urgency > urgency THEN excluded.priority ELSE priority END,
                            urgency = MAX(urgency, excluded.urgency), dueAt = MIN(dueAt, excluded.dueAt)
                        RETURNING id
                        """),
                arguments: [
                    n.appId, n.userId, n.id, n.changeVersion, n.priority.rawValue, n.priority.urgency,
                    now.canonical.storedSeconds, dueAt.canonical.storedSeconds, rows,
                ])
            if dueAt <= now { dueNow += ids }
        }
        guard let handOff, !dueNow.isEmpty else { return Enqueued(leftForClaim: dueNow.count) }
        let leased = try DeliveryRecord.fetchAll(
            db.cachedStatement(
                sql: """
                    UPDATE delivery SET leaseOwner = ?, leaseUntil = ?, claimedAt = ?, attempts = attempts + 1
                    WHERE id IN (SELECT value FROM json_each(?)) AND +state = 'pending' AND leaseOwner IS NULL
                        AND transport IN (SELECT value FROM json_each(?))
                    RETURNING *
                    """),
            arguments: [
                handOff.owner, handOff.leaseUntil.canonical.storedSeconds, now.canonical.storedSeconds,
                JSONText.array(dueNow.map(JSONText.number)),
                JSONText.array(handOff.transports.map { JSONText.string($0.rawValue) }),
            ])
        let handedOff = HandOff.claimed(
            leased.map(\.delivery), endpoints: endpoints, notification: Self.canonical(notification))
        return Enqueued(handedOff: handedOff, leftForClaim: dueNow.count - handedOff.count)
    }

    /// Finishes every pending delivery of `endpoint` with `result`.
    static func finishPendingDeliveries(
        _ db: Database, of endpoint: Endpoint, result: DeliveryResult, detail: String?, at now: Date
    ) throws {
        try db.cachedStatement(
            sql: """
                UPDATE delivery
                SET state = 'finished', result = ?, detail = ?, finishedAt = ?, leaseOwner = NULL, leaseUntil = NULL
                WHERE appId = ? AND userId = ? AND endpointId = ? AND state = 'pending'
                """
        ).execute(arguments: [result.rawValue, detail, now.storedSeconds, endpoint.appId, endpoint.userId, endpoint.id])
    }

    /// Removes every pending delivery of an endpoint (the endpoint is being removed).
    static func deletePendingDeliveries(_ db: Database, of key: FeedKey, endpointId: String) throws {
        try db.cachedStatement(
            sql: "DELETE FROM delivery WHERE appId = ? AND userId = ? AND endpointId = ? AND state = 'pending'"
        ).execute(arguments: [key.appId, key.userId, endpointId])
    }
}

extension DeliveryRecord {
    /// Un-parks a suspended row: a newer tap merged into it, so the lane tries it again.
    mutating func resume() {
        suspendedAt = nil
        suspendedReason = nil
    }

    /// Marks the row finished with `result`; the lease ends.
    mutating func finish(_ result: DeliveryResult, detail: String?, at now: Date) {
        state = .finished
        self.result = result
        self.detail = detail
        finishedAt = now
        leaseOwner = nil
        leaseUntil = nil
    }
}
