import Foundation
import GRDB
import HubCore
import HubTesting
import Testing

@testable import HubSQLite

/// The console's reads on SQLite: the conformance checks of ``ConsoleQueries``, and their plans:
/// each page is a range of an index, never a scan of the table nor a sort of all its rows, so a
/// page costs the same with a million rows as with ten.
@Suite("SQLiteStore: console queries")
struct ConsoleQueriesTests {
    @Test("ConsoleQueries conformance", arguments: StoreConformance.console)
    func conformance(check: StoreConformance.Check) async throws {
        try await check.run(try SQLiteStore.inMemory())
    }

    /// The plan of `sql` as SQLite's `EXPLAIN QUERY PLAN` details, one string per step.
    private func plan(_ store: SQLiteStore, _ sql: String, _ arguments: StatementArguments) throws -> [String] {
        try store.writer.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
        }
    }

    /// A store with `count` notifications of one app over 10 users, and analyzed (as a long-lived
    /// store is), so the planner sees a big table.
    private func store(notifications count: Int) async throws -> SQLiteStore {
        let store = try SQLiteStore.inMemory()
        try await store.migrate()
        let start = Date(timeIntervalSince1970: 1_750_000_000)
        let requests = (0..<count).map { index in
            PublishRequest(
                key: FeedKey(appId: "notes.contoso.com", userId: "user\(index % 10)"),
                draft: NotificationDraft(appNotificationId: "n\(index)", payload: .init(rawContent: "{}")),
                newId: "id-\(index)", expirationDateTime: start.addingTimeInterval(86_400), deliveryMode: .shoulderTap,
                now: start.addingTimeInterval(TimeInterval(index)))
        }
        _ = try await store.publish(batch: requests)
        try await store.writer.write { db in try db.execute(sql: "ANALYZE") }
        return store
    }

    @Test("a page of notifications, filtered or not, after a position or not, walks notification_console in order")
    func notificationPlans() async throws {
        let store = try await store(notifications: 2000)
        let position = ConsoleNotificationPosition(
            createdDateTime: Date(timeIntervalSince1970: 1_750_001_000), id: "id-1000")
        let filters: [(String, ConsoleNotificationFilter)] = [
            ("no filter", ConsoleNotificationFilter()),
            (
                "a time range",
                ConsoleNotificationFilter(
                    from: Date(timeIntervalSince1970: 1_750_000_100),
                    to: Date(timeIntervalSince1970: 1_750_001_500))
            ),
            ("a state", ConsoleNotificationFilter(status: .expired)),
        ]
        for (name, filter) in filters {
            for after in [nil, position] {
                let query = SQLiteStore.consoleNotificationsQuery(
                    appId: "notes.contoso.com", filter: filter, after: after, limit: 51)
                let steps = try plan(store, query.sql, query.arguments)
                #expect(steps.contains { $0.contains("USING INDEX notification_console") }, "\(name): \(steps)")
                #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(name), no sort of every row: \(steps)")
                #expect(
                    !steps.contains { $0.hasPrefix("SCAN notification") && !$0.contains("INDEX") }, "\(name): \(steps)")
            }
        }
        let page = try await store.consoleNotifications(
            appId: "notes.contoso.com", filter: ConsoleNotificationFilter(), after: position, limit: 2)
        #expect(page.map(\.id) == ["id-999", "id-998"])
    }

    @Test("failures read delivery_failed and delivery_suspended, endpoints an index in order: ranges, no scan")
    func failureAndEndpointPlans() async throws {
        let store = try await store(notifications: 10)
        let range: StatementArguments = ["notes.contoso.com", 1_750_000_000.0, 1_750_086_400.0]
        for sql in [SQLiteStore.consoleFailuresSQL, SQLiteStore.consoleFailureGroupsSQL] {
            let arguments = sql == SQLiteStore.consoleFailuresSQL ? range + range + [200] : range + range
            let steps = try plan(store, sql, arguments)
            #expect(steps.contains { $0.contains("delivery_failed") }, "\(steps)")
            #expect(steps.contains { $0.contains("delivery_suspended") }, "\(steps)")
            #expect(!steps.contains { $0.hasPrefix("SCAN delivery") && !$0.contains("INDEX") }, "\(steps)")
        }
        for (user, endpoint) in [("", ""), ("ali", ""), ("ali", "ph"), ("", "ph")] {
            let query = SQLiteStore.consoleEndpointsQuery(
                appId: "notes.contoso.com", state: .active, userPrefix: user, endpointPrefix: endpoint,
                after: EndpointPosition(userId: "alice", endpointId: "phone"), limit: 51)
            let steps = try plan(store, query.sql, query.arguments)
            // endpoint_state (app, state, user, ID) or the key (app, user, ID): a range, in order, either way.
            #expect(
                steps.contains {
                    $0.contains("USING INDEX endpoint_state") || $0.contains("sqlite_autoindex_endpoint_1")
                },
                "'\(user)' '\(endpoint)': \(steps)")
            #expect(!steps.contains { $0.hasPrefix("SCAN endpoint") }, "'\(user)' '\(endpoint)': \(steps)")
            #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "'\(user)' '\(endpoint)': \(steps)")
        }
    }
}
