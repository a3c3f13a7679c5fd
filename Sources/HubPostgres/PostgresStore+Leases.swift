public import Foundation
import HubCore
import PostgresNIO

// Renewing leases, and finding pending rows by primary key whatever the statistics say (the
// finish and the claim use it too). The rules are OutboxMachine's; this file renders them.
extension PostgresStore {
    /// Extends `owner`'s leases of the deliveries `ids` to `until`, those
    /// ``HubCore/OutboxMachine/renewableSQL(_:owner:)`` names; others are left alone.
    public func renewLeases(_ ids: [Int64], owner: String, until: Date) async throws {
        guard !ids.isEmpty else { return }
        var binds = PostgresBindings(capacity: 3)
        binds.append(until)
        binds.append(ids)
        binds.append(owner)
        _ = try await retrying {
            try await withSession { [binds] session in try await session.run(RenewLeases.self, binds) }
        }
    }

    /// Renews leases row by row, whatever the statistics say (see ``FinishDeliveries``): each ID
    /// finds its row by the pending partition's primary key, the update takes the row there. A
    /// row updated meanwhile is left alone (newer PostgreSQL), or raises SQLSTATE 40001 if it
    /// was moved to the finished partition, and the store runs the statement again (see
    /// `retrying`): it is finished or someone else's then, or its lease is renewed at the next
    /// round.
    enum RenewLeases: NamedStatement {
        static let name = "hub_renew_leases_v2"
        static let sql = """
            UPDATE hub_delivery d SET lease_until = $1
            FROM (\(pendingPlacesSQL("SELECT o.id FROM unnest($2::bigint[]) AS o(id)"))) o
            WHERE d.ctid = o.place AND \(OutboxMachine.renewableSQL({ "d.\(DeliveryColumns.name($0))" }, owner: "$3"))
            """
    }

    /// The rows of the query `rows` (its column `id` an outbox ID) with the place (`place`, a
    /// `ctid`) of that ID's pending row, looked up by the pending partition's primary key one ID
    /// at a time: the `OFFSET 0` keeps the lookup from being flattened into a join the planner
    /// could turn around (a scan of the whole partition, whose statistics may say "empty",
    /// matching each row against every ID). IDs not pending are left out. An update that joins
    /// the outbox by `ctid = place` then takes each row where it is (a TID scan).
    /// - Parameters:
    ///   - rows: the query whose rows are looked up.
    ///   - columns: columns of the pending row to add (named as they are).
    static func pendingPlacesSQL(_ rows: String, columns: [String] = []) -> String {
        let more = columns.map { ", p.\($0)" }.joined()
        return """
            SELECT r.*, p.ctid AS place\(more)
            FROM (\(rows)) r
            CROSS JOIN LATERAL (SELECT p.ctid\(more) FROM hub_delivery_pending p WHERE p.id = r.id OFFSET 0) p
            """
    }
}
