import Foundation
import HubCore
import HubTesting
import Synchronization
import Testing

@testable import HubPostgres

// Skipped with a message when no server is configured, except in CI (CI=true), where they run
// and fail: `.ci/run` always provides the server through scripts/with-postgres.
@Suite("PostgresStore", .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresStoreTests {
    @Test("Store conformance", arguments: StoreConformance.all)
    func conformance(check: StoreConformance.Check) async throws {
        try await PostgresTestDatabase.withStore { store in try await check.run(store) }
    }

    @Test("The whole conformance suite runs through its runner")
    func conformanceRunner() async throws {
        // Every check needs an empty store: each gets a fresh schema, started by a runner task
        // as it is made, and dropped at the end.
        let (made, continuation) = AsyncStream.makeStream(of: PostgresStore.self)
        let stores = Mutex<[PostgresStore]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await withDiscardingTaskGroup { runners in
                    for await store in made { runners.addTask { await store.run() } }
                }
            }
            defer { group.cancelAll() }
            try await StoreConformance.run {
                let store = try PostgresTestDatabase.makeStore(schema: PostgresTestDatabase.freshSchema())
                stores.withLock { $0.append(store) }
                continuation.yield(store)
                return store
            }
        }
        for store in stores.withLock({ $0 }) { try? await store.dropSchema() }
    }

    @Test("Migrations run once, also when two instances start at the same moment")
    func concurrentMigrations() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let first = try PostgresTestDatabase.makeStore(schema: schema)
        let second = try PostgresTestDatabase.makeStore(schema: schema)
        try await PostgresTestDatabase.running([first, second]) {
            async let a: Void = first.migrate()
            async let b: Void = second.migrate()
            _ = try await (a, b)
            #expect(try await first.appliedMigrations() == [1])
            try await first.migrate()
            #expect(try await second.appliedMigrations() == [1])
        }
    }

    @Test("Versions survive a new store on the same schema; the database URL never shows")
    func reopen() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let first = try PostgresTestDatabase.makeStore(schema: schema)
        let second = try PostgresTestDatabase.makeStore(schema: schema)
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        try await PostgresTestDatabase.running([first, second]) {
            try await first.migrate()
            let published = try await first.publish(request(key, "r-1")).notification
            #expect(try await second.notification(key, id: "r-1") == published)
            let next = try await second.publish(request(key, "r-2")).notification
            #expect(next.changeVersion > published.changeVersion)
            let password = try #require(first.configuration.password).reveal()
            #expect(!"\(first.configuration)".contains(password))
            #expect(!String(reflecting: first.configuration).contains(password))
        }
    }

    @Test("Every instance gets the same shared key")
    func sharedKey() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let first = try PostgresTestDatabase.makeStore(schema: schema)
        let second = try PostgresTestDatabase.makeStore(schema: schema)
        try await PostgresTestDatabase.running([first, second]) {
            try await first.migrate()
            async let a = first.sharedKey(named: "cursor")
            async let b = second.sharedKey(named: "cursor")
            let (keyA, keyB) = try await (a, b)
            #expect(keyA.count == 32)
            #expect(keyA == keyB)
            #expect(try await first.sharedKey(named: "other") != keyA)
        }
    }

    @Test("A statement the server refuses is a PostgresStoreError with its SQLSTATE")
    func serverErrors() async throws {
        try await PostgresTestDatabase.withStore { store in
            // Before migrate() the tables do not exist: 42P01 undefined_table.
            let error = await #expect(throws: PostgresStoreError.self) {
                try await store.feed(FeedKey(appId: "a", userId: "b"), after: 0, limit: 1)
            }
            #expect(error?.code == .server)
            #expect(error?.sqlState == "42P01")
        }
    }

    func request(_ key: FeedKey, _ id: String) -> PublishRequest {
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        return PublishRequest(
            key: key, draft: NotificationDraft(appNotificationId: id, payload: NotificationPayload(rawContent: id)),
            newId: UUID().uuidString.lowercased(), expirationDateTime: now.addingTimeInterval(3600),
            deliveryMode: .shoulderTap, now: now)
    }
}
