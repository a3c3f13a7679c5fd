public import Foundation
public import HubCore
import PostgresNIO

// What the outbox holds, read without changing it: when the next row is due, depth and statistics.
extension PostgresStore {
    /// The earliest time a pending delivery becomes claimable: its due time, or for a leased one
    /// the later of due time and lease end. `nil` when nothing is pending. Suspended deliveries
    /// never become claimable by time.
    public func nextDueDate() async throws -> Date? {
        try await rows(
            """
            SELECT min(\(unescaped: OutboxMachine.claimableFromSQL(DeliveryColumns.name, greatest: "greatest")))
            FROM hub_delivery WHERE \(unescaped: OutboxMachine.unparkedSQL(DeliveryColumns.name))
            """
        ).first?.decode(Date?.self)
    }

    /// Pending deliveries, and finished ones by transport, then result.
    public func deliveryStatistics() async throws -> DeliveryStatistics {
        var statistics = try await outboxDepth()
        for row in try await rows(
            """
            SELECT transport, coalesce(result, '') AS result, count(*) AS count
            FROM hub_delivery WHERE state = 'finished' GROUP BY transport, result
            """)
        {
            let (transport, result, count) = try row.decode((String, String, Int).self)
            statistics.finished[transport, default: [:]][result, default: 0] += count
        }
        return statistics
    }

    /// Pending and suspended deliveries: reads the pending rows only (the partial indexes
    /// `hub_delivery_due` and `hub_delivery_suspended`), never the finished history.
    public func outboxDepth() async throws -> DeliveryStatistics {
        let pending =
            try await rows("SELECT count(*) FROM hub_delivery WHERE state = 'pending'").first?.decode(Int.self) ?? 0
        var statistics = DeliveryStatistics(pending: pending, finished: [:])
        for row in try await rows(
            """
            SELECT DISTINCT ON (app_id, transport) app_id, transport,
                count(*) OVER (PARTITION BY app_id, transport) AS count, suspended_reason, suspended_at
            FROM hub_delivery WHERE state = 'pending' AND suspended_at IS NOT NULL
            ORDER BY app_id, transport, suspended_at DESC, id DESC
            """)
        {
            let (app, transport, count, reason, at) = try row.decode((String, String, Int, String?, Date).self)
            statistics.suspended.append(
                SuspendedDeliveries(
                    appId: app, transport: TransportID(rawValue: transport), count: count, lastReason: reason,
                    lastSuspendedAt: at))
        }
        return statistics
    }
}

/// `list` with every column qualified by `table`, for statements that join.
func qualified(_ list: String, _ table: String) -> String {
    list.split(separator: ",").map { "\(table).\($0.trimmingCharacters(in: .whitespacesAndNewlines))" }
        .joined(separator: ", ")
}
