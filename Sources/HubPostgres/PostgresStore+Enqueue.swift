import Foundation
import HubCore
import Logging
import PostgresNIO

// Enqueueing deliveries: called inside the transactions that change a notification, with its
// feed locked. Each kind of delivery is one set-based `INSERT … SELECT` over the user's endpoints.
extension PostgresStore {
    /// Enqueues what a publish of `notification` sends, for every active push endpoint of the user
    /// whose platform its target policy includes (polling endpoints get no outbox rows: the hub
    /// wakes them itself after the commit):
    /// - a `visible` delivery when `mode` is visible and the payload has visual content (visible
    ///   deliveries never coalesce);
    /// - otherwise a shoulder tap (coalesced, see ``enqueueTaps(about:platforms:except:now:on:logger:)``),
    ///   and for a high-priority notification with a fallback policy a `fallback` delivery to each
    ///   endpoint, due `timeoutSeconds` after `now`.
    static func enqueueDeliveries(
        for notification: UserNotification, mode: DeliveryMode, now: Date, on db: PostgresConnection,
        logger: Logger
    ) async throws {
        let visible = mode == .visible && notification.payload.visualContent != nil
        let platforms = notification.targetPolicy.platformTypes.map(\.rawValue)
        if visible {
            try await insert(.visible, about: notification, dueAt: now, now: now, platforms: platforms, db, logger)
            return
        }
        try await enqueueTaps(about: notification, platforms: platforms, except: nil, now: now, on: db, logger: logger)
        if notification.priority == .high, let policy = notification.fallbackPolicy {
            let due = now.addingTimeInterval(TimeInterval(policy.timeoutSeconds))
            try await insert(.fallback, about: notification, dueAt: due, now: now, platforms: platforms, db, logger)
        }
    }

    /// Taps the user's active push endpoints (not polling ones) about `notification`'s latest change.
    ///
    /// A tap coalesces into the endpoint's pending, unleased tap when there is one (the unique
    /// index `hub_delivery_pending_tap` finds it): that tap takes the newest version and
    /// notification, the higher priority and the earlier due time.
    /// - Parameters:
    ///   - platforms: only endpoints on these platforms; empty for all.
    ///   - except: the endpoint that made the change, not tapped back.
    static func enqueueTaps(
        about notification: UserNotification, platforms: [String] = [], except: String?,
        now: Date, on db: PostgresConnection, logger: Logger
    ) async throws {
        let n = notification
        try await db.rows(
            """
            INSERT INTO hub_delivery AS d (app_id, user_id, endpoint_id, transport, kind, notification_id,
                change_version, priority, urgency, state, created_at, due_at)
            SELECT app_id, user_id, id, transport, 'shoulderTap', \(n.id), \(n.changeVersion), \(n.priority.rawValue),
                \(n.priority.urgency), 'pending', \(now), \(now)
            FROM hub_endpoint
            WHERE app_id = \(n.appId) AND user_id = \(n.userId) AND state = 'active' AND transport <> 'polling'
                AND (cardinality(\(platforms)::text[]) = 0 OR platform = ANY(\(platforms)::text[]))
                AND id IS DISTINCT FROM \(except)::text
            ORDER BY id
            ON CONFLICT (app_id, user_id, endpoint_id)
                WHERE state = 'pending' AND kind = 'shoulderTap' AND lease_owner IS NULL
            DO UPDATE SET
                change_version = EXCLUDED.change_version, notification_id = EXCLUDED.notification_id,
                priority = CASE WHEN EXCLUDED.urgency > d.urgency THEN EXCLUDED.priority ELSE d.priority END,
                urgency = GREATEST(d.urgency, EXCLUDED.urgency), due_at = LEAST(d.due_at, EXCLUDED.due_at)
            """, logger)
    }

    /// Inserts one `kind` delivery (visible or fallback) per active, non-polling endpoint of the
    /// user on `platforms` (empty: all).
    private static func insert(
        _ kind: DeliveryKind, about n: UserNotification, dueAt: Date, now: Date, platforms: [String],
        _ db: PostgresConnection, _ logger: Logger
    ) async throws {
        try await db.rows(
            """
            INSERT INTO hub_delivery (app_id, user_id, endpoint_id, transport, kind, notification_id,
                change_version, priority, urgency, state, created_at, due_at)
            SELECT app_id, user_id, id, transport, \(kind.rawValue), \(n.id), \(n.changeVersion), \(n.priority.rawValue),
                \(n.priority.urgency), 'pending', \(now), \(dueAt)
            FROM hub_endpoint
            WHERE app_id = \(n.appId) AND user_id = \(n.userId) AND state = 'active' AND transport <> 'polling'
                AND (cardinality(\(platforms)::text[]) = 0 OR platform = ANY(\(platforms)::text[]))
            ORDER BY id
            """, logger)
    }
}
