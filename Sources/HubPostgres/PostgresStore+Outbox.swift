public import Foundation
public import HubCore
import Logging
import PostgresNIO

// The delivery outbox: claiming with leases across instances, finishing, retrying, statistics.
extension PostgresStore {
    /// Leases up to `limit` due deliveries to `owner` until `leaseUntil`.
    ///
    /// Due: pending, `due_at <= now`, and not leased or with a lease that ended before `now` (a
    /// crashed or stuck instance's deliveries are taken over). Order: priority (high first), then
    /// due time, then ID. Rows are locked with `FOR UPDATE SKIP LOCKED`: instances claiming at the
    /// same moment take disjoint rows without waiting for each other, and a row another instance
    /// has just leased is re-checked and left alone, so while leases hold each delivery is sent
    /// by one instance. Each claimed row gets `attempts + 1`. A row whose endpoint was removed or
    /// is inactive is finished as `superseded` and not returned, so fewer than `limit` may come
    /// back even when more are due.
    public func claimDeliveries(
        _ lane: OutboxLane, limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        guard limit > 0 else { return [] }
        let logger = self.logger
        return try await transaction { db in
            let deliveries = try await db.rows(
                """
                WITH due AS (
                    SELECT d.id, coalesce(e.state = 'active', false) AS deliverable
                    FROM hub_delivery d
                    LEFT JOIN hub_endpoint e
                        ON e.app_id = d.app_id AND e.user_id = d.user_id AND e.id = d.endpoint_id
                    WHERE d.state = 'pending' AND d.due_at <= \(now)
                        AND (d.lease_owner IS NULL OR d.lease_until < \(now))
                    ORDER BY d.urgency DESC, d.due_at, d.id
                    LIMIT \(limit)
                    FOR UPDATE OF d SKIP LOCKED
                ), superseded AS (
                    UPDATE hub_delivery d SET state = 'finished', result = 'superseded',
                        detail = 'The endpoint was removed or is inactive.', finished_at = \(now),
                        lease_owner = NULL, lease_until = NULL
                    FROM due WHERE d.id = due.id AND NOT due.deliverable
                )
                UPDATE hub_delivery d SET lease_owner = \(owner), lease_until = \(leaseUntil), claimed_at = \(now),
                    attempts = d.attempts + 1
                FROM due WHERE d.id = due.id AND due.deliverable
                RETURNING \(unescaped: DeliveryColumns.qualified("d"))
                """, logger
            ).map(Delivery.init(row:))
                .sorted { ($1.priority.urgency, $0.dueAt, $0.id) < ($0.priority.urgency, $1.dueAt, $1.id) }
            guard !deliveries.isEmpty else { return [] }

            let endpoints = try await Self.endpoints(of: deliveries, db, logger)
            let notifications = try await Self.notifications(of: deliveries, db, logger)
            var claimed: [ClaimedDelivery] = []
            for delivery in deliveries {
                let key = RowKey(delivery.appId, delivery.userId, delivery.endpointId)
                guard let endpoint = endpoints[key] else {
                    // Removed between the two statements: finish it like the others.
                    try await Self.finish(
                        delivery.id, .superseded, "The endpoint was removed or is inactive.", now, db, logger)
                    continue
                }
                let notification = delivery.notificationId.flatMap {
                    notifications[RowKey(delivery.appId, delivery.userId, $0)]
                }
                claimed.append(ClaimedDelivery(delivery: delivery, endpoint: endpoint, notification: notification))
            }
            return claimed
        }
    }

    /// Records the final outcome of a delivery (lease cleared, `finished_at = now`). Unknown or
    /// already finished deliveries are left alone.
    ///
    /// `.endpointGone` also deactivates the endpoint (`inactive_reason = detail`,
    /// `inactive_since = goneSince ?? now`) and finishes its other pending deliveries as
    /// `superseded` — unless the endpoint registered again after the provider's verdict: after
    /// `goneSince`, or, when the provider gave no time, after the delivery was claimed.
    func finishOne(
        id: Int64, result: DeliveryResult, detail: String?, goneSince: Date?, at now: Date
    ) async throws {
        let logger = self.logger
        try await transaction { db in
            guard result == .endpointGone else {
                try await Self.finish(id, result, detail, now, db, logger)
                return
            }
            // Deactivating changes which endpoints the feed's next changes tap: lock the feed.
            guard let owner = try await Self.pendingDelivery(id, db, logger) else { return }
            try await Self.lockFeed(FeedKey(appId: owner.appId, userId: owner.userId), on: db, logger: logger)
            guard let finished = try await Self.finish(id, result, detail, now, db, logger) else { return }
            let verdictTime = goneSince ?? finished.claimedAt ?? now
            let deactivated = try await db.rows(
                """
                UPDATE hub_endpoint SET state = 'inactive', inactive_reason = \(detail),
                    inactive_since = \(goneSince ?? now)
                WHERE app_id = \(finished.appId) AND user_id = \(finished.userId) AND id = \(finished.endpointId)
                    AND state = 'active' AND registered_at <= \(verdictTime)
                RETURNING id
                """, logger)
            guard !deactivated.isEmpty else { return }
            try await db.rows(
                """
                UPDATE hub_delivery SET state = 'finished', result = 'superseded',
                    detail = 'The endpoint became inactive.', finished_at = \(now), lease_owner = NULL,
                    lease_until = NULL
                WHERE app_id = \(finished.appId) AND user_id = \(finished.userId)
                    AND endpoint_id = \(finished.endpointId) AND state = 'pending'
                """, logger)
        }
    }

