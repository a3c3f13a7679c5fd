import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres

// While a hub table grows faster than autovacuum analyzes it, the store analyzes it itself, so
// that its prepared statements are planned again for the rows that are there (see
// `PostgresStore+Statistics.swift`). Autovacuum is off for the tables here, so every analysis
// seen is the store's.
@Suite(
    "PostgreSQL statistics of growing tables",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct StatisticsTests {
    @Test("A running store analyzes the table that grew past its statistics, and only that one")
    func runningStoreAnalyzesGrownTable() async throws {
        try await PostgresTestDatabase.withStore { store in
            #expect(store.configuration.statisticsInterval == .seconds(2))
            try await Self.migrateWithoutAutovacuum(store)
            try await Self.insertPendingDeliveries(1_500, store)
            let analyzed = try await eventually {
                try await Self.lastAnalyzed("hub_delivery_pending", store) != nil
            }
            #expect(analyzed, "hub_delivery_pending grew by 1,500 rows and was not analyzed")
            #expect(try await Self.lastAnalyzed("hub_notification", store) == nil)
            #expect(try await Self.lastAnalyzed("hub_endpoint", store) == nil)
        }
    }

    @Test("A table is analyzed once 1,000 rows changed, then again once the changes reach its row count")
    func analyzesOnDoubling() async throws {
        var configuration = try PostgresTestDatabase.makeStore(schema: PostgresTestDatabase.freshSchema())
            .configuration
        configuration.statisticsInterval = nil
        let store = PostgresStore(configuration: configuration)
        try await PostgresTestDatabase.running([store]) {
            try await Self.migrateWithoutAutovacuum(store)
            try await Self.insertPendingDeliveries(999, store)
            #expect(try await store.analyzeGrownTables() == [])
            try await Self.insertPendingDeliveries(1, store)
            #expect(try await store.analyzeGrownTables() == ["hub_delivery_pending"])
            #expect(try await Self.lastAnalyzed("hub_delivery_pending", store) != nil)
            // 1,000 rows known: 1,500 more changed rows are past both thresholds, 900 are not.
            try await Self.insertPendingDeliveries(900, store)
            #expect(try await store.analyzeGrownTables() == [])
            try await store.withSession { session in
                try await session.rows(
                    "UPDATE hub_delivery SET detail = 'changed' WHERE id IN (SELECT id FROM hub_delivery LIMIT 600)")
                try await session.rows("SELECT pg_stat_force_next_flush()")
            }
            #expect(try await store.analyzeGrownTables() == ["hub_delivery_pending"])
            #expect(try await store.analyzeGrownTables() == [])
        }
    }

    /// Migrates `store`'s schema and turns autovacuum off for its tables.
    static func migrateWithoutAutovacuum(_ store: PostgresStore) async throws {
        try await store.migrate()
        for table in PostgresStore.analyzedTables {
            try await store.rows(PostgresQuery(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = false)"))
        }
    }

    /// Inserts `count` pending deliveries (visible ones: no tap coalesces them) in one statement
    /// and has the session report its statistics at once (a backend otherwise reports them at
    /// most once a second).
    static func insertPendingDeliveries(_ count: Int, _ store: PostgresStore) async throws {
        try await store.withSession { session in
            try await session.rows(
                """
                INSERT INTO hub_delivery (app_id, user_id, endpoint_id, transport, kind, change_version, priority,
                    urgency, state, created_at, due_at)
                SELECT 'notes', 'user-' || n, 'e1', 'apns', 'visible', n, 'normal', 0, 'pending', now(), now()
                FROM generate_series(1, \(count)) AS n
                """)
            try await session.rows("SELECT pg_stat_force_next_flush()")
        }
    }

    /// When `table` of the store's schema was last analyzed by a statement (not autovacuum).
    static func lastAnalyzed(_ table: String, _ store: PostgresStore) async throws -> Date? {
        try await store.rows(
            "SELECT last_analyze FROM pg_stat_user_tables WHERE relid = to_regclass(\(table))"
        ).first?.decode(Date?.self)
    }
}
