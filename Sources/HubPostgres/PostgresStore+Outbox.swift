public import Foundation
public import HubCore
import Logging
import PostgresNIO

// The delivery outbox: renewing leases and recording outcomes in batches (claims:
// PostgresStore+Claim.swift; statistics: PostgresStore+OutboxStatistics.swift). The rules are
// OutboxMachine's; this file renders and applies them.
extension PostgresStore {
    /// Extends `owner`'s leases of the deliveries `ids` to `until`, those
    /// ``HubCore/OutboxMachine/renewableSQL(_:owner:)`` names; others are left alone.
    public func renewLeases(_ ids: [Int64], owner: String, until: Date) async throws {
        guard !ids.isEmpty else { return }
        var binds = PostgresBindings(capacity: 3)
        binds.append(until)
        binds.append(ids)
        binds.append(owner)
        _ = try await retrying {
            try await withSession { [binds] session in try await session.run(RenewLeases.self, binds) }
        }
    }

    enum RenewLeases: NamedStatement {
        static let name = "hub_renew_leases"
        static let sql = """
            UPDATE hub_delivery SET lease_until = $1
            WHERE id = ANY($2::bigint[]) AND \(OutboxMachine.renewableSQL(DeliveryColumns.name, owner: "$3"))
            """
    }

    /// Records the outcomes of claimed deliveries in one transaction. Unknown or already finished
    /// deliveries are left alone.
    ///
    /// - Finishes other than `.endpointGone` (delivered, rejected, given up, superseded) are one
    ///   statement for the whole batch (lease cleared, `finished_at` = the outcome's time).
    /// - `.endpointGone` also deactivates the endpoint (`inactive_reason = detail`,
    ///   `inactive_since = goneSince ?? at`) and finishes its other pending deliveries as
    ///   `superseded` — unless the endpoint registered again after the provider's verdict: after
    ///   `goneSince`, or, when the provider gave no time, after the delivery was claimed.
    /// - A retry returns the delivery to the queue: lease cleared, due again at `dueAt`,
    ///   `last_error` recorded (the claim counted the attempt). A shoulder tap whose endpoint got a
    ///   newer pending tap meanwhile is finished as `superseded` instead, passing on its priority
    ///   (and its version, if newer) to that tap.
    /// - A suspension parks the delivery like a retry that keeps its due time (`suspended_at`,
    ///   `suspended_reason` and `last_error` set) and that no claim takes until ``resumeSuspended(at:)``.
    ///
    /// Gone endpoints and retried taps change which taps the feed's next changes coalesce into,
    /// so their feeds are locked first (in the sweep's order).
    public func recordOutcomes(_ outcomes: [OutboxOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        let (finish, perRow) = Self.split(outcomes)
        guard !perRow.isEmpty else {
            if let finish {
                _ = try await retrying {
                    try await withSession { session in try await session.run(FinishDeliveries.self, finish) }
                }
            }
            return
        }
        try await transaction { db in try await Self.record(finish: finish, perRow: perRow, db) }
    }

    /// The finishes recorded first (``HubCore/OutboxMachine/isRecordedFirst(_:)``) as the binds of
    /// one ``FinishDeliveries``, and the outcomes recorded row by row after them.
    static func split(_ outcomes: [OutboxOutcome]) -> (finish: PostgresBindings?, perRow: [OutboxOutcome]) {
        var finished: [(id: Int64, result: String, detail: String?, at: Date, messageId: String?)] = []
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
        var finish: PostgresBindings?
        if !finished.isEmpty {
            var binds = PostgresBindings(capacity: 6)
            binds.append(finished.map(\.id))
            binds.append(finished.map(\.result))
            binds.append(finished.map { $0.detail ?? "" })
            binds.append(finished.map { $0.detail != nil })
            binds.append(finished.map(\.at))
            binds.append(finished.map { $0.messageId ?? "" })
            finish = binds
        }
        return (finish, perRow)
    }

    /// Records ``split(_:)``'s two parts in the transaction `db`.
    static func record(finish: PostgresBindings?, perRow: [OutboxOutcome], _ db: Session) async throws {
        if let finish { try await db.run(FinishDeliveries.self, finish) }
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
                try await Self.retry(
                    delivery, transport: transport, dueAt: dueAt, error: error, at: outcome.at,
                    messageId: messageId, db)
            case .suspend(let reason):
                try await Self.retry(
                    delivery, transport: transport, dueAt: delivery.dueAt, error: reason, at: outcome.at,
                    messageId: messageId, db,
                    suspending: true)
            case .release(let dueAt):
                try await Self.retry(
                    delivery, transport: transport, dueAt: dueAt, error: delivery.lastError, at: outcome.at, db,
                    releasing: true)
            }
        }
    }

    /// Finishes a batch of deliveries (other than `endpointGone`), keeping the first lease's time
    /// and the provider's message ID for the receipt. Arrays cannot hold NULLs here: a detail
    /// travels as text plus whether it is there, a message ID as text (empty: none).
    enum FinishDeliveries: NamedStatement {
        static let name = "hub_finish_deliveries_v2"
        static let sql = """
            UPDATE hub_delivery d SET state = 'finished', result = o.result,
                detail = CASE WHEN o.has_detail THEN o.detail END, finished_at = o.at,
                lease_owner = NULL, lease_until = NULL, first_sent_at = COALESCE(d.first_sent_at, d.claimed_at),
                provider_message_id = COALESCE(NULLIF(o.message_id, ''), d.provider_message_id),
                purge_after = \(purgeAfterSQL("d", finishedAt: "o.at"))
            FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], $5::timestamptz[], $6::text[])
                AS o(id, result, detail, has_detail, at, message_id)
            WHERE d.id = o.id AND d.state = 'pending'
            """
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
                try await Self.retry(
                    delivery, transport: transport, dueAt: delivery.dueAt, error: delivery.lastError, at: now, db)
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
        try await db.rows(
            """
            WITH finished AS (
                UPDATE hub_delivery SET state = 'finished', result = 'endpointGone', detail = \(detail),
                    finished_at = \(now), lease_owner = NULL, lease_until = NULL,
                    first_sent_at = COALESCE(first_sent_at, claimed_at),
                    provider_message_id = COALESCE(\(messageId)::text, provider_message_id),
                    purge_after = GREATEST(\(now)::timestamptz, \(unescaped: Self.notificationExpirySQL("hub_delivery")))
                WHERE id = \(id) AND state = 'pending'
                RETURNING app_id, user_id, endpoint_id
            ), deactivated AS (
                UPDATE hub_endpoint e SET state = 'inactive', inactive_reason = \(detail),
                    inactive_since = \(inactiveSince)
                FROM finished f
                WHERE e.app_id = f.app_id AND e.user_id = f.user_id AND e.id = f.endpoint_id AND e.state = 'active'
                    AND e.registered_at <= \(verdict)
                RETURNING e.app_id, e.user_id, e.id
            )
            UPDATE hub_delivery d SET state = 'finished', result = \(superseded.result.rawValue),
                detail = \(superseded.detail), finished_at = \(now), lease_owner = NULL, lease_until = NULL,
                purge_after = GREATEST(\(now)::timestamptz, \(unescaped: Self.notificationExpirySQL("d")))
            FROM deactivated x
            WHERE d.app_id = x.app_id AND d.user_id = x.user_id AND d.endpoint_id = x.id AND d.state = 'pending'
                AND d.id <> \(id)
            """)
    }

    /// Puts a claimed delivery back for another attempt, or — a tap whose endpoint has a newer
    /// unleased tap waiting — finishes it as superseded. Call with its feed locked: unleasing
    /// makes the row the endpoint's coalescing tap, so no publish may insert another meanwhile.
    ///
    /// With `suspending`, the delivery is parked instead (see ``recordOutcomes(_:)``). A parked tap
    /// that a put-back tap merges into is un-parked: the lane tries it again. With `releasing`, it
    /// was not sent: it goes back with one attempt fewer and its last error kept.
    private static func retry(
        _ delivery: Delivery, transport: String, dueAt: Date, error: String?, at now: Date, messageId: String? = nil,
        _ db: Session,
        suspending: Bool = false, releasing: Bool = false
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
                    AND d.endpoint_id = \(delivery.endpointId) AND d.state = 'pending' AND d.kind = 'shoulderTap'
                    AND d.lease_owner IS NULL AND d.id <> \(id)
                RETURNING d.id
                """)
            if OutboxMachine.putBack(kind: delivery.kind, newerTapWaits: !newer.isEmpty) == .supersedes {
                let superseded = OutboxMachine.supersededByNewerTap
                try await db.rows(
                    """
                    UPDATE hub_delivery SET state = 'finished', result = \(superseded.result.rawValue),
                        detail = \(superseded.detail), last_error = \(error), finished_at = \(now),
                        lease_owner = NULL, lease_until = NULL, first_sent_at = COALESCE(first_sent_at, claimed_at),
                        provider_message_id = COALESCE(\(messageId)::text, provider_message_id),
                        purge_after = GREATEST(\(now)::timestamptz, \(unescaped: Self.notificationExpirySQL("hub_delivery")))
                    WHERE id = \(id) AND state = 'pending'
                    """)
                return
            }
        }
        if releasing {
            try await db.rows(
                """
                UPDATE hub_delivery SET lease_owner = NULL, lease_until = NULL, due_at = \(dueAt),
                    attempts = \(unescaped: Self.releasedAttempts)
                WHERE id = \(id) AND state = 'pending'
                """)
            return
        }
        let suspendedAt: Date? = suspending ? now : nil
        try await db.rows(
            """
            UPDATE hub_delivery SET lease_owner = NULL, lease_until = NULL, due_at = \(dueAt), last_error = \(error),
                suspended_at = \(suspendedAt), suspended_reason = CASE WHEN \(suspending) THEN \(error) END,
                first_sent_at = COALESCE(first_sent_at, claimed_at),
                provider_message_id = COALESCE(\(messageId)::text, provider_message_id)
            WHERE id = \(id) AND state = 'pending'
            """)
    }

    /// ``HubCore/OutboxMachine/attempts(afterRelease:)`` as the value of `attempts`.
    private static let releasedAttempts = OutboxMachine.releasedAttemptsSQL(
        current: DeliveryColumns.name, greatest: "GREATEST")

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