    /// Returns a claimed delivery to the queue: lease cleared, due again at `dueAt`, `last_error`
    /// recorded (the attempt was counted by the claim). Unknown or finished deliveries are left
    /// alone. A shoulder tap whose endpoint got a newer pending tap meanwhile is finished as
    /// `superseded` instead (that tap announces a newer version), passing on its priority.
    func retryOne(id: Int64, dueAt: Date, error: String, at now: Date) async throws {
        let logger = self.logger
        try await transaction { db in
            guard let delivery = try await Self.pendingDelivery(id, db, logger) else { return }
            if delivery.kind == .shoulderTap {
                // Unleasing makes this row the endpoint's coalescing tap: no publish may insert
                // another one meanwhile, so hold the feed's lock.
                try await Self.lockFeed(FeedKey(appId: delivery.appId, userId: delivery.userId), on: db, logger: logger)
                let newer = try await db.rows(
                    """
                    UPDATE hub_delivery
                    SET priority = CASE WHEN \(delivery.priority.urgency) > urgency
                            THEN \(delivery.priority.rawValue) ELSE priority END,
                        urgency = GREATEST(urgency, \(delivery.priority.urgency))
                    WHERE app_id = \(delivery.appId) AND user_id = \(delivery.userId)
                        AND endpoint_id = \(delivery.endpointId) AND state = 'pending' AND kind = 'shoulderTap'
                        AND lease_owner IS NULL AND id <> \(id)
                    RETURNING id
                    """, logger)
                if !newer.isEmpty {
                    try await db.rows(
                        "UPDATE hub_delivery SET last_error = \(error) WHERE id = \(id) AND state = 'pending'", logger)
                    try await Self.finish(id, .superseded, "A newer tap to the endpoint replaced it.", now, db, logger)
                    return
                }
            }
            try await db.rows(
                """
                UPDATE hub_delivery SET lease_owner = NULL, lease_until = NULL, due_at = \(dueAt), last_error = \(error)
                WHERE id = \(id) AND state = 'pending'
                """, logger)
        }
    }

    /// Extends `owner`'s leases of the pending deliveries `ids` to `until`.
    public func renewLeases(_ ids: [Int64], owner: String, until: Date) async throws {
        guard !ids.isEmpty else { return }
        try await rows(
            """
            UPDATE hub_delivery SET lease_until = \(until)
            WHERE id = ANY(\(ids)) AND lease_owner = \(owner) AND state = 'pending'
            """)
    }

    /// Records outcomes one by one (interim: see the set-based version in the PostgreSQL store work).
    public func recordOutcomes(_ outcomes: [OutboxOutcome]) async throws {
        for outcome in outcomes {
            switch outcome.change {
            case .finish(let result, let detail, let goneSince):
                try await finishOne(
                    id: outcome.id, result: result, detail: detail, goneSince: goneSince, at: outcome.at)
            case .retry(let dueAt, let error):
                try await retryOne(id: outcome.id, dueAt: dueAt, error: error, at: outcome.at)
            }
        }
    }

    /// The earliest time a pending delivery becomes claimable: its due time, or for a leased one
    /// the later of due time and lease end. `nil` when nothing is pending.
    public func nextDueDate() async throws -> Date? {
        try await rows(
            """
            SELECT min(CASE WHEN lease_owner IS NULL THEN due_at ELSE greatest(due_at, lease_until) END)
            FROM hub_delivery WHERE state = 'pending'
            """
        ).first?.decode(Date?.self)
    }

    /// Pending deliveries, and finished ones by transport, then result.
    public func deliveryStatistics() async throws -> DeliveryStatistics {
        var statistics = DeliveryStatistics(pending: 0, finished: [:])
        for row in try await rows(
            """
            SELECT state, transport, coalesce(result, '') AS result, count(*) AS count
            FROM hub_delivery GROUP BY state, transport, result
            """)
        {
            let (state, transport, result, count) = try row.decode((String, String, String, Int).self)
            if state == "pending" {
                statistics.pending += count
            } else {
                statistics.finished[transport, default: [:]][result, default: 0] += count
            }
        }
        return statistics
    }
}
