public import Foundation
import GRDB
public import HubCore

// What the outbox holds, read without changing it: when the next row is due, depth and
// statistics, and every row for the differential test.
extension SQLiteStore {
    /// The earliest time a pending delivery becomes claimable: its `dueAt`, or for a leased one
    /// the later of `dueAt` and `leaseUntil`. `nil` when nothing is pending. Suspended deliveries
    /// never become claimable by time.
    public func nextDueDate() async throws -> Date? {
        try await read { db in
            try Double.fetchOne(db.cachedStatement(sql: Self.nextDueSQL)).map(Date.init(storedSeconds:))
        }
    }

    /// ``nextDueDate()``'s statement.
    static let nextDueSQL = """
        SELECT MIN(\(OutboxMachine.claimableFromSQL(\.rawValue, greatest: "MAX")))
        FROM delivery INDEXED BY delivery_lane WHERE \(OutboxMachine.unparkedSQL(\.rawValue))
        """

    /// Pending deliveries, and finished ones by transport, then result.
    public func deliveryStatistics() async throws -> DeliveryStatistics {
        try await read { db in try Self.statistics(db, countingFinished: true) }
    }

    /// Pending and suspended deliveries: reads the pending rows only (`delivery_lane`, `delivery_suspended`).
    public func outboxDepth() async throws -> DeliveryStatistics {
        try await read { db in try Self.statistics(db, countingFinished: false) }
    }

    /// The pending rows: those of the lanes' index plus the suspended ones.
    static let pendingCountSQL = """
        SELECT (SELECT COUNT(*) FROM delivery INDEXED BY delivery_lane WHERE state = 'pending' AND suspendedAt IS NULL)
            + (SELECT COUNT(*) FROM delivery INDEXED BY delivery_suspended
                WHERE state = 'pending' AND suspendedAt IS NOT NULL)
        """

    private static func statistics(_ db: Database, countingFinished: Bool) throws -> DeliveryStatistics {
        let pending = try Int.fetchOne(db.cachedStatement(sql: Self.pendingCountSQL)) ?? 0
        var finished: [String: [String: Int]] = [:]
        if countingFinished {
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT transport, IFNULL(result, '') AS result, COUNT(*) AS count
                        FROM delivery WHERE state = 'finished' GROUP BY transport, result
                        """))
            for row in rows {
                finished[row["transport"], default: [:]][row["result"]] = row["count"]
            }
        }
        // SQLite takes the bare column `suspendedReason` from the row of MAX(suspendedAt).
        let suspended = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT appId, transport, COUNT(*) AS count, MAX(suspendedAt) AS lastAt, suspendedReason
                    FROM delivery INDEXED BY delivery_suspended
                    WHERE state = 'pending' AND suspendedAt IS NOT NULL
                    GROUP BY appId, transport ORDER BY appId, transport
                    """)
        ).map { row in
            SuspendedDeliveries(
                appId: row["appId"], transport: TransportID(rawValue: row["transport"]), count: row["count"],
                lastReason: row["suspendedReason"], lastSuspendedAt: row.optionalDate("lastAt"))
        }
        return DeliveryStatistics(pending: pending, finished: finished, suspended: suspended)
    }
}

extension SQLiteStore {
    /// Every row of the outbox, pending and finished, by ID: what the differential test compares
    /// with the other store and the reference model.
    func outboxRecords() async throws -> [DeliveryRecord] {
        try await read { db in
            try DeliveryRecord.fetchAll(db.cachedStatement(sql: "SELECT * FROM delivery ORDER BY id"))
        }
    }
}
