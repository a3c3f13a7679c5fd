import Foundation
import GRDB
public import HubCore

// Delivery receipts: a notification with its deliveries, and who read or dismissed it.
extension SQLiteStore {
    /// The notification (by hub ID, else `appNotificationId`) with its visible and fallback
    /// deliveries and the user's shoulder taps at or after its latest publish (see
    /// ``NotificationTrace``); the receipt picks each endpoint's first such tap.
    public func deliveryTrace(_ key: FeedKey, id: String) async throws -> NotificationTrace? {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await read { db in
            guard let notification = try Self.findNotification(db, key, id: id) else { return nil }
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT COALESCE(publishedVersion, changeVersion), readBy, readAt, dismissedBy, dismissedAt
                            FROM notification WHERE appId = ? AND userId = ? AND id = ?
                            """),
                    arguments: [key.appId, key.userId, notification.id])
            else { return nil }
            let publishedVersion: Int64 = row[0]
            // Per endpoint: the notification's own rows, and its taps from the published version
            // on, the earliest first (a tap that lasts is found among the first few).
            let deliveries = try DeliveryRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM delivery
                        WHERE appId = ? AND userId = ?
                            AND ((kind <> 'shoulderTap' AND notificationId = ?)
                                OR (kind = 'shoulderTap' AND changeVersion >= ?))
                        ORDER BY changeVersion, id LIMIT ?
                        """),
                arguments: [key.appId, key.userId, notification.id, publishedVersion, Self.traceLimit])
            return NotificationTrace(
                notification: Self.canonical(notification), publishedVersion: publishedVersion, readBy: row[1],
                readAt: row.optionalDate("readAt"), dismissedBy: row[3], dismissedAt: row.optionalDate("dismissedAt"),
                deliveries: deliveries.map(\.trace))
        }
    }

    /// The most outbox rows a receipt reads (a user with many endpoints and a long tap history).
    static let traceLimit = 5_000

    /// Notes which endpoint read or dismissed a notification, and when (in the change's transaction).
    static func noteWhoChanged(_ db: Database, _ change: StateChange, read: Bool, dismissed: Bool) throws {
        guard read || dismissed else { return }
        let at = change.now.canonical.storedSeconds
        try db.cachedStatement(
            sql: """
                UPDATE notification SET
                    readBy = CASE WHEN ?1 THEN ?3 ELSE readBy END, readAt = CASE WHEN ?1 THEN ?4 ELSE readAt END,
                    dismissedBy = CASE WHEN ?2 THEN ?3 ELSE dismissedBy END,
                    dismissedAt = CASE WHEN ?2 THEN ?4 ELSE dismissedAt END
                WHERE appId = ?5 AND userId = ?6 AND (id = ?7 OR appNotificationId = ?7)
                """
        ).execute(arguments: [
            read, dismissed, change.exceptEndpoint, at, change.key.appId, change.key.userId, change.id,
        ])
    }
}
