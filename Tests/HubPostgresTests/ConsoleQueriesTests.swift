import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres

/// The console's reads on PostgreSQL: the conformance checks of ``ConsoleQueries``, and their
/// plans: each page can be read as a range of its index, in order (no sort of every row), so a
/// page costs the same with a million rows as with ten.
@Suite(
    "PostgresStore: console queries",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct ConsoleQueriesTests {
    @Test("ConsoleQueries conformance", arguments: StoreConformance.console)
    func conformance(check: StoreConformance.Check) async throws {
        try await PostgresTestDatabase.withStore { store in try await check.run(store) }
    }

    /// The plan of `sql` with `binds`, with sequential scans forbidden (on empty tables the planner
    /// would scan): which index it can use, and whether it must sort.
    static func plan(_ store: PostgresStore, _ sql: String, _ binds: PostgresBindings) async throws -> String {
        try await store.transaction { db in
            try await db.rows("SET LOCAL enable_seqscan = off")
            return try await db.rows(PostgresQuery(unsafeSQL: "EXPLAIN " + sql, binds: binds))
                .map { try $0.decode(String.self) }.joined(separator: "\n")
        }
    }

    @Test(
        "notification pages, filtered or not, walk hub_notification_console in order; failures and endpoints their indexes"
    )
    func plans() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            let position = ConsoleNotificationPosition(createdDateTime: Date(), id: "n1")
            for filter in [
                ConsoleNotificationFilter(),
                ConsoleNotificationFilter(from: Date(timeIntervalSince1970: 0), to: Date()),
                ConsoleNotificationFilter(status: .expired),
            ] {
                for after in [nil, position] {
                    let plan = try await Self.plan(
                        store, PostgresStore.consoleNotificationsSQL,
                        PostgresStore.consoleNotificationsBindings(
                            appId: "notes.contoso.com", filter: filter, after: after, limit: 51))
                    #expect(plan.contains("Index Scan using hub_notification_console"), "\(filter): \(plan)")
                    #expect(!plan.contains("Sort"), "\(filter), no sort of every row: \(plan)")
                }
            }
            var range = PostgresBindings(capacity: 4)
            range.append("notes.contoso.com")
            range.append(Date(timeIntervalSince1970: 0))
            range.append(Date())
            range.append(Int64(200))
            let failures = try await Self.plan(store, PostgresStore.consoleFailuresSQL, range)
            #expect(
                failures.contains("hub_delivery_failed") && failures.contains("hub_delivery_suspended"), "\(failures)")
            #expect(!failures.contains("Seq Scan"), "\(failures)")
            for (user, endpoint) in [("", ""), ("ali", ""), ("", "ph")] {
                let plan = try await Self.plan(
                    store, PostgresStore.consoleEndpointsSQL,
                    PostgresStore.consoleEndpointsBindings(
                        appId: "notes.contoso.com", state: .active, userPrefix: user, endpointPrefix: endpoint,
                        after: EndpointPosition(userId: "alice", endpointId: "phone"), limit: 51))
                #expect(plan.contains("Index Scan using hub_endpoint_console"), "'\(user)' '\(endpoint)': \(plan)")
                #expect(!plan.contains("Sort"), "'\(user)' '\(endpoint)': \(plan)")
            }
        }
    }
}
