import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres

// A named statement keeps the generic plan PostgreSQL made for it until one of its tables is
// analyzed again. On a new database (a new deployment, every benchmark run) that plan is made
// while the tables look empty, and it stays while they grow until autovacuum analyzes them (up
// to a minute): a statement that looks rows up by key must not be planned as a hash of a whole
// table then.
@Suite(
    "PostgreSQL generic plans on empty tables",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct GenericPlanTests {
    @Test("A batch of publishes looks up each notification and its user's endpoints by key, never hashing a table")
    func publishReadLooksUpByKey() async throws {
        let plan = try await Self.genericPlan(
            PostgresStore.ReadForPublish.sql, arguments: "'{notes}', '{alice}', '{n1}'")
        #expect(!plan.contains("Seq Scan") && !plan.contains("Hash"), "\(plan)")
        #expect(plan.contains("Index Scan using hub_endpoint_"), "\(plan)")
    }

    /// The generic plan of `sql` with `arguments` on a freshly migrated, empty schema.
    static func genericPlan(_ sql: String, arguments: String) async throws -> String {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            return try await store.transaction { db in
                try await db.rows("SET LOCAL plan_cache_mode = force_generic_plan")
                try await db.rows(PostgresQuery(unsafeSQL: "PREPARE checked AS " + sql))
                let plan = try await db.rows(PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE checked(\(arguments))"))
                    .map { try $0.decode(String.self) }.joined(separator: "\n")
                try await db.rows("DEALLOCATE checked")
                return plan
            }
        }
    }
}
