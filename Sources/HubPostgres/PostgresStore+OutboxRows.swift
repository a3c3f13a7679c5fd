import Foundation
import HubCore
import Logging
import PostgresNIO

/// (app, user, id): the key of an endpoint or a notification row.
struct RowKey: Hashable {
    let appId: String
    let userId: String
    let id: String
    init(_ appId: String, _ userId: String, _ id: String) {
        self.appId = appId
        self.userId = userId
        self.id = id
    }
}

/// What finishing a delivery tells the caller.
struct FinishedDelivery {
    let appId: String
    let userId: String
    let endpointId: String
    /// When its last lease was taken.
    let claimedAt: Date?
}

extension DeliveryColumns {
    /// The column list qualified by `alias`, for statements that join.
    static func qualified(_ alias: String) -> String {
        list.split(separator: ",").map { "\(alias).\($0.trimmingCharacters(in: .whitespacesAndNewlines))" }
            .joined(separator: ", ")
    }
}

// Statements shared by the outbox methods (run inside their transactions).
extension PostgresStore {
    /// The delivery `id` if it is still pending.
    static func pendingDelivery(_ id: Int64, _ db: PostgresConnection, _ logger: Logger) async throws -> Delivery? {
        try await db.rows(
            "SELECT \(unescaped: DeliveryColumns.list) FROM hub_delivery WHERE id = \(id) AND state = 'pending'",
            logger
        ).first.map(Delivery.init(row:))
    }

    /// Marks a pending delivery finished with `result` (its lease ends).
    /// - Returns: what was finished, or `nil` when the delivery is unknown or already finished.
    @discardableResult
    static func finish(
        _ id: Int64, _ result: DeliveryResult, _ detail: String?, _ now: Date, _ db: PostgresConnection,
        _ logger: Logger
    ) async throws -> FinishedDelivery? {
        let rows = try await db.rows(
            """
            UPDATE hub_delivery SET state = 'finished', result = \(result.rawValue), detail = \(detail),
                finished_at = \(now), lease_owner = NULL, lease_until = NULL
            WHERE id = \(id) AND state = 'pending'
            RETURNING app_id, user_id, endpoint_id, claimed_at
            """, logger)
        guard let row = rows.first else { return nil }
        let (appId, userId, endpointId, claimedAt) = try row.decode((String, String, String, Date?).self)
        return FinishedDelivery(appId: appId, userId: userId, endpointId: endpointId, claimedAt: claimedAt)
    }

    /// The endpoints the deliveries go to, by key; removed ones are missing.
    static func endpoints(
        of deliveries: [Delivery], _ db: PostgresConnection, _ logger: Logger
    ) async throws -> [RowKey: Endpoint] {
        let rows = try await db.rows(
            """
            SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
            WHERE (app_id, user_id, id) IN (
                SELECT * FROM unnest(\(deliveries.map(\.appId))::text[], \(deliveries.map(\.userId))::text[],
                    \(deliveries.map(\.endpointId))::text[]))
            """, logger)
        var endpoints: [RowKey: Endpoint] = [:]
        for row in rows {
            let endpoint = try Endpoint(row: row)
            endpoints[RowKey(endpoint.appId, endpoint.userId, endpoint.id)] = endpoint
        }
        return endpoints
    }

    /// The notifications the deliveries name, by key; purged ones are missing.
    static func notifications(
        of deliveries: [Delivery], _ db: PostgresConnection, _ logger: Logger
    ) async throws -> [RowKey: UserNotification] {
        let named = deliveries.filter { $0.notificationId != nil }
        guard !named.isEmpty else { return [:] }
        let rows = try await db.rows(
            """
            SELECT \(unescaped: NotificationColumns.list) FROM hub_notification
            WHERE (app_id, user_id, id) IN (
                SELECT * FROM unnest(\(named.map(\.appId))::text[], \(named.map(\.userId))::text[],
                    \(named.map { $0.notificationId ?? "" })::text[]))
            """, logger)
        var notifications: [RowKey: UserNotification] = [:]
        for row in rows {
            let notification = try UserNotification(row: row)
            notifications[RowKey(notification.appId, notification.userId, notification.id)] = notification
        }
        return notifications
    }
}
