import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres

// The pending partition is a queue: analyzed (by the store or by autovacuum) at a moment it held
// few live rows among many dead ones, its statistics say "empty" whatever it holds next. The hot
// statements must look rows up by primary key anyway. And a row a statement waits for may be
// moved to the finished partition meanwhile (SQLSTATE 40001 on a partitioned table): the
// statements must still do their work.
@Suite(
    "PostgreSQL queue plans and moved rows",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct QueuePlanTests {
    @Test("Finishes, lease renewals and claims find pending rows by primary key when the partition was analyzed empty")
    func hotStatementsLookUpByKeyAfterEmptyStatistics() async throws {
        // Statistics as the test makes them: neither the store nor autovacuum analyzes meanwhile.
        try await PostgresTestDatabase.withStore(configure: { $0.statisticsInterval = nil }) { store in
            try await store.migrate()
            for table in ["hub_delivery_pending", "hub_notification", "hub_endpoint"] {
                try await store.rows(PostgresQuery(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = false)"))
            }
            // Statistics taken while the partition held 20,000 dead rows and no live one, then
            // 5,000 pending rows: the planner believes there is at most one.
            try await Self.insertPending(store, ids: 1...20_000)
            try await store.rows("DELETE FROM hub_delivery_pending")
            try await store.rows("ANALYZE hub_delivery_pending")
            try await store.rows("ANALYZE hub_notification")
            try await Self.insertPending(store, ids: 100_001...105_000)
            try await Self.insertNotifications(store, ids: 100_001...105_000)
            let ids = (100_001...101_000).map(String.init).joined(separator: ",")
            let arguments = """
                '{\(ids)}', array_fill('delivered'::text, ARRAY[1000]), array_fill(''::text, ARRAY[1000]),
                array_fill(false, ARRAY[1000]), array_fill(now(), ARRAY[1000]), array_fill(''::text, ARRAY[1000])
                """
            let claimArguments = "now(), 500, 'a', now() + interval '1 minute'"
            for mode in ["force_generic_plan", "force_custom_plan"] {
                let finish = try await Self.plan(
                    store, PostgresStore.FinishDeliveries.sql, arguments: arguments, mode: mode)
                let renewal = try await Self.plan(
                    store, PostgresStore.RenewLeases.sql, arguments: "now(), '{\(ids)}', 'a'", mode: mode)
                for plan in [finish, renewal] {
                    #expect(plan.contains("Index Scan using hub_delivery_pending_pkey"), "\(mode): \(plan)")
                    #expect(plan.contains("Index Cond: (id = o.id)"), "\(mode): \(plan)")
                    #expect(plan.contains("Tid Scan on hub_delivery_pending"), "\(mode): \(plan)")
                    #expect(!plan.contains("Join Filter") && !plan.contains("Seq Scan"), "\(mode): \(plan)")
                }
                // The claim: `due` by primary key, `superseded` and `claimed` by place.
                let claim = try await Self.plan(
                    store, PostgresStore.ClaimAll.sql, arguments: claimArguments, mode: mode)
                #expect(claim.contains("Index Scan using hub_delivery_pending_pkey"), "\(mode): \(claim)")
                #expect(
                    claim.components(separatedBy: "Tid Scan on hub_delivery_pending").count == 3, "\(mode): \(claim)")
                #expect(!claim.contains("Join Filter") && !claim.contains("Seq Scan"), "\(mode): \(claim)")
            }
            // The same statistics make a join by ID scan the partition for every outcome: what
            // the statements above avoid.
            let byID = try await Self.plan(
                store, PostgresStore.FinishDeliveriesRechecked.sql, arguments: arguments, mode: "force_generic_plan")
            #expect(byID.contains("Join Filter: (d_1.id = o.id)"), "\(byID)")
        }
    }

    @Test("A finish that meets a row renewed meanwhile still finishes it")
    func finishOfConcurrentlyRenewedRow() async throws {
        let (first, second) = try PostgresTestDatabase.twoStores()
        try await PostgresTestDatabase.running([first, second]) {
            try await first.migrate()
            try await Self.insertPending(first, ids: 1...3, owner: "a")
            let finishing = try await Self.whileRowLocked(
                second, id: 2,
                by:
                    "UPDATE hub_delivery SET lease_until = lease_until + interval '1 minute' WHERE id = 2 AND state = 'pending'"
            ) {
                Task {
                    try await first.recordOutcomes(
                        (1...3).map {
                            OutboxOutcome(id: Int64($0), .finish(.delivered, detail: nil, goneSince: nil), at: Date())
                        })
                }
            }
            try await finishing.value
            let states = try await first.rows("SELECT state FROM hub_delivery ORDER BY id").map {
                try $0.decode(String.self)
            }
            #expect(states == ["finished", "finished", "finished"])
        }
    }

    @Test("A lease renewal that meets a row moved to the finished partition renews the others")
    func renewalOfMovedRow() async throws {
        let (first, second) = try PostgresTestDatabase.twoStores()
        try await PostgresTestDatabase.running([first, second]) {
            try await first.migrate()
            try await Self.insertPending(first, ids: 1...3, owner: "a")
            let until = Date(timeIntervalSince1970: 2_000_000_000)
            let moving = """
                UPDATE hub_delivery SET state = 'finished', result = 'delivered', finished_at = now(),
                    purge_after = now(), lease_owner = NULL, lease_until = NULL
                WHERE id = 2 AND state = 'pending'
                """
            let renewing = try await Self.whileRowLocked(second, id: 2, by: moving) {
                Task { try await first.renewLeases([1, 2, 3], owner: "a", until: until) }
            }
            try await renewing.value
            let leases = try await first.rows(
                "SELECT id, lease_until FROM hub_delivery WHERE state = 'pending' ORDER BY id"
            )
            .map { try $0.decode((Int64, Date).self) }
            #expect(leases.map(\.0) == [1, 3])
            #expect(leases.allSatisfy { $0.1 == until })
        }
    }

    /// Runs `statement` on row `id` in a transaction of `store`, starts `other` while it holds
    /// the row, waits until another session waits for a lock, then commits; returns `other`.
    static func whileRowLocked(
        _ store: PostgresStore, id: Int64, by statement: String,
        _ other: @escaping @Sendable () -> Task<Void, any Error>
    ) async throws -> Task<Void, any Error> {
        try await store.transaction { db in
            try await db.rows(PostgresQuery(unsafeSQL: statement))
            let task = other()
            let waited = try await eventually {
                try await db.rows(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%hub_delivery%'
                    """
                ).first?.decode(Int.self) ?? 0 > 0
            }
            #expect(waited, "the other statement never waited for the row")
            return task
        }
    }

    /// Inserts pending APNs deliveries `ids`, leased to `owner` if given.
    static func insertPending(_ store: PostgresStore, ids: ClosedRange<Int>, owner: String? = nil) async throws {
        let lease = owner.map { "'\($0)', now() + interval '1 minute'" } ?? "NULL, NULL"
        try await store.rows(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO hub_delivery (id, app_id, user_id, endpoint_id, transport, kind, notification_id,
                        change_version, priority, urgency, state, lease_owner, lease_until, created_at, due_at)
                    SELECT g, 'notes', 'user' || (g % 3000), 'ios', 'apns', 'alert', 'n' || g, g, 'normal', 0,
                        'pending', \(lease), now(), now()
                    FROM generate_series(\(ids.lowerBound), \(ids.upperBound)) g
                    """))
    }

    /// Inserts the notifications the deliveries `ids` name (``insertPending(_:ids:owner:)``).
    static func insertNotifications(_ store: PostgresStore, ids: ClosedRange<Int>) async throws {
        try await store.rows(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO hub_notification (app_id, user_id, id, app_notification_id, priority, payload,
                        target_policy, expiration_date_time, created_date_time, last_modified_date_time, read_state,
                        user_action_state, status, change_version)
                    SELECT 'notes', 'user' || (g % 3000), 'n' || g, 'a' || g, 'normal', '{}', '{}',
                        now() + interval '1 day', now(), now(), 'unread', 'none', 'active', g
                    FROM generate_series(\(ids.lowerBound), \(ids.upperBound)) g
                    """))
    }

    /// The plan of `sql` with `arguments`, prepared under `plan_cache_mode` `mode`.
    static func plan(_ store: PostgresStore, _ sql: String, arguments: String, mode: String) async throws -> String {
        try await store.transaction { db in
            try await db.rows(PostgresQuery(unsafeSQL: "SET LOCAL plan_cache_mode = \(mode)"))
            try await db.rows(PostgresQuery(unsafeSQL: "PREPARE checked AS " + sql))
            let plan = try await db.rows(PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE checked(\(arguments))"))
                .map { try $0.decode(String.self) }.joined(separator: "\n")
            try await db.rows("DEALLOCATE checked")
            return plan
        }
    }
}
