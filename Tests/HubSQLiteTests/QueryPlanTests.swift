import Foundation
import GRDB
import HubCore
import Testing

@testable import HubSQLite

/// The outbox's reads of pending rows go through an index of pending rows, never a scan of the
/// whole `delivery` table (whose finished rows stay until the sweep), now that `delivery_due` is
/// gone (migration `v4`).
@Suite("SQLite query plans of the outbox")
struct QueryPlanTests {
    /// The plan of `sql` as SQLite's `EXPLAIN QUERY PLAN` details, one string per step.
    private func plan(_ store: SQLiteStore, _ sql: String, _ arguments: StatementArguments = []) throws -> [String] {
        try store.writer.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
        }
    }

    private func indexNames(_ store: SQLiteStore) throws -> [String] {
        try store.writer.read { db in
            try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'delivery'")
        }
    }

    private func store() async throws -> SQLiteStore {
        let store = try SQLiteStore.inMemory()
        try await store.migrate()
        return store
    }

    @Test("v4 dropped delivery_due; the lanes' and the suspended rows' indexes remain")
    func indexes() async throws {
        let store = try await store()
        let names = try indexNames(store)
        #expect(!names.contains("delivery_due"))
        #expect(names.contains("delivery_lane") && names.contains("delivery_suspended"))
    }

    @Test("claims, the next due time, the outbox depth and released leases read pending rows by index")
    func pendingReadsUseIndexes() async throws {
        let store = try await store()
        var statements: [(String, [String])] = []
        for lane in [OutboxLane.all, .transport(.apns), .otherThan([.apns, TransportID(rawValue: "fcm")])] {
            let claimable = SQLiteStore.claimable(lane, at: Date(timeIntervalSince1970: 1))
            let sql = "SELECT id \(claimable.rows) ORDER BY urgency DESC, dueAt, id LIMIT 10"
            statements.append(("claim \(lane)", try plan(store, sql, claimable.arguments)))
        }
        statements.append(("next due", try plan(store, SQLiteStore.nextDueSQL)))
        statements.append(("depth", try plan(store, SQLiteStore.pendingCountSQL)))
        statements.append(("released leases", try plan(store, SQLiteStore.leasedByOwnerSQL, ["a"])))
        for (name, steps) in statements {
            #expect(!steps.contains { $0.hasPrefix("SCAN delivery") && !$0.contains("INDEX") }, "\(name): \(steps)")
            #expect(
                steps.contains { $0.contains("delivery_lane") || $0.contains("delivery_suspended") },
                "\(name): \(steps)")
        }
    }

    @Test("the store's own statements run on a v4 database: depth, next due time, released leases")
    func statementsRun() async throws {
        let store = try await store()
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        let now = Date()
        _ = try await store.upsertEndpoint(
            Endpoint(
                id: "phone", appId: key.appId, userId: key.userId, platform: .ios, platformAppId: "com.contoso.notes",
                transport: .apns, token: "t", registeredAt: now))
        _ = try await store.publish(
            PublishRequest(
                key: key, draft: NotificationDraft(appNotificationId: "n", payload: .init(rawContent: "{}")),
                newId: UUID().uuidString, expirationDateTime: now.addingTimeInterval(3600), deliveryMode: .shoulderTap,
                now: now,
                handOff: HandOff(owner: "a", leaseUntil: now.addingTimeInterval(60), transports: [.apns])))
        #expect(try await store.outboxDepth().pending == 1)
        #expect(try await store.nextDueDate() != nil)
        try await store.releaseLeases(owner: "a")
        let claimed = try await store.claimDeliveries(
            .transport(.apns), limit: 10, now: now.addingTimeInterval(1), owner: "b",
            leaseUntil: now.addingTimeInterval(61))
        #expect(claimed.count == 1, "the released lease is claimable at once")
    }
}
