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
    /// persists the plan in one statement, its rows in ``OutboxMachine/creationOrder(_:)``: taps
    /// merge into their endpoint's pending, unleased tap (``OutboxMachine/tapMerge``); visible and
    /// fallback deliveries are new rows. With a `handOff`, the rows due at once that
    /// ``OutboxMachine/handsOff(dueAt:transport:to:at:)`` picks are leased to its owner, as a claim
    /// would lease them: a new row is inserted leased in the same statement (the ``Delivery``
    /// values are made here, not read back); a tap that merged into a waiting one
    /// (``OutboxMachine/mergesOnWrite(coalesces:handedOff:tapWaits:)``) is leased after the merge
    /// (one more statement).
    @discardableResult
    static func enqueue(
        _ planner: DeliveryPlanner, _ notification: UserNotification, _ change: DeliveryPlanner.Change, now: Date,
        _ db: Database, handOff: HandOff? = nil
    ) throws -> Enqueued {
        let key = FeedKey(appId: notification.appId, userId: notification.userId)
        let endpoints = try activeEndpoints(db, key)
        let plan = try prepare(
            planner, notification, change, now: now, handOff: handOff, endpoints: endpoints,
            waiting: { try waitingTaps(db, key) })
        return try write([plan], db)[0]
    }

    /// One change's plan for one user, ready to be written (``prepare(_:_:_:now:handOff:endpoints:waiting:)``).
    struct PreparedPlan {
        var notification: UserNotification
        var endpoints: [Endpoint]
        /// The planned rows, in ``OutboxMachine/creationOrder(_:)``.
        var rows: [PlannedDelivery]
        /// Per row: whether the hand-off takes it (``OutboxMachine/handsOff(dueAt:transport:to:at:)``).
        var handed: [Bool]
        /// Per row: whether it is inserted leased to the hand-off's owner.
        var leasing: [Bool]
        var handOff: HandOff?
        var now: Date
    }

    /// Plans `change` of `notification` for `endpoints` (the user's active ones) and decides which
    /// rows are inserted leased; `waiting` (the endpoints with a pending, unleased tap) is read
    /// only when a handed-off tap needs it. Only the caller's transaction writes, so the read
    /// holds. A leased tap is outside the index that finds waiting ones: inserted leased, it
    /// merges with nothing.
    static func prepare(
        _ planner: DeliveryPlanner, _ notification: UserNotification, _ change: DeliveryPlanner.Change, now: Date,
        handOff: HandOff?, endpoints: [Endpoint], waiting: () throws -> Set<String>
    ) rethrows -> PreparedPlan {
        let rows = OutboxMachine.creationOrder(planner.plan(notification, change, endpoints: endpoints, now: now))
        let handed = rows.map { OutboxMachine.handsOff(dueAt: $0.dueAt, transport: $0.transport, to: handOff, at: now) }
        let waiting = zip(rows, handed).contains { $0.0.coalesces && $0.1 } ? try waiting() : []
        var leasing = zip(rows, handed).map { row, handed in
            handed
                && !OutboxMachine.mergesOnWrite(
                    coalesces: row.coalesces, handedOff: true, tapWaits: waiting.contains(row.endpointId))
        }
        // Rows leased in one statement are matched back by endpoint and kind. Not in a plan
        // today: when two of a due time's would share them, none of that due time's is leased
        // (a claim takes them).
        for group in dueTimeGroups(rows) {
            let direct = group.filter { leasing[$0] }.map {
                DirectKey(endpointId: rows[$0].endpointId, kind: rows[$0].kind)
            }
            if Set(direct).count != direct.count {
                for index in group { leasing[index] = false }
            }
        }
        return PreparedPlan(
            notification: notification, endpoints: endpoints, rows: rows, handed: handed, leasing: leasing,
            handOff: handOff, now: now)
    }

    /// The indices of `rows` (in creation order) by due time: one run of indices per due time.
    private static func dueTimeGroups(_ rows: [PlannedDelivery]) -> [Range<Int>] {
        var groups: [Range<Int>] = []
        var start = 0
        for index in rows.indices.dropFirst() where rows[index].dueAt != rows[start].dueAt {
            groups.append(start..<index)
            start = index
        }
        if !rows.isEmpty { groups.append(start..<rows.count) }
        return groups
    }

    /// Writes `plans` (of one app, distinct users, one time and hand-off) in their order, each
    /// plan's rows in creation order, so the rows are numbered as one ``enqueue(_:_:_:now:_:handOff:)``
    /// per plan would number them. One upsert for all when every row is told apart by its user,
    /// endpoint and kind (a single publish, a batch of distinct users, a broadcast chunk);
    /// otherwise one upsert per plan and due time. Then one update
    /// leases the handed-off taps that merged into waiting ones.
    /// - Returns: what each plan handed off and left for a claim, in plan order.
    static func write(_ plans: [PreparedPlan], _ db: Database) throws -> [Enqueued] {
        guard let first = plans.first else { return [] }
        let now = first.now
        let handOff = first.handOff
        precondition(
            plans.allSatisfy {
                $0.now == now && $0.handOff == handOff && $0.notification.appId == first.notification.appId
            },
            "plans written together share their time, hand-off and app")
        // Per plan: the IDs of its rows (nil where the upsert returned none: not expected).
        var ids: [[Int64?]] = plans.map { Array(repeating: nil, count: $0.rows.count) }
        let keys = plans.flatMap { plan in
            plan.rows.map { RowKey(userId: plan.notification.userId, endpointId: $0.endpointId, kind: $0.kind) }
        }
        if Set(keys).count == keys.count {
            let returned = try upsert(plans.map { ($0, $0.rows.indices) }, now: now, handOff: handOff, db)
            var byKey: [RowKey: Int64] = [:]
            for row in returned { byKey[row.key] = row.id }
            for (p, plan) in plans.enumerated() {
                for (r, row) in plan.rows.enumerated() {
                    ids[p][r] =
                        byKey[RowKey(userId: plan.notification.userId, endpointId: row.endpointId, kind: row.kind)]
                }
            }
        } else {
            for (p, plan) in plans.enumerated() {
                for group in dueTimeGroups(plan.rows) {
                    let returned = try upsert([(plan, group)], now: now, handOff: handOff, db)
                    // Leased rows are told apart by endpoint and kind (see `prepare`); the waiting
                    // ones only count, in any order.
                    var leased: [DirectKey: Int64] = [:]
                    var waiting = returned.filter { !$0.leased }.map(\.id)[...]
                    for row in returned where row.leased {
                        leased[DirectKey(endpointId: row.key.endpointId, kind: row.key.kind)] = row.id
                    }
                    for r in group {
                        ids[p][r] =
                            plan.leasing[r]
                            ? leased[DirectKey(endpointId: plan.rows[r].endpointId, kind: plan.rows[r].kind)]
                            : waiting.popFirst()
                    }
                }
            }
        }
        let leasedAttempts = OutboxMachine.attempts(afterLease: 0)
        var results: [Enqueued] = []
        var leased: [[Delivery]] = []
        var mergedDueNow: [Int64] = []
        var mergedPlan: [Int64: Int] = [:]
        for (p, plan) in plans.enumerated() {
            let n = plan.notification
            var result = Enqueued()
            var delivered: [Delivery] = []
            for group in dueTimeGroups(plan.rows) {
                for r in group where plan.leasing[r] {
                    guard let id = ids[p][r] else { continue }
                    let row = plan.rows[r]
                    delivered.append(
                        Delivery(
                            id: id, appId: n.appId, userId: n.userId, endpointId: row.endpointId, kind: row.kind,
                            notificationId: n.id, changeVersion: n.changeVersion, priority: n.priority,
                            attempts: leasedAttempts, createdAt: now.canonical, dueAt: row.dueAt.canonical))
                }
                guard plan.rows[group.lowerBound].dueAt <= now else { continue }
                let waiting = group.filter { !plan.leasing[$0] }.compactMap { ids[p][$0] }
                if handOff != nil && group.contains(where: { plan.handed[$0] && !plan.leasing[$0] }) {
                    mergedDueNow += waiting
                    for id in waiting { mergedPlan[id] = p }
                } else {
                    result.leftForClaim += waiting.count
                }
            }
            leased.append(delivered)
            results.append(result)
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
            var mergedLeased = Array(repeating: 0, count: plans.count)
            for record in merged {
                guard let p = record.id.flatMap({ mergedPlan[$0] }) else { continue }
                leased[p].append(record.delivery)
                mergedLeased[p] += 1
            }
            var mergedCount = Array(repeating: 0, count: plans.count)
            for p in mergedPlan.values { mergedCount[p] += 1 }
            for p in plans.indices { results[p].leftForClaim += mergedCount[p] - mergedLeased[p] }
        }
        for (p, plan) in plans.enumerated() where !leased[p].isEmpty {
            results[p].handedOff = HandOff.claimed(
                leased[p], endpoints: plan.endpoints, notification: Self.canonical(plan.notification))
        }
        return results
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

    /// A row inserted leased, as its ID is matched back within one plan and due time.
    private struct DirectKey: Hashable {
        var endpointId: String
        var kind: DeliveryKind
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
