import Foundation
public import HubCore
import PostgresNIO

// Badge counters (`hub_badge_counter`), kept in the transaction of every change of a notification,
// which holds the feed's lock (so two changes of one user's counters never interleave).
extension PostgresStore {
    /// Version 10: `hub_badge_counter`, the user's active, unread, undismissed notifications per
    /// scope (a targeted platform, or `*` for those that target every platform; see `BadgeCount`),
    /// kept by every change of a notification. Filled from the notifications already stored.
    static let schemaV10 = [
        """
        CREATE TABLE hub_badge_counter (
            app_id text NOT NULL,
            user_id text COLLATE "C" NOT NULL,
            scope text NOT NULL,
            unread bigint NOT NULL,
            PRIMARY KEY (app_id, user_id, scope)
        )
        """,
        """
        INSERT INTO hub_badge_counter (app_id, user_id, scope, unread)
        SELECT app_id, user_id, scope, count(*) FROM (
            SELECT app_id, user_id, id, '*' AS scope FROM hub_notification
            WHERE status = 'active' AND read_state = 'unread' AND user_action_state <> 'dismissed'
                AND jsonb_array_length(target_policy -> 'platformTypes') = 0
            UNION
            SELECT n.app_id, n.user_id, n.id, p.value
            FROM hub_notification n, jsonb_array_elements_text(n.target_policy -> 'platformTypes') AS p(value)
            WHERE n.status = 'active' AND n.read_state = 'unread' AND n.user_action_state <> 'dismissed'
        ) counted
        GROUP BY app_id, user_id, scope
        """,
    ]

    /// The badge of a device of `platform`: the sum of the user's counters of its scopes
    /// (``BadgeCount/scopes(for:)``), one read of at most two rows.
    public func badgeCount(_ key: FeedKey, platform: Platform) async throws -> Int {
        try Identifier.checkBeforeStoring(key)
        let scopes = BadgeCount.scopes(for: platform)
        let counters = try await rows(
            """
            SELECT unread FROM hub_badge_counter
            WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND scope = ANY(\(scopes)::text[])
            """
        ).map { Int(try $0.decode(Int64.self)) }
        return BadgeCount.badge(fromCounters: counters)
    }

    /// Moves the badge counters as the changes `changes` (before, after) of notifications do
    /// (``BadgeCount/changes(from:to:)``), in one statement; none when no badge moves. Call inside
    /// the changes' transaction, with their feeds locked.
    static func countBadges(
        _ changes: [(before: UserNotification?, after: UserNotification)], _ db: Session
    )
        async throws
    {
        let deltas = BadgeCount.merged(changes.flatMap { BadgeCount.changes(from: $0.before, to: $0.after) })
        guard !deltas.isEmpty else { return }
        try await db.rows(
            """
            INSERT INTO hub_badge_counter (app_id, user_id, scope, unread)
            SELECT * FROM unnest(\(deltas.map(\.appId))::text[], \(deltas.map(\.userId))::text[],
                \(deltas.map(\.scope))::text[], \(deltas.map { Int64($0.delta) })::bigint[])
            ON CONFLICT (app_id, user_id, scope) DO UPDATE SET unread = hub_badge_counter.unread + excluded.unread
            """)
    }
}
