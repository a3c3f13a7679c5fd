public import Foundation
public import HubCore
import Logging
import PostgresNIO

// The delivery outbox: recording outcomes in batches and releasing leases (renewals:
// PostgresStore+Leases.swift; claims: PostgresStore+Claim.swift; statistics:
// PostgresStore+OutboxStatistics.swift). The rules are OutboxMachine's; this file renders and applies them.
// OutboxMachine's; this file renders and applies them.
extension PostgresStore {
    /// Records the outcomes of claimed deliveries in one transaction. Unknown or already finished
    /// deliveries are left alone. What each outcome writes is ``HubCore/OutboxMachine``'s
    /// (``HubCore/OutboxMachine/columns(_:)``, ``HubCore/OutboxMachine/putBack(kind:newerTapWaits:)``,
    /// ``HubCore/OutboxMachine/deactivates(registeredAt:goneSince:claimedAt:at:)``).
    ///
    /// - Finishes other than `.endpointGone` are one statement for the whole batch.
    /// - `.endpointGone`, retries, suspensions and releases are one statement a row (two for a
    ///   put-back tap: the first finds whether a newer tap waits).
    ///
    /// Gone endpoints and retried taps change which taps the feed's next changes coalesce into,
    /// so their feeds are locked first (in the sweep's order).
    public func recordOutcomes(_ outcomes: [OutboxOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        let (finish, perRow) = Self.split(outcomes)
        guard !perRow.isEmpty else {
            if let finish {
                try await retrying {
                    try await withSession { session in try await Self.finish(finish, session) }
                }
            }
            return
        }
        try await transaction { db in try await Self.record(finish: finish, perRow: perRow, db) }
    }

    /// The finishes recorded first (``HubCore/OutboxMachine/isRecordedFirst(_:)``) as one
    /// ``FinishBatch``, and the outcomes recorded row by row after them.
    static func split(_ outcomes: [OutboxOutcome]) -> (finish: FinishBatch?, perRow: [OutboxOutcome]) {
        var finished: [FinishBatch.Row] = []
        var seen = Set<Int64>()
        var perRow: [OutboxOutcome] = []
        // Own final answers first, in one statement (``HubCore/OutboxMachine/isRecordedFirst(_:)``).
        for outcome in outcomes {
            switch outcome.change {
            case .finish(let result, let detail, _) where OutboxMachine.isRecordedFirst(outcome.change):
                if seen.insert(outcome.id).inserted {
                    finished.append((outcome.id, result.rawValue, detail, outcome.at, outcome.providerMessageId))
                }
            default:
                perRow.append(outcome)
            }
        }
        return (finished.isEmpty ? nil : FinishBatch(rows: finished), perRow)
    }

    /// Finishes recorded in one statement: ``FinishDeliveries``'s rows.
    struct FinishBatch: Sendable {
        typealias Row = (id: Int64, result: String, detail: String?, at: Date, messageId: String?)
        let rows: [Row]

        /// The binds of ``FinishDeliveries`` or ``FinishDeliveriesRechecked`` for `rows`.
        /// Arrays cannot hold NULLs here: a detail travels as text plus whether it is there, a
        /// message ID as text (empty: none).
        var binds: PostgresBindings {
            var binds = PostgresBindings(capacity: 6)
            binds.append(rows.map(\.id))
            binds.append(rows.map(\.result))
            binds.append(rows.map { $0.detail ?? "" })
            binds.append(rows.map { $0.detail != nil })
            binds.append(rows.map(\.at))
            binds.append(rows.map { $0.messageId ?? "" })
            return binds
        }
    }

    /// Records `batch` on `db`: ``FinishDeliveries`` for all of it, then
    /// ``FinishDeliveriesRechecked`` for the rows the first left alone (a row another statement
    /// updated meanwhile is no longer where the first found it; the second finds it again by ID
    /// and re-checks it: still pending, it is finished; finished elsewhere, it is left alone).
    static func finish(_ batch: FinishBatch, _ db: Session) async throws {
        let finished = Set(try await db.run(FinishDeliveries.self, batch.binds).map { try $0.decode(Int64.self) })
        let missed = batch.rows.filter { !finished.contains($0.id) }
        guard !missed.isEmpty else { return }
        try await db.run(FinishDeliveriesRechecked.self, FinishBatch(rows: missed).binds)
    }

    /// Records ``split(_:)``'s two parts in the transaction `db`.
    static func record(finish: FinishBatch?, perRow: [OutboxOutcome], _ db: Session) async throws {
        if let finish { try await Self.finish(finish, db) }
        guard !perRow.isEmpty else { return }
        try await Self.lockFeeds(ofDeliveries: perRow.map(\.id), on: db)
        var pending: [Int64: (delivery: Delivery, transport: String, claimedAt: Date?)] = [:]
        for row in try await db.rows(
            """
            SELECT \(unescaped: DeliveryColumns.list), transport, claimed_at FROM hub_delivery
            WHERE id = ANY(\(perRow.map(\.id))) AND state = 'pending'
            """)
        {
            let row = row.makeRandomAccess()
            let delivery = try Delivery(row: row)
            pending[delivery.id] = (delivery, try row.value("transport"), try row.value("claimed_at"))
        }
        for outcome in perRow {
            guard let (delivery, transport, claimedAt) = pending[outcome.id] else { continue }
            let messageId = outcome.providerMessageId
            switch outcome.change {
            case .finish(_, let detail, let goneSince):
                try await Self.endpointGone(
                    delivery.id, detail: detail, goneSince: goneSince, claimedAt: claimedAt, at: outcome.at,
                    messageId: messageId, db)
            case .retry(let dueAt, let error):
                try await Self.putBack(
                    delivery, transport: transport, .retried,
                    OutboxMachine.GivenValues(at: outcome.at, dueAt: dueAt, error: error, messageId: messageId), db)
            case .suspend(let reason):
                try await Self.putBack(
                    delivery, transport: transport, .suspended,
                    OutboxMachine.GivenValues(at: outcome.at, error: reason, messageId: messageId), db)
            case .release(let dueAt):
                try await Self.putBack(
                    delivery, transport: transport, .released, OutboxMachine.GivenValues(at: outcome.at, dueAt: dueAt),
                    db)
            }
        }
    }

    /// Finishes a batch of deliveries (other than `endpointGone`), keeping the first lease's time
    /// and the provider's message ID for the receipt, and returns their IDs.
    ///
    /// Its plan must not depend on the statistics: the pending partition is a queue, so whenever
    /// it was analyzed (by the store, by autovacuum) it may have looked nearly empty, and a plan
    /// made for an empty table (scan it whole, match each row against every outcome) goes
    /// quadratic as soon as it holds thousands of rows (measured: 2.6 s for 627 outcomes). So the
    /// outcomes drive: each finds its row by the partition's primary key (``pendingPlacesSQL(_:)``),
    /// and the update takes the row at the place (`ctid`) that lookup found (a TID scan).
    ///
    /// A row another statement updated between the lookup and the update (a lease renewal) is no
    /// longer at that place: the update leaves it alone and does not return it, and
    /// ``finish(_:_:)`` finishes it again with ``FinishDeliveriesRechecked``.
    enum FinishDeliveries: NamedStatement {
        static let name = "hub_finish_deliveries_v3"
        static let sql = """
            UPDATE hub_delivery d SET \(DeliveryColumns.writeSQL(.answered, given: finishGiven))
            FROM (\(pendingPlacesSQL(outcomes))) o
            WHERE d.ctid = o.place AND d.state = 'pending'
            RETURNING d.id
            """

        /// The outcomes, a row each.
        private static let outcomes = """
            SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], $5::timestamptz[], $6::text[])
                AS o(id, result, detail, has_detail, at, message_id)
            """
    }

    /// ``FinishDeliveries`` joined by ID: a row updated concurrently is re-checked and finished if
    /// still pending. For the few rows ``FinishDeliveries`` left alone only (its plan follows the
    /// statistics).
    enum FinishDeliveriesRechecked: NamedStatement {
        static let name = "hub_finish_deliveries_rechecked"
        static let sql = """
            UPDATE hub_delivery d SET \(DeliveryColumns.writeSQL(.answered, given: finishGiven))
            FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], $5::timestamptz[], $6::text[])
                AS o(id, result, detail, has_detail, at, message_id)
            WHERE d.id = o.id AND d.state = 'pending'
            """
    }

    /// The given values of ``HubCore/OutboxMachine/RowWrite/answered`` from a row `o` of
    /// ``FinishDeliveries`` or ``FinishDeliveriesRechecked``.
    fileprivate static func finishGiven(_ value: OutboxMachine.Given) -> String {
        switch value {
        case .result: "o.result"
        case .detail: "CASE WHEN o.has_detail THEN o.detail END"
        case .at: "o.at"
        case .messageId: "NULLIF(o.message_id, '')"
        case .dueAt, .error: "NULL"
        }
    }

    /// Puts back the deliveries `owner` leased and never finished (an instance restarted under
    /// the same ``HubCore/HubConfiguration/instanceID`` after a crash), so that they go out at
    /// once instead of when their leases end. Each is returned like a retry that keeps its due
    /// time and last error: a tap merges into its endpoint's waiting tap if there is one.
    ///
    /// Instance IDs must be unique among running instances: this takes back every lease of `owner`.
    public func releaseLeases(owner: String) async throws {
        let leased = try await rows(
            "SELECT id FROM hub_delivery WHERE lease_owner = \(owner) AND state = 'pending'"
        ).map { try $0.decode(Int64.self) }
        guard !leased.isEmpty else { return }
        let now = configuration.clock.date
        try await transaction { db in
            try await Self.lockFeeds(ofDeliveries: leased, on: db)
            let pending = try await db.rows(
                """
                SELECT \(unescaped: DeliveryColumns.list), transport FROM hub_delivery
                WHERE id = ANY(\(leased)) AND lease_owner = \(owner) AND state = 'pending' ORDER BY id
                """
            ).map { row in
                let row = row.makeRandomAccess()
                return (try Delivery(row: row), try row.value("transport", as: String.self))
            }
            for (delivery, transport) in pending {
                try await Self.putBack(delivery, transport: transport, .retried, OutboxMachine.GivenValues(at: now), db)
            }
        }
    }

    /// Finishes a delivery as `endpointGone`, deactivates its endpoint unless it registered again
    /// after the verdict, and then supersedes the endpoint's other pending deliveries: one statement.
    /// Whether the endpoint is deactivated, and since when, are ``HubCore/OutboxMachine``'s
    /// (``HubCore/OutboxMachine/verdictTime(goneSince:claimedAt:at:)``).
    private static func endpointGone(
        _ id: Int64, detail: String?, goneSince: Date?, claimedAt: Date?, at now: Date, messageId: String?,
        _ db: Session
    ) async throws {
        let verdict = OutboxMachine.verdictTime(goneSince: goneSince, claimedAt: claimedAt, at: now)
        let inactiveSince = OutboxMachine.inactiveSince(goneSince: goneSince, at: now)
        let superseded = OutboxMachine.supersededByGoneEndpoint
        let given = OutboxMachine.GivenValues(result: .endpointGone, detail: detail, at: now, messageId: messageId)
        try await db.rows(
            given.query(Self.endpointGoneSQL) { binds in
                binds.append(id)
                binds.append(inactiveSince)
                binds.append(verdict)
                binds.append(superseded.result.rawValue)
                binds.append(superseded.detail)
            })
    }

    /// ``endpointGone(_:detail:goneSince:claimedAt:at:messageId:_:)``'s statement after
    /// `GivenValues.sql`: the row `$7` answered, its endpoint made inactive since `$8` if it registered
    /// at or before `$9`, then the endpoint's other pending rows closed with result `$10` and
    /// detail `$11`.
    private static let endpointGoneSQL = """
        , finished AS (
            UPDATE hub_delivery d SET \(DeliveryColumns.writeSQL(.answered, given: OutboxMachine.GivenValues.name))
            FROM g WHERE d.id = $7 AND d.state = 'pending'
            RETURNING d.app_id, d.user_id, d.endpoint_id
        ), deactivated AS (
            UPDATE hub_endpoint e SET state = 'inactive', inactive_reason = g.detail, inactive_since = $8::timestamptz
            FROM finished f, g
            WHERE e.app_id = f.app_id AND e.user_id = f.user_id AND e.id = f.endpoint_id AND e.state = 'active'
                AND e.registered_at <= $9::timestamptz
            RETURNING e.app_id, e.user_id, e.id
        )
        UPDATE hub_delivery d SET \(DeliveryColumns.writeSQL(.closed, given: closingOthers))
        FROM deactivated x, g
        WHERE d.app_id = x.app_id AND d.user_id = x.user_id AND d.endpoint_id = x.id AND d.state = 'pending'
            AND d.id <> $7
        """

    /// The given values of the endpoint's other rows that ``endpointGoneSQL`` closes: its own
    /// result and detail (`$10`, `$11`), the outcome's time.
    private static func closingOthers(_ given: OutboxMachine.Given) -> String {
        switch given {
        case .result: "$10::text"
        case .detail: "$11::text"
        default: OutboxMachine.GivenValues.name(given)
        }
    }

    /// Puts a claimed delivery back as `write` (``HubCore/OutboxMachine/waitingAgain(_:)``) says,
    /// or — a tap whose endpoint has a newer unleased tap waiting — finishes it as superseded
    /// (``HubCore/OutboxMachine/putBack(kind:newerTapWaits:)``). Call with its feed locked:
    /// unleasing makes the row the endpoint's coalescing tap, so no publish may insert another
    /// meanwhile. A parked tap that a put-back tap merges into is un-parked: the lane tries it again.
    private static func putBack(
        _ delivery: Delivery, transport: String, _ write: OutboxMachine.RowWrite, _ given: OutboxMachine.GivenValues,
        _ db: Session
    ) async throws {
        let id = delivery.id
        if delivery.kind == .shoulderTap {
            // ``OutboxMachine/putBack(kind:newerTapWaits:)``: the update finds whether a newer tap waits.
            let newer = try await db.rows(
                """
                WITH incoming AS (
                    SELECT \(transport)::text AS transport, \(delivery.notificationId)::text AS notification_id,
                        \(delivery.changeVersion)::bigint AS change_version,
                        \(delivery.priority.rawValue)::text AS priority, \(delivery.priority.urgency)::smallint AS urgency
                )
                UPDATE hub_delivery d SET \(unescaped: DeliveryColumns.supersedingMerge)
                FROM incoming
                WHERE d.app_id = \(delivery.appId) AND d.user_id = \(delivery.userId)
                    AND d.endpoint_id = \(delivery.endpointId) AND \(unescaped: waitingTap) AND d.id <> \(id)
                RETURNING d.id
                """)
            let (write, given) = OutboxMachine.putBackWrite(
                write, given, OutboxMachine.putBack(kind: delivery.kind, newerTapWaits: !newer.isEmpty))
            try await db.rows(given.query(rowWriteSQL(write)) { $0.append(id) })
            return
        }
        try await db.rows(given.query(rowWriteSQL(write)) { $0.append(id) })
    }

    /// A waiting tap `d` (``HubCore/OutboxMachine/waitingTapSQL(_:)``).
    private static let waitingTap = OutboxMachine.waitingTapSQL { "d.\(DeliveryColumns.name($0))" }

    /// `write` of the pending row `$7`, after `GivenValues.sql`.
    private static func rowWriteSQL(_ write: OutboxMachine.RowWrite) -> String {
        """
        UPDATE hub_delivery d SET \(DeliveryColumns.writeSQL(write, given: OutboxMachine.GivenValues.name))
        FROM g WHERE d.id = $7 AND d.state = 'pending'
        """
    }

    /// Un-parks every suspended delivery, due at once at the latest (see
    /// ``OutboxStore/resumeSuspended(at:)``).
    @discardableResult
    public func resumeSuspended(at now: Date) async throws -> Int {
        try await rows(
            """
            WITH resumed AS (SELECT \(now)::timestamptz AS due_at)
            UPDATE hub_delivery d SET \(unescaped: DeliveryColumns.resume)
            FROM resumed
            WHERE d.state = 'pending' AND d.suspended_at IS NOT NULL
            RETURNING d.id
            """
        ).count
    }
}

/// The given values of a row write (``HubCore/OutboxMachine/Given``), bound as `$1`…`$6` of a
/// statement that starts with ``sql``.
extension OutboxMachine.GivenValues {
    /// The statement's start: `WITH g AS (…)`, one row of the given values, named as ``name(_:)`` names them.
    static let sql = """
        WITH g AS (SELECT $1::text AS result, $2::text AS detail, $3::timestamptz AS at,
            $4::timestamptz AS due_at, $5::text AS error, $6::text AS message_id)
        """

    /// A given value as a column of `g`.
    static func name(_ value: OutboxMachine.Given) -> String {
        switch value {
        case .result: "g.result"
        case .detail: "g.detail"
        case .at: "g.at"
        case .dueAt: "g.due_at"
        case .error: "g.error"
        case .messageId: "g.message_id"
        }
    }

    /// ``sql`` followed by `rest` (whose binds start at `$7`), with the given values bound first.
    func query(_ rest: String, _ more: (inout PostgresBindings) -> Void = { _ in }) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 8)
        binds.append(result?.rawValue)
        binds.append(detail)
        binds.append(at)
        binds.append(dueAt)
        binds.append(error)
        binds.append(messageId)
        more(&binds)
        return PostgresQuery(unsafeSQL: Self.sql + "\n" + rest, binds: binds)
    }
}
