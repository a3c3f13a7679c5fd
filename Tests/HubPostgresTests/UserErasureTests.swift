import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres

/// After an erasure, no column of any table of the store's schema holds the user ID: the tables
/// and columns come from `information_schema`, so a table added later is searched too. Every
/// column is searched as text (`text[]` chunks, `jsonb` payloads, `text` keys alike).
@Suite("PostgreSQL user erasure", .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct UserErasureTests {
    @Test("no table holds the user ID after an erasure; the neighbour's rows stay")
    func noTableHoldsTheUser() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            try await StoreConformance.populateUserData(store)
            let subject = StoreConformance.erasureSubject.userId
            let neighbour = StoreConformance.erasureNeighbour.userId

            let before = try await Self.columnsHolding(subject, in: store)
            for table in [
                "hub_notification", "hub_endpoint", "hub_delivery", "hub_user_tag", "hub_broadcast_user",
                "hub_broadcast_chunk", "hub_broadcast",
            ] {
                #expect(
                    before.contains { $0.hasPrefix(table + ".") },
                    "before the erasure, \(table) names the user: \(before)")
            }
            let neighbourBefore = try await Self.columnsHolding(neighbour, in: store)

            let erased = try await store.eraseUser(StoreConformance.erasureSubject, at: Date())
            #expect(erased.notifications == 2 && erased.endpoints == 2 && erased.broadcasts == 1)
            let left = try await Self.columnsHolding(subject, in: store)
            #expect(left == [], "no column names the erased user: \(left)")
            let neighbourAfter = try await Self.columnsHolding(neighbour, in: store)
            #expect(
                neighbourAfter.isSuperset(of: neighbourBefore),
                "the neighbour's rows stay: \(neighbourBefore) → \(neighbourAfter)")
        }
    }

    /// `table.column` of every column of every base table in the store's schema whose value, as
    /// text, contains `text`.
    static func columnsHolding(_ text: String, in store: PostgresStore) async throws -> Set<String> {
        let columns = try await store.rows(
            """
            SELECT c.table_name::text, c.column_name::text FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
            ORDER BY c.table_name, c.ordinal_position
            """
        ).map { try $0.decode((String, String).self) }
        #expect(columns.count > 20, "the schema's columns were read: \(columns.count)")
        var found: Set<String> = []
        for (table, column) in columns {
            let count = try await store.rows(
                """
                SELECT count(*)::int8 FROM "\(unescaped: table)" WHERE strpos("\(unescaped: column)"::text, \(text)) > 0
                """
            ).first?.decode(Int.self)
            if (count ?? 0) > 0 { found.insert("\(table).\(column)") }
        }
        return found
    }
}
