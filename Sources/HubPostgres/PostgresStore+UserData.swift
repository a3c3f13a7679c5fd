public import Foundation
public import HubCore
import PostgresNIO

// A user's data, exported and erased (`UserDataStore`). User IDs compare byte for byte
// (`COLLATE "C"`), as the broadcasts' expansion orders them.
extension PostgresStore {
    /// Everything held about the user, read in one repeatable-read snapshot.
    public func exportUser(_ key: FeedKey) async throws -> UserRecord {
        try Identifier.checkBeforeStoring(key)
        return try await transaction { db in
            try await db.rows("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let notifications = try await db.rows(
                """
                SELECT \(unescaped: NotificationColumns.list),
                    COALESCE(published_version, change_version) AS export_published_version,
                    read_by, read_at, dismissed_by, dismissed_at
                FROM hub_notification WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                ORDER BY created_date_time DESC, change_version DESC
                """
            ).map { row in
                let cells = row.makeRandomAccess()
                return NotificationTrace(
                    notification: try UserNotification(row: cells),
                    publishedVersion: try cells.value("export_published_version"), readBy: try cells.value("read_by"),
                    readAt: try cells.value("read_at"), dismissedBy: try cells.value("dismissed_by"),
                    dismissedAt: try cells.value("dismissed_at"), deliveries: [])
            }
            let endpoints = try await db.rows(
                """
                SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
                WHERE app_id = \(key.appId) AND user_id = \(key.userId) ORDER BY id COLLATE "C"
                """
            ).map { try Endpoint(row: $0) }
            let tags = try await db.rows(
                """
                SELECT tag FROM hub_user_tag WHERE app_id = \(key.appId) AND user_id = \(key.userId) ORDER BY tag
                """
            ).map { try $0.decode(String.self) }
            let deliveries = try await db.rows(
                """
                SELECT \(unescaped: Self.traceColumns) FROM hub_delivery
                WHERE app_id = \(key.appId) AND user_id = \(key.userId) ORDER BY id
                """
            ).map(Self.deliveryTrace(row:))
            let broadcasts = try await db.rows(
                """
                SELECT b.id FROM hub_broadcast_user u JOIN hub_broadcast b ON b.seq = u.broadcast_seq
                WHERE b.app_id = \(key.appId) AND u.user_id = \(key.userId) ORDER BY b.seq
                """
            ).map { try $0.decode(String.self) }
            return UserRecord(
                notifications: notifications, endpoints: endpoints, tags: tags, deliveries: deliveries,
                broadcasts: broadcasts)
        }
    }

    /// Removes every row naming the user in one transaction.
    public func eraseUser(_ key: FeedKey, at now: Date) async throws -> UserErasure {
        try Identifier.checkBeforeStoring(key)
        return try await transaction { db in
            var erased = UserErasure()
            func count(_ rows: [PostgresRow]) throws -> Int { try rows.first?.decode(Int.self) ?? 0 }
            erased.notifications = try count(
                await db.rows(
                    """
                    WITH gone AS (DELETE FROM hub_notification WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                        RETURNING 1) SELECT count(*)::int8 FROM gone
                    """))
            // The counts of those notifications.
            _ = try await db.rows(
                "DELETE FROM hub_badge_counter WHERE app_id = \(key.appId) AND user_id = \(key.userId)")
            erased.endpoints = try count(
                await db.rows(
                    """
                    WITH gone AS (DELETE FROM hub_endpoint WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                        RETURNING 1) SELECT count(*)::int8 FROM gone
                    """))
            erased.tags = try count(
                await db.rows(
                    """
                    WITH gone AS (DELETE FROM hub_user_tag WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                        RETURNING 1) SELECT count(*)::int8 FROM gone
                    """))
            erased.deliveries = try count(
                await db.rows(
                    """
                    WITH gone AS (DELETE FROM hub_delivery WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                        RETURNING 1) SELECT count(*)::int8 FROM gone
                    """))
            erased.broadcasts = try await Self.eraseFromBroadcasts(db, key, now: now)
            return erased
        }
    }

    /// Takes the user out of the app's broadcasts: a `users` audience's list, the chunks being
    /// published (a chunk left without users goes), and an expansion cursor at the user (moved to
    /// the greatest user before it that any audience could name, so the same users come next).
    /// The broadcasts' rows are locked first, as an expansion locks them.
    /// - Returns: how many broadcasts named the user.
    private static func eraseFromBroadcasts(_ db: Session, _ key: FeedKey, now: Date) async throws -> Int {
        let (app, user) = (key.appId, key.userId)
        var touched = Set(
            try await db.rows(
                """
                WITH gone AS (
                    DELETE FROM hub_broadcast_user u USING hub_broadcast b
                    WHERE b.seq = u.broadcast_seq AND b.app_id = \(app) AND u.user_id = \(user)
                    RETURNING u.broadcast_seq)
                SELECT broadcast_seq FROM gone
                """
            ).map { try $0.decode(Int64.self) })
        let cursors = try await db.rows(
            """
            SELECT seq FROM hub_broadcast WHERE app_id = \(app) AND cursor = \(user) ORDER BY seq FOR UPDATE
            """
        ).map { try $0.decode(Int64.self) }
        let chunks = try await db.rows(
            """
            SELECT c.broadcast_seq, c.through, c.users FROM hub_broadcast_chunk c
            JOIN hub_broadcast b ON b.seq = c.broadcast_seq
            WHERE b.app_id = \(app) AND \(user)::text = ANY (c.users) FOR UPDATE OF c
            """)
        for chunk in chunks {
            let (seq, through, users) = try chunk.decode((Int64, String, [String]).self)
            let left = users.filter { $0 != user }
            touched.insert(seq)
            if let last = left.last {
                try await db.rows(
                    """
                    UPDATE hub_broadcast_chunk SET users = \(left)::text[], through = \(last)
                    WHERE broadcast_seq = \(seq) AND through = \(through)
                    """)
            } else {
                try await db.rows(
                    "DELETE FROM hub_broadcast_chunk WHERE broadcast_seq = \(seq) AND through = \(through)")
                try await completeIfFinished(db, seq: seq, now: now)
            }
        }
        for seq in cursors {
            touched.insert(seq)
            try await db.rows(
                """
                UPDATE hub_broadcast SET cursor = COALESCE((
                    SELECT max(candidate COLLATE "C") FROM (
                        SELECT max(user_id COLLATE "C") AS candidate FROM hub_endpoint
                            WHERE app_id = \(app) AND user_id COLLATE "C" < \(user)
                        UNION ALL SELECT max(user_id COLLATE "C") FROM hub_notification
                            WHERE app_id = \(app) AND user_id COLLATE "C" < \(user)
                        UNION ALL SELECT max(user_id) FROM hub_user_tag WHERE app_id = \(app) AND user_id < \(user)
                        UNION ALL SELECT max(user_id) FROM hub_broadcast_user
                            WHERE broadcast_seq = \(seq) AND user_id < \(user)) AS before), '')
                WHERE seq = \(seq)
                """)
        }
        return touched.count
    }
}
