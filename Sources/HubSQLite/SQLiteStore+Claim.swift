public import Foundation
import GRDB
public import HubCore

// Claiming due deliveries with leases, and reading what their sends need. The rules are
// OutboxMachine's; this file renders and applies them.
extension SQLiteStore {
    /// ``OutboxStore/claimDeliveries(_:limit:now:owner:leaseUntil:)``: a reader looks for a due
    /// row first; then the rows whose lease ended and the waiting ones are picked
    /// (``OutboxMachine/takenOverSQL(_:now:)``, ``OutboxMachine/waitingSQL(_:now:)``, each in
    /// ``OutboxMachine/claimOrder``), one `UPDATE … RETURNING` leases them
    /// (``OutboxMachine/leaseSQL(target:current:owner:until:now:)``) and one join reads what the
    /// sends need. Rows whose endpoint is removed or inactive are closed as
    /// ``OutboxMachine/supersededAtClaim`` and not returned.
    public func claimDeliveries(
        _ lane: OutboxLane, limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        guard limit > 0 else { return [] }
        let claimable = Self.claimable(lane, at: now.canonical)
        // Most pokes find a lane empty (a publish pokes every lane): ask a reader first, and
        // leave the one writer to claims that take something.
        let anyDue = try await read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 \(claimable.rows))"), arguments: claimable.arguments)
                ?? false
        }
        guard anyDue else { return [] }
        let takenOver = Self.claimable(lane, at: now.canonical, leased: true)
        let fresh = Self.claimable(lane, at: now.canonical, leased: false)
        return try await write(.relaxed) { db in
            let now = now.canonical
            // Expired leases first (``OutboxMachine/isClaimed(_:takenOver:before:takenOver:)``),
            // then the waiting rows, each in ``OutboxMachine/claimOrder``.
            let expired = try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT id \(takenOver.rows) ORDER BY \(Self.claimOrderSQL) LIMIT ?"),
                arguments: takenOver.arguments + [limit])
            var picked = expired
            if expired.count < limit {
                picked += try Int64.fetchAll(
                    db.cachedStatement(sql: "SELECT id \(fresh.rows) ORDER BY \(Self.claimOrderSQL) LIMIT ?"),
                    arguments: fresh.arguments + [limit - expired.count])
            }
            guard !picked.isEmpty else { return [] }
            let ids = try Int64.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE delivery SET \(Self.leaseSQL)
                        WHERE id IN (SELECT value FROM json_each(?))
                        RETURNING id
                        """),
                arguments: [
                    owner, leaseUntil.canonical.storedSeconds, now.storedSeconds,
                    JSONText.array(picked.map(JSONText.number)),
                ])
            guard !ids.isEmpty else { return [] }
            let wasTakenOver = Set(expired)
            let idList = JSONText.array(ids.map(JSONText.number))
            var claimed: [ClaimedDelivery] = []
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: Self.claimedSQL), arguments: [idList], adapter: Self.claimedAdapter)
            while let row = try rows.next() {
                let record = DeliveryRecord(positional: row.scopes["delivery"]!)
                let endpoint = EndpointRecord(positional: row.scopes["endpoint"]!).endpoint
                guard endpoint.state == .active else { continue }
                let notificationRow = row.scopes["notification"]!
                let notification =
                    notificationRow.hasNull(atIndex: 0)
                    ? nil : try NotificationRecord(row: notificationRow).notification
                claimed.append(
                    ClaimedDelivery(delivery: record.delivery, endpoint: endpoint, notification: notification))
            }
            let sendable = Set(claimed.map(\.delivery.id))
            let unsendable = ids.filter { !sendable.contains($0) }
            if !unsendable.isEmpty {
                try Self.finishPlain(
                    db,
                    unsendable.map {
                        PlainFinish(
                            id: $0, result: OutboxMachine.supersededAtClaim.result,
                            detail: OutboxMachine.supersededAtClaim.detail, messageId: nil)
                    }, at: now, as: .closed)
            }
            return claimed.sorted {
                OutboxMachine.isClaimed(
                    $0.delivery, takenOver: wasTakenOver.contains($0.delivery.id), before: $1.delivery,
                    takenOver: wasTakenOver.contains($1.delivery.id))
            }
        }
    }

    /// `FROM … WHERE …` of `lane`'s rows claimable at `now` (``OutboxMachine/claimableSQL(_:now:)``),
    /// and its arguments. Every lane walks `delivery_lane`, a
    /// transport's lane in claim order (without statistics the planner would pick another index and
    /// sort every due row of every transport).
    ///
    /// - Parameter leased: `true`: only rows whose lease ended (through `delivery_leased`, the few
    ///   rows under a lease); `false`: only unleased rows; `nil`: both.
    static func claimable(
        _ lane: OutboxLane, at now: Date, leased: Bool? = nil
    ) -> (rows: String, arguments: StatementArguments) {
        let (filter, arguments): (String, StatementArguments) =
            switch lane {
            case .all: ("", [])
            case .transport(let id): ("AND transport = ?", [id.rawValue])
            case .otherThan(let transports):
                (
                    "AND transport NOT IN (SELECT value FROM json_each(?))",
                    [JSONText.array(transports.map(\.rawValue).sorted().map(JSONText.string))]
                )
            }
        switch leased {
        case true?:
            return (
                "FROM delivery INDEXED BY delivery_leased WHERE \(takenOverSQL) \(filter)",
                [now.storedSeconds, now.storedSeconds] + arguments
            )
        case false?:
            return (
                "FROM delivery INDEXED BY delivery_lane WHERE \(waitingSQL) \(filter)", [now.storedSeconds] + arguments
            )
        case nil:
            return (
                "FROM delivery INDEXED BY delivery_lane WHERE \(claimableSQL) \(filter)",
                [now.storedSeconds, now.storedSeconds] + arguments
            )
        }
    }

    /// ``OutboxMachine/claimableSQL(_:now:)``, the claim's time bound twice.
    static let claimableSQL = OutboxMachine.claimableSQL(\.rawValue, now: "?")

    /// ``OutboxMachine/takenOverSQL(_:now:)``, the claim's time bound twice.
    static let takenOverSQL = OutboxMachine.takenOverSQL(\.rawValue, now: "?")

    /// ``OutboxMachine/waitingSQL(_:now:)``, the claim's time bound once.
    static let waitingSQL = OutboxMachine.waitingSQL(\.rawValue, now: "?")

    /// ``OutboxMachine/claimOrder`` as the `ORDER BY` list of `delivery_lane`'s columns.
    static let claimOrderSQL = OutboxMachine.claimOrderSQL(\.rawValue)

    /// The claimed rows with their endpoints and notifications, by a JSON array of delivery IDs:
    /// each table's columns named in the order its positional reader takes them.
    static let claimedSQL = """
        SELECT \(qualified(DeliveryRecord.positionalColumns, "d")),
            \(qualified(endpointColumns, "e")),
            \(qualified(notificationColumns, "n"))
        FROM delivery d
        JOIN endpoint e ON e.appId = d.appId AND e.userId = d.userId AND e.id = d.endpointId
        LEFT JOIN notification n ON n.appId = d.appId AND n.userId = d.userId AND n.id = d.notificationId
        WHERE d.id IN (SELECT value FROM json_each(?))
        """

    /// ``EndpointRecord/positionalColumns`` as a list.
    static let endpointColumns = columnList(EndpointRecord.positionalColumns)

    /// ``NotificationRecord/selection`` as a list.
    static let notificationColumns = columnList(NotificationRecord.selection)

    /// The column names of a comma-separated list.
    static func columnList(_ columns: String) -> [String] {
        columns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// `columns`, each qualified by the table alias `alias`, comma-separated.
    static func qualified(_ columns: [String], _ alias: String) -> String {
        columns.map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    /// Splits a ``claimedSQL`` row into its delivery (``DeliveryRecord/positionalColumns``),
    /// endpoint (``EndpointRecord/positionalColumns``) and notification
    /// (``NotificationRecord/selection``), each read by position.
    static let claimedAdapter = ScopeAdapter([
        "delivery": RangeRowAdapter(0..<DeliveryRecord.positionalColumns.count),
        "endpoint": RangeRowAdapter(
            DeliveryRecord.positionalColumns.count..<DeliveryRecord.positionalColumns.count + endpointColumns.count),
        "notification": SuffixRowAdapter(fromIndex: DeliveryRecord.positionalColumns.count + endpointColumns.count),
    ])
}
