public import Foundation
public import HubCore
import Logging
import PostgresNIO

// The expiry sweep.
extension PostgresStore {
    /// Expires active notifications whose `expirationDateTime <= now` (a new version and taps to
    /// every active endpoint of their user each), deletes tombstones last modified before
    /// `purgeBefore`, and deletes deliveries finished before `purgeBefore`.
    ///
    /// Expiry runs in batches of at most ``sweepBatch`` feeds, one transaction each, with those
    /// feeds locked (see `PostgresStore+Versions.swift`): a sweep after a broadcast to 100 000
    /// users must not hold 100 000 advisory locks at once. Each batch is complete on its own
    /// (a notification's expiry commits together with its taps); the purge is the last
    /// transaction.
    ///
    /// - Returns: the feeds that got a new change version.
    public func sweep(now: Date, purgeBefore: Date, planner: DeliveryPlanner) async throws -> Set<FeedKey> {
        let logger = self.logger
        var changed = Set<FeedKey>()
        while true {
            let batch = try await transaction { db in try await Self.expireBatch(now: now, db, logger) }
            changed.formUnion(batch.changed)
            if batch.locked < Self.sweepBatch { break }
        }
        try await transaction { db in
            try await db.rows(
                """
                DELETE FROM hub_notification WHERE status <> 'active' AND last_modified_date_time < \(purgeBefore)
                """, logger)
            try await db.rows(
                "DELETE FROM hub_delivery WHERE state = 'finished' AND finished_at < \(purgeBefore)", logger)
        }
        return changed
    }

    /// Expires the due notifications of up to ``sweepBatch`` feeds and taps their users.
    /// - Returns: how many feeds it locked, and those it changed (fewer when another instance's
    ///   sweep expired some first).
    private static func expireBatch(
        now: Date, _ db: PostgresConnection, _ logger: Logger
    ) async throws -> (locked: Int, changed: Set<FeedKey>) {
        let feeds = try await db.rows(
            """
            SELECT DISTINCT app_id COLLATE "C" AS app_id, user_id COLLATE "C" AS user_id FROM hub_notification
            WHERE status = 'active' AND expiration_date_time <= \(now)
            ORDER BY 1, 2 LIMIT \(sweepBatch)
            """, logger
        ).map { row in
            let (appId, userId) = try row.decode((String, String).self)
            return FeedKey(appId: appId, userId: userId)
        }
        guard !feeds.isEmpty else { return (0, []) }
        try await lockFeeds(feeds, on: db, logger: logger)
        // A new statement, so it sees what the previous holders of the locks committed. Each
        // expired notification takes a version; each feed's endpoints get one tap that names the
        // newest expired notification, with the highest priority among them (what tapping once
        // per notification and coalescing would leave).
        let rows = try await db.rows(
            """
            WITH expired AS (
                UPDATE hub_notification n
                SET status = 'expired', last_modified_date_time = \(now),
                    change_version = nextval('hub_change_version')
                FROM unnest(\(feeds.map(\.appId))::text[], \(feeds.map(\.userId))::text[]) AS f(app_id, user_id)
                WHERE n.app_id = f.app_id AND n.user_id = f.user_id
                    AND n.status = 'active' AND n.expiration_date_time <= \(now)
                RETURNING n.app_id, n.user_id, n.id, n.change_version, n.priority,
                    CASE n.priority WHEN 'high' THEN 2 WHEN 'low' THEN 1 ELSE 0 END::smallint AS urgency
            ), newest AS (
                SELECT DISTINCT ON (app_id, user_id) app_id, user_id, id, change_version,
                    first_value(priority) OVER feed AS priority, max(urgency) OVER feed AS urgency
                FROM expired
                WINDOW feed AS (PARTITION BY app_id, user_id ORDER BY urgency DESC)
                ORDER BY app_id, user_id, change_version DESC
            ), taps AS (
                INSERT INTO hub_delivery AS d (app_id, user_id, endpoint_id, transport, kind, notification_id,
                    change_version, priority, urgency, state, created_at, due_at)
                SELECT e.app_id, e.user_id, e.id, e.transport, 'shoulderTap', x.id, x.change_version, x.priority,
                    x.urgency, 'pending', \(now), \(now)
                FROM newest x
                JOIN hub_endpoint e ON e.app_id = x.app_id AND e.user_id = x.user_id AND e.state = 'active'
                    AND e.transport <> 'polling'
                ON CONFLICT (app_id, user_id, endpoint_id)
                    WHERE state = 'pending' AND kind = 'shoulderTap' AND lease_owner IS NULL
                DO UPDATE SET
                    change_version = EXCLUDED.change_version, notification_id = EXCLUDED.notification_id,
                    priority = CASE WHEN EXCLUDED.urgency > d.urgency THEN EXCLUDED.priority ELSE d.priority END,
                    urgency = GREATEST(d.urgency, EXCLUDED.urgency), due_at = LEAST(d.due_at, EXCLUDED.due_at)
            )
            SELECT DISTINCT app_id, user_id FROM expired
            """, logger)
        var changed = Set<FeedKey>()
        for row in rows {
            let (appId, userId) = try row.decode((String, String).self)
            changed.insert(FeedKey(appId: appId, userId: userId))
        }
        return (feeds.count, changed)
    }
}
