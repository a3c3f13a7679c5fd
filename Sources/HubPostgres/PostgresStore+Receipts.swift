import Foundation
public import HubCore
import PostgresNIO

// Delivery receipts: a notification with its deliveries, and who read or dismissed it.
extension PostgresStore {
    /// The notification (by hub ID, else `appNotificationId`) with its visible and fallback
    /// deliveries and the user's shoulder taps at or after its latest publish (see
    /// ``NotificationTrace``); the receipt picks each endpoint's first such tap.
    public func deliveryTrace(_ key: FeedKey, id: String) async throws -> NotificationTrace? {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await transaction { db in
            guard let notification = try await Self.findNotification(key, id: id, db) else { return nil }
            guard
                let row = try await db.rows(
                    """
                    SELECT COALESCE(published_version, change_version), read_by, read_at, dismissed_by, dismissed_at
                    FROM hub_notification
                    WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND id = \(notification.id)
                    """
                ).first
            else { return nil }
            let (publishedVersion, readBy, readAt, dismissedBy, dismissedAt) = try row.decode(
                (Int64, String?, Date?, String?, Date?).self)
            let deliveries = try await db.rows(
                """
                SELECT \(unescaped: Self.traceColumns)
                FROM hub_delivery
                WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                    AND ((kind <> 'shoulderTap' AND notification_id = \(notification.id))
                        OR (kind = 'shoulderTap' AND change_version >= \(publishedVersion)))
                ORDER BY change_version, id LIMIT \(Self.traceLimit)
                """
            ).map(Self.deliveryTrace(row:))
            return NotificationTrace(
                notification: notification, publishedVersion: publishedVersion, readBy: readBy, readAt: readAt,
                dismissedBy: dismissedBy, dismissedAt: dismissedAt, deliveries: deliveries)
        }
    }

    /// What a receipt selects of an outbox row, in the order ``deliveryTrace(row:)`` reads it.
    static let traceColumns = """
        \(DeliveryColumns.list), transport, state, result, detail, suspended_reason,
            lease_owner IS NOT NULL AS in_flight, first_sent_at, claimed_at, finished_at, provider_message_id
        """

    /// An outbox row selected with ``traceColumns``.
    static func deliveryTrace(row: PostgresRow) throws -> DeliveryTrace {
        let row = row.makeRandomAccess()
        let pending = try row.value("state", as: String.self) == "pending"
        let result: String? = try row.value("result")
        let claimedAt: Date? = try row.value("claimed_at")
        let firstSentAt: Date? = try row.value("first_sent_at")
        let leased = try row.value("in_flight", as: Bool.self)
        return DeliveryTrace(
            delivery: try Delivery(row: row), transport: TransportID(rawValue: try row.value("transport")),
            result: pending ? nil : result.map(DeliveryResult.init(rawValue:)), detail: try row.value("detail"),
            suspendedReason: pending ? try row.value("suspended_reason") : nil,
            inFlight: pending && leased,
            firstSentAt: firstSentAt ?? claimedAt, lastSentAt: claimedAt,
            finishedAt: try row.value("finished_at"),
            providerMessageId: try row.value("provider_message_id"))
    }

    /// The most outbox rows a receipt reads (a user with many endpoints and a long tap history).
    static let traceLimit = 5_000

    /// Notes which endpoint read or dismissed `notification`, and when (in the change's transaction).
    static func noteWhoChanged(
        _ notification: UserNotification, _ change: StateChange, read: Bool, dismissed: Bool, _ db: Session
    ) async throws {
        guard read || dismissed else { return }
        try await db.rows(
            """
            UPDATE hub_notification SET
                read_by = CASE WHEN \(read) THEN \(change.exceptEndpoint)::text ELSE read_by END,
                read_at = CASE WHEN \(read) THEN \(change.now)::timestamptz ELSE read_at END,
                dismissed_by = CASE WHEN \(dismissed) THEN \(change.exceptEndpoint)::text ELSE dismissed_by END,
                dismissed_at = CASE WHEN \(dismissed) THEN \(change.now)::timestamptz ELSE dismissed_at END
            WHERE app_id = \(notification.appId) AND user_id = \(notification.userId) AND id = \(notification.id)
            """)
    }
}
