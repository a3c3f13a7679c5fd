public import Foundation
public import HubCore
import PostgresNIO

// Claiming due deliveries in lanes, with leases across instances: one statement rendered from
// OutboxMachine's rules (the rest of the outbox: PostgresStore+Outbox.swift).
extension PostgresStore {
    /// Leases up to `limit` due deliveries of `lane` to `owner` until `leaseUntil`, each with its
    /// endpoint and notification, in one statement (one round trip).
    ///
    /// Which rows, in which order, and what a lease does to them are ``HubCore/OutboxMachine``'s
    /// (``HubCore/OutboxMachine/claimableSQL(_:now:)``, ``HubCore/OutboxMachine/claimOrder``,
    /// ``HubCore/OutboxMachine/leaseSQL(target:current:owner:until:now:)``). Lanes: `.transport(id)` takes the
    /// rows of that transport (served by the index `hub_delivery_lane`), `.otherThan(ids)` those
    /// of every other transport, `.all` everything. Rows are locked with `FOR UPDATE SKIP LOCKED`: instances claiming at the same
    /// moment take disjoint rows without waiting for each other, and a row another instance has
    /// just leased is re-checked and left alone, so while leases hold each delivery is sent by
    /// one instance. A row whose endpoint was removed or is
    /// inactive is finished as `superseded` and not returned, so fewer than `limit` may come back
    /// even when more are due.
    public func claimDeliveries(
        _ lane: OutboxLane, limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        guard limit > 0 else { return [] }
        var binds = PostgresBindings(capacity: 5)
        binds.append(now)
        binds.append(limit)
        binds.append(owner)
        binds.append(leaseUntil)
        let claimed = try await retrying {
            try await withSession { [binds] session in
                switch lane {
                case .all:
                    return try await session.run(ClaimAll.self, binds)
                case .transport(let id):
                    var binds = binds
                    binds.append(id.rawValue)
                    return try await session.run(ClaimTransport.self, binds)
                case .otherThan(let ids):
                    var binds = binds
                    binds.append(ids.map(\.rawValue))
                    return try await session.run(ClaimOthers.self, binds)
                }
            }
        }
        return try claimed.map { row in
            let row = row.makeRandomAccess()
            let notification: UserNotification? =
                try row.value(NotificationColumns.Names.joined.id, as: String?.self) == nil
                ? nil : try UserNotification(row: row, .joined)
            return ClaimedDelivery(
                delivery: try Delivery(row: row), endpoint: try Endpoint(row: row, .joined), notification: notification)
        }
    }

