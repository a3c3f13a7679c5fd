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
    /// transport it names are leased to its owner, as a claim would: a new row is inserted leased
    /// (one more statement per due time, and the ``Delivery`` values are made here, not read back);
    /// a tap that merged into a waiting one is leased after the merge (one more statement).
    /// A batch passes what it read for the user (`prefetched`: the active endpoints and the
    /// endpoints with a waiting tap) and takes the new leased rows into its own insert
    /// (`deferring`); their ``Delivery`` values are then the batch's to hand off.
    @discardableResult
    static func enqueue(
        _ planner: DeliveryPlanner, _ notification: UserNotification, _ change: DeliveryPlanner.Change, now: Date,
        _ db: Database, handOff: HandOff? = nil, prefetched: (endpoints: [Endpoint], waiting: Set<String>)? = nil,
        deferring batch: LeasedInsertBatch? = nil
    ) throws -> Enqueued {
        let key = FeedKey(appId: notification.appId, userId: notification.userId)
        let endpoints = try prefetched?.endpoints ?? activeEndpoints(db, key)
        let plan = planner.plan(notification, change, endpoints: endpoints, now: now)
        let hands: (PlannedDelivery) -> Bool = { planned in
            guard let handOff, planned.dueAt <= now else { return false }
            return handOff.transports.contains(planned.transport)
        }
        // A tap merges through the upsert when its endpoint has a waiting tap, or when it is not
        // handed off (it may then merge into one later). A handed-off tap to an endpoint without a
        // waiting tap is inserted leased (a leased tap is outside the index that finds waiting
        // ones), as are the other kinds. Only this transaction writes, so the read holds.
        let waiting =
            plan.contains { $0.coalesces && hands($0) } ? try prefetched?.waiting ?? waitingTaps(db, key) : []
        let leasable: (PlannedDelivery) -> Bool = { hands($0) && !($0.coalesces && waiting.contains($0.endpointId)) }
        var mergedDueNow: [Int64] = []
        var leftForClaim = 0
        var leased: [Delivery] = []
        // One statement per due time and way (a plan has one or two due times: now, and its
        // fallbacks' time), the earliest first: rows are numbered in the same order on every run
        // (the ID breaks ties in claim order).
        for (dueAt, planned) in Dictionary(grouping: plan, by: \.dueAt).sorted(by: { $0.key < $1.key }) {
            var direct: [PlannedDelivery] = []
            var merging: [PlannedDelivery] = []
            for row in planned {
                if leasable(row) { direct.append(row) } else { merging.append(row) }
            }
            if Set(direct.map { DirectKey(endpointId: $0.endpointId, kind: $0.kind) }).count != direct.count {
                // Not in a plan today; the upsert would merge such taps, so it takes them all.
                merging += direct
                direct = []
            }
            if !direct.isEmpty, let handOff,
                !(batch?.add(direct, of: notification, dueAt: dueAt, now: now, handOff) ?? false)
            {
                leased += try insertLeased(direct, of: notification, dueAt: dueAt, now: now, handOff, db)
            }
            guard !merging.isEmpty else { continue }
            let ids = try upsert(merging, of: notification, dueAt: dueAt, now: now, db)
            guard dueAt <= now else { continue }
            if handOff != nil && merging.contains(where: hands) {
                mergedDueNow += ids
            } else {
                leftForClaim += ids.count
            }
        }
        if let handOff, !mergedDueNow.isEmpty {
            let merged = try DeliveryRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE delivery SET leaseOwner = ?, leaseUntil = ?, claimedAt = ?, attempts = attempts + 1
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
                        SELECT endpointId FROM delivery
                        WHERE appId = ? AND userId = ? AND state = 'pending' AND kind = 'shoulderTap'
                            AND leaseOwner IS NULL
                        """),
                arguments: [key.appId, key.userId]))
    }

    /// Inserts `planned` (due at `dueAt`), each tap merging into its endpoint's waiting tap.
    /// - Returns: the IDs of the rows written, new or merged into.
    private static func upsert(
        _ planned: [PlannedDelivery], of n: UserNotification, dueAt: Date, now: Date, _ db: Database
    ) throws -> [Int64] {
        try Int64.fetchAll(
            db.cachedStatement(
                sql: """
                    INSERT INTO delivery (appId, userId, endpointId, transport, kind, notificationId, changeVersion,
                        priority, urgency, state, attempts, createdAt, dueAt)
                    SELECT ?, ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
                        ?, ?, ?, ?, 'pending', 0, ?, ?
                    FROM json_each(?) WHERE true
                    ON CONFLICT (appId, userId, endpointId)
                        WHERE state = 'pending' AND kind = 'shoulderTap' AND leaseOwner IS NULL
                    DO UPDATE SET \(tapMergeSQL)
                    RETURNING id
                    """),
            arguments: [
                n.appId, n.userId, n.id, n.changeVersion, n.priority.rawValue, n.priority.urgency,
                now.canonical.storedSeconds, dueAt.canonical.storedSeconds, rows(planned),
            ])
    }

    /// Inserts `planned` (due now) leased to `handOff`'s owner, as a claim at `now` would lease
    /// them (one attempt). The ``Delivery`` values are made from what was inserted, matched to
    /// the returned IDs by endpoint and kind (unique in a plan).
    private static func insertLeased(
        _ planned: [PlannedDelivery], of n: UserNotification, dueAt: Date, now: Date, _ handOff: HandOff,
        _ db: Database
    ) throws -> [Delivery] {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    INSERT INTO delivery (appId, userId, endpointId, transport, kind, notificationId, changeVersion,
                        priority, urgency, state, attempts, createdAt, dueAt, leaseOwner, leaseUntil, claimedAt)
                    SELECT ?, ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
                        ?, ?, ?, ?, 'pending', 1, ?, ?, ?, ?, ?
                    FROM json_each(?)
                    RETURNING id, endpointId, kind
                    """),
            arguments: [
                n.appId, n.userId, n.id, n.changeVersion, n.priority.rawValue, n.priority.urgency,
                now.canonical.storedSeconds, dueAt.canonical.storedSeconds, handOff.owner,
                handOff.leaseUntil.canonical.storedSeconds, now.canonical.storedSeconds, rows(planned),
            ])
        var ids: [DirectKey: Int64] = [:]
        for row in rows { ids[DirectKey(endpointId: row[1], kind: DeliveryKind(rawValue: row[2]))] = row[0] }
        return planned.compactMap { planned in
            ids[DirectKey(endpointId: planned.endpointId, kind: planned.kind)].map { id in
                leasedDelivery(id: id, planned, of: n, dueAt: dueAt, now: now)
            }
        }
    }

    /// The ``Delivery`` of row `id`, inserted for `planned` of `n` leased at `now` (one attempt).
    static func leasedDelivery(
        id: Int64, _ planned: PlannedDelivery, of n: UserNotification, dueAt: Date, now: Date
    ) -> Delivery {
        Delivery(
            id: id, appId: n.appId, userId: n.userId, endpointId: planned.endpointId, kind: planned.kind,
            notificationId: n.id, changeVersion: n.changeVersion, priority: n.priority, attempts: 1,
            createdAt: now.canonical, dueAt: dueAt.canonical)
    }

    /// A row inserted leased, as its ID is matched back.
    private struct DirectKey: Hashable {
        var endpointId: String
        var kind: DeliveryKind
    }

    /// `planned` as the JSON array the inserts read with `json_each`: `[endpoint, transport, kind]`.
    private static func rows(_ planned: [PlannedDelivery]) -> String {
        JSONText.array(
            planned.map {
                JSONText.array([
                    JSONText.string($0.endpointId), JSONText.string($0.transport.rawValue),
                    JSONText.string($0.kind.rawValue),
                ])
            })
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
