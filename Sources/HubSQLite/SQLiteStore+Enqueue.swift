import Foundation
import GRDB
import HubCore

// Writing delivery plans (inside the write transactions that change a notification) and the
// outbox rows they touch: the endpoint's pending tap, finishing or removing an endpoint's rows.

extension SQLiteStore {
    /// Which row is its endpoint's waiting tap (``OutboxMachine/waitingTapSQL(_:)``): the
    /// predicate of the unique partial index the tap upsert's `ON CONFLICT` names.
    static let waitingTapSQL = OutboxMachine.waitingTapSQL(\.rawValue)

    /// The endpoint's pending, unleased shoulder tap, if any (at most one, by a unique index).
    static func pendingTap(_ db: Database, endpointOf record: DeliveryRecord) throws -> DeliveryRecord? {
        try DeliveryRecord.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT * FROM delivery
                    WHERE appId = ? AND userId = ? AND endpointId = ? AND \(waitingTapSQL)
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
    /// persists the plan in one statement per due time, its rows in
    /// ``OutboxMachine/creationOrder(_:)``: taps merge into their endpoint's pending, unleased tap
    /// (``OutboxMachine/tapMerge``); visible and fallback deliveries are new rows. With a
    /// `handOff`, the rows due at once that ``OutboxMachine/handsOff(dueAt:transport:to:at:)``
    /// picks are leased to its owner, as a claim would lease them: a new row is inserted leased
    /// in the same statement (the ``Delivery`` values are made here, not read back); a tap that
    /// merged into a waiting one (``OutboxMachine/mergesOnWrite(coalesces:handedOff:tapWaits:)``)
    /// is leased after the merge (one more statement).
    @discardableResult
    static func enqueue(
        _ planner: DeliveryPlanner, _ notification: UserNotification, _ change: DeliveryPlanner.Change, now: Date,
        _ db: Database, handOff: HandOff? = nil
    ) throws -> Enqueued {
        let key = FeedKey(appId: notification.appId, userId: notification.userId)
        let endpoints = try activeEndpoints(db, key)
        let plan = OutboxMachine.creationOrder(planner.plan(notification, change, endpoints: endpoints, now: now))
        let hands: (PlannedDelivery) -> Bool = {
            OutboxMachine.handsOff(dueAt: $0.dueAt, transport: $0.transport, to: handOff, at: now)
        }
        // Only this transaction writes, so the read holds. A leased tap is outside the index that
        // finds waiting ones: inserted leased, it merges with nothing.
        let waiting = plan.contains { $0.coalesces && hands($0) } ? try waitingTaps(db, key) : []
        let insertsLeased: (PlannedDelivery) -> Bool = {
            hands($0)
                && !OutboxMachine.mergesOnWrite(
                    coalesces: $0.coalesces, handedOff: true, tapWaits: waiting.contains($0.endpointId))
        }
        var mergedDueNow: [Int64] = []
        var leftForClaim = 0
        var leased: [Delivery] = []
        // One statement per due time (a plan has one or two: now, and its fallbacks' time).
        var groups: [(dueAt: Date, rows: [PlannedDelivery])] = []
        for row in plan {
            if groups.last?.dueAt == row.dueAt {
                groups[groups.count - 1].rows.append(row)
            } else {
                groups.append((row.dueAt, [row]))
            }
        }
        for (dueAt, planned) in groups {
            var leasing = planned.map(insertsLeased)
            let direct = zip(planned, leasing).filter(\.1).map {
                DirectKey(endpointId: $0.0.endpointId, kind: $0.0.kind)
            }
            if Set(direct).count != direct.count {
                // Not in a plan today: their IDs could not be matched back; a claim takes them.
                leasing = planned.map { _ in false }
            }
            let written = try upsert(
                planned, leasing: leasing, of: notification, dueAt: dueAt, now: now, handOff: handOff, db)
            leased += written.leased
            guard dueAt <= now else { continue }
            if handOff != nil && zip(planned, leasing).contains(where: { hands($0.0) && !$0.1 }) {
                mergedDueNow += written.waiting
            } else {
                leftForClaim += written.waiting.count
            }
        }
        if let handOff, !mergedDueNow.isEmpty {
            let merged = try DeliveryRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE delivery SET \(leaseSQL)
                        WHERE id IN (SELECT value FROM json_each(?)) AND +state = 'pending' AND leaseOwner IS NULL
                            AND transport IN (SELECT value FROM json_each(?))
                        RETURNING *
                        """),
                arguments: [
                    handOff.owner, handOff.leaseUntil.canonical.storedSeconds, now.canonical.storedSeconds,
                    JSONText.array(mergedDueNow.map(JSONText.number)),
                    JSONText.array(handOff.transports.map { JSONText.string($0.rawValue) }),
                ])
            leased += merged.map(\.delivery)
            leftForClaim += mergedDueNow.count - merged.count
        }
        let handedOff =
            leased.isEmpty
            ? [] : HandOff.claimed(leased, endpoints: endpoints, notification: Self.canonical(notification))
        return Enqueued(handedOff: handedOff, leftForClaim: leftForClaim)
    }

    /// ``OutboxMachine/leaseSQL(target:current:owner:until:now:)`` with the owner, the lease's
    /// end and the claim's time bound in that order.
    static let leaseSQL = OutboxMachine.leaseSQL(
        target: \.rawValue, current: \.rawValue, owner: "?", until: "?", now: "?")

    /// The `SET` list of the tap upsert: ``OutboxMachine/tapMerge`` with `excluded` the planned tap.
    static let tapMergeSQL = mergeSQL(OutboxMachine.tapMerge) { "excluded.\($0.rawValue)" }

    /// `rules` (``OutboxMachine/setList(_:target:current:incoming:greatest:least:)``) as the `SET`
    /// list of an update of a delivery row (its columns unqualified), the other row's columns (or
    /// bound values) named by `incoming`.
    static func mergeSQL(
        _ rules: [(column: OutboxMachine.Column, rule: OutboxMachine.Rule)],
        incoming: (OutboxMachine.Column) -> String
    ) -> String {
        OutboxMachine.setList(
            rules, target: \.rawValue, current: \.rawValue, incoming: incoming, greatest: "MAX", least: "MIN")
    }

    /// The endpoints of `key` with a pending, unleased tap (found by the unique partial index).
    private static func waitingTaps(_ db: Database, _ key: FeedKey) throws -> Set<String> {
        Set(
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT endpointId FROM delivery WHERE appId = ? AND userId = ? AND \(waitingTapSQL)
                        """),
                arguments: [key.appId, key.userId]))
    }

    /// Writes `planned` (due at `dueAt`) in their order: those `leasing` marks are inserted
    /// leased to `handOff`'s owner as a claim at `now` would lease them; the others are inserted
    /// waiting, each tap merging into its endpoint's waiting tap (a leased row is outside the
    /// index the conflict is found by, so it never merges).
    /// - Returns: the rows leased (their ``Delivery`` values made from what was inserted, matched
    ///   to the returned IDs by endpoint and kind, unique among them), and the IDs of the others,
    ///   new or merged into.
    private static func upsert(
        _ planned: [PlannedDelivery], leasing: [Bool], of n: UserNotification, dueAt: Date, now: Date,
        handOff: HandOff?, _ db: Database
    ) throws -> (leased: [Delivery], waiting: [Int64]) {
        let leasedAttempts = OutboxMachine.attempts(afterLease: 0)
        let written = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    INSERT INTO delivery (appId, userId, endpointId, transport, kind, notificationId, changeVersion,
                        priority, urgency, state, attempts, createdAt, dueAt, leaseOwner, leaseUntil, claimedAt)
                    SELECT ?1, ?2, json_extract(value, '$[0]'), json_extract(value, '$[1]'),
                        json_extract(value, '$[2]'), ?3, ?4, ?5, ?6, 'pending',
                        CASE WHEN json_extract(value, '$[3]') THEN ?7 ELSE 0 END, ?8, ?9,
                        CASE WHEN json_extract(value, '$[3]') THEN ?10 END,
                        CASE WHEN json_extract(value, '$[3]') THEN ?11 END,
                        CASE WHEN json_extract(value, '$[3]') THEN ?8 END
                    FROM json_each(?12) WHERE true
                    ON CONFLICT (appId, userId, endpointId) WHERE \(waitingTapSQL)
                    DO UPDATE SET \(tapMergeSQL)
                    RETURNING id, endpointId, kind, leaseOwner IS NOT NULL
                    """),
            arguments: [
                n.appId, n.userId, n.id, n.changeVersion, n.priority.rawValue, n.priority.urgency, leasedAttempts,
                now.canonical.storedSeconds, dueAt.canonical.storedSeconds, handOff?.owner,
                handOff?.leaseUntil.canonical.storedSeconds, rows(planned, leasing: leasing),
            ])
        var ids: [DirectKey: Int64] = [:]
        var waiting: [Int64] = []
        for row in written {
            if row[3] {
                ids[DirectKey(endpointId: row[1], kind: DeliveryKind(rawValue: row[2]))] = row[0]
            } else {
                waiting.append(row[0])
            }
        }
        let leased = zip(planned, leasing).compactMap { planned, leasing -> Delivery? in
            guard leasing, let id = ids[DirectKey(endpointId: planned.endpointId, kind: planned.kind)] else {
                return nil
            }
            return Delivery(
                id: id, appId: n.appId, userId: n.userId, endpointId: planned.endpointId, kind: planned.kind,
                notificationId: n.id, changeVersion: n.changeVersion, priority: n.priority,
                attempts: leasedAttempts, createdAt: now.canonical, dueAt: dueAt.canonical)
        }
        return (leased, waiting)
    }

    /// A row inserted leased, as its ID is matched back.
    private struct DirectKey: Hashable {
        var endpointId: String
        var kind: DeliveryKind
    }

    /// `planned` as the JSON array the upsert reads with `json_each`:
    /// `[endpoint, transport, kind, leased]`.
    private static func rows(_ planned: [PlannedDelivery], leasing: [Bool]) -> String {
        JSONText.array(
            zip(planned, leasing).map { planned, leasing in
                JSONText.array([
                    JSONText.string(planned.endpointId), JSONText.string(planned.transport.rawValue),
                    JSONText.string(planned.kind.rawValue), leasing ? "1" : "0",
                ])
            })
    }

    /// Finishes every pending delivery of `endpoint` with `result`, unsent
    /// (``OutboxMachine/RowWrite/closed``).
    static func finishPendingDeliveries(
        _ db: Database, of endpoint: Endpoint, result: DeliveryResult, detail: String?, at now: Date
    ) throws {
        try db.cachedStatement(sql: closeEndpointRows).execute(arguments: [
            result.rawValue, detail, now.storedSeconds, endpoint.appId, endpoint.userId, endpoint.id,
        ])
    }

    /// ``finishPendingDeliveries(_:of:result:detail:at:)``'s statement: result, detail and time
    /// `?1`…`?3`, the endpoint `?4`…`?6`.
    private static let closeEndpointRows = """
        UPDATE delivery SET \(OutboxMachine.setList(
            .closed, target: \.rawValue, current: \.rawValue, given: closing, greatest: "MAX"))
        WHERE appId = ?4 AND userId = ?5 AND endpointId = ?6 AND state = 'pending'
        """

    /// The result, detail and time of a close as `?1`…`?3`.
    private static func closing(_ given: OutboxMachine.Given) -> String {
        switch given {
        case .result: "?1"
        case .detail: "?2"
        case .at: "?3"
        case .dueAt, .error, .messageId: "NULL"
        }
    }

    /// Removes every pending delivery of an endpoint (the endpoint is being removed).
    static func deletePendingDeliveries(_ db: Database, of key: FeedKey, endpointId: String) throws {
        try db.cachedStatement(
            sql: "DELETE FROM delivery WHERE appId = ? AND userId = ? AND endpointId = ? AND state = 'pending'"
        ).execute(arguments: [key.appId, key.userId, endpointId])
    }
}

extension DeliveryRecord {
    /// What ``OutboxMachine``'s tap merges decide of this row.
    var tap: OutboxMachine.Tap {
        get {
            OutboxMachine.Tap(
                transport: transport, notificationId: notificationId, changeVersion: changeVersion,
                priority: priority, dueAt: dueAt, suspended: suspendedAt != nil)
        }
        set {
            transport = newValue.transport
            notificationId = newValue.notificationId
            changeVersion = newValue.changeVersion
            priority = newValue.priority
            dueAt = newValue.dueAt
            if !newValue.suspended {
                suspendedAt = nil
                suspendedReason = nil
            }
        }
    }

}