    /// The claim statement for a lane whose extra condition is `laneFilter` (binds `$5`).
    ///
    /// `taken_over` picks and locks the rows whose lease ended (through `hub_delivery_leased`),
    /// `fresh` the unleased ones for what is left of the limit: expired leases go first
    /// (``OutboxMachine/isClaimed(_:takenOver:before:takenOver:)``, each part in
    /// ``OutboxMachine/claimOrder``). `due` looks up their endpoints; `superseded` finishes those
    /// whose endpoint is gone or inactive; `claimed` leases the others; the final `SELECT` joins
    /// their endpoints and notifications (all in one snapshot, so a claimed row's endpoint is there).
    /// `due` finds each row by the pending partition's primary key and the updates take it at
    /// that place (``pendingPlacesSQL(_:columns:)``), whatever the statistics say: joined by ID,
    /// a plan made while the partition looked empty scanned it whole for every claimed row.
    fileprivate static func claimSQL(laneFilter: String) -> String {
        """
        WITH taken_over AS (
            SELECT d.id FROM hub_delivery d
            WHERE \(OutboxMachine.takenOverSQL(column("d"), now: "$1"))\(laneFilter)
            ORDER BY \(OutboxMachine.claimOrderSQL(column("d")))
            LIMIT $2
            FOR UPDATE OF d SKIP LOCKED
        ), fresh AS (
            SELECT d.id FROM hub_delivery d
            WHERE \(OutboxMachine.waitingSQL(column("d"), now: "$1"))\(laneFilter)
            ORDER BY \(OutboxMachine.claimOrderSQL(column("d")))
            LIMIT greatest($2 - (SELECT count(*) FROM taken_over), 0)
            FOR UPDATE OF d SKIP LOCKED
        ), due AS (
            SELECT p.id, p.taken_over, p.place, coalesce(e.state = 'active', false) AS deliverable
            FROM (\(pendingPlacesSQL(
                "SELECT id, true AS taken_over FROM taken_over UNION ALL SELECT id, false FROM fresh",
                columns: ["app_id", "user_id", "endpoint_id"]))) p
            LEFT JOIN hub_endpoint e ON e.app_id = p.app_id AND e.user_id = p.user_id AND e.id = p.endpoint_id
        ), superseded AS (
            UPDATE hub_delivery d SET \(supersededAtClaim)
            FROM due WHERE d.ctid = due.place AND d.state = 'pending' AND NOT due.deliverable
        ), claimed AS (
            UPDATE hub_delivery d SET \(OutboxMachine.leaseSQL(
                target: DeliveryColumns.name, current: column("d"), owner: "$3", until: "$4", now: "$1"))
            FROM due WHERE d.ctid = due.place AND d.state = 'pending' AND due.deliverable
            RETURNING due.taken_over, d.urgency, \(qualified(DeliveryColumns.list, "d"))
        )
        SELECT c.*, \(EndpointColumns.joined), \(NotificationColumns.joined)
        FROM claimed c
        JOIN hub_endpoint e ON e.app_id = c.app_id AND e.user_id = c.user_id AND e.id = c.endpoint_id
        LEFT JOIN hub_notification n ON n.app_id = c.app_id AND n.user_id = c.user_id AND n.id = c.notification_id
        ORDER BY c.taken_over DESC, \(OutboxMachine.claimOrderSQL(column("c")))
        """
    }

    /// Version 14: `hub_delivery_due` and `hub_delivery_lane` without leased rows. A fresh claim
    /// reads them for `lease_owner IS NULL` rows only (``HubCore/OutboxMachine/waitingSQL(_:now:)``;
    /// taking over ended leases goes through `hub_delivery_leased`), so a leased row's entries in
    /// them were never read: a hand-off's insert, a claim's lease and every lease renewal wrote
    /// 5 index entries, now 3 (`PostgresStoreTests`: both claims still walk these indexes).
    /// Rebuilt on the pending partition, where migration 12 put them.
    static let schemaV14 = [
        "DROP INDEX hub_delivery_due",
        """
        CREATE INDEX hub_delivery_due ON hub_delivery_pending (urgency DESC, due_at, id)
            WHERE state = 'pending' AND lease_owner IS NULL
        """,
        "DROP INDEX hub_delivery_lane",
        """
        CREATE INDEX hub_delivery_lane ON hub_delivery_pending (transport, urgency DESC, due_at, id)
            WHERE state = 'pending' AND suspended_at IS NULL AND lease_owner IS NULL
        """,
    ]

    /// Finishing a row whose endpoint a claim found removed or inactive
    /// (``HubCore/OutboxMachine/RowWrite/closed``, ``HubCore/OutboxMachine/supersededAtClaim``) at `$1`.
    fileprivate static let supersededAtClaim = DeliveryColumns.writeSQL(.closed) { given in
        switch given {
        case .result: "'\(OutboxMachine.supersededAtClaim.result)'"
        case .detail: "'\(OutboxMachine.supersededAtClaim.detail)'"
        case .at: "$1"
        case .dueAt, .error, .messageId: "NULL"
        }
    }

    /// A column of `hub_delivery` qualified by the alias `table`.
    fileprivate static func column(_ table: String) -> (OutboxMachine.Column) -> String {
        { "\(table).\(DeliveryColumns.name($0))" }
    }

    enum ClaimAll: NamedStatement {
        static let name = "hub_claim_all"
        static let sql = claimSQL(laneFilter: "")
    }

    enum ClaimTransport: NamedStatement {
        static let name = "hub_claim_transport"
        static let sql = claimSQL(laneFilter: "\n        AND d.transport = $5")
    }

    enum ClaimOthers: NamedStatement {
        static let name = "hub_claim_others"
        static let sql = claimSQL(laneFilter: "\n        AND d.transport <> ALL($5::text[])")
    }
}
