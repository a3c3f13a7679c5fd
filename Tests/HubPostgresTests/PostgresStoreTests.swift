import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Synchronization
import Testing

@testable import HubPostgres

// Skipped with a message when no server is configured, except in CI (CI=true), where they run
// and fail: `.ci/run` always provides the server through scripts/with-postgres.
@Suite("PostgresStore", .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresStoreTests {
    @Test("Store conformance", arguments: StoreConformance.all)
    func conformance(check: StoreConformance.Check) async throws {
        try await PostgresTestDatabase.withStore(configure: PostgresTestDatabase.secondPartitions) { store in
            try await check.run(store)
        }
    }

    @Test("A lane's claim walks hub_delivery_lane (custom and generic plans), which leaves suspended deliveries out")
    func laneClaimUsesItsIndex() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            let plan = try await store.transaction { db in
                // Without rows the planner would scan; forbid that to see which index it can use.
                try await db.rows("SET LOCAL enable_seqscan = off")
                var binds = PostgresBindings(capacity: 5)
                binds.append(Date())
                binds.append(10)
                binds.append("owner")
                binds.append(Date())
                binds.append("apns")
                let custom = try await db.rows(
                    PostgresQuery(unsafeSQL: "EXPLAIN " + PostgresStore.ClaimTransport.sql, binds: binds)
                ).map { try $0.decode(String.self) }.joined(separator: "\n")
                // The claim is a named statement: after a few runs PostgreSQL may plan it once for
                // any values (a generic plan). That plan must walk the index too.
                try await db.rows("SET LOCAL plan_cache_mode = force_generic_plan")
                try await db.rows(PostgresQuery(unsafeSQL: "PREPARE lane_claim AS " + PostgresStore.ClaimTransport.sql))
                let generic = try await db.rows("EXPLAIN EXECUTE lane_claim(now(), 10, 'owner', now(), 'apns')")
                    .map { try $0.decode(String.self) }.joined(separator: "\n")
                try await db.rows("DEALLOCATE lane_claim")
                return (custom, generic)
            }
            #expect(plan.0.contains("hub_delivery_lane"), "\(plan.0)")
            #expect(plan.1.contains("hub_delivery_lane"), "\(plan.1)")
        }
    }

    @Test("Leased rows are in neither claim index (migration 14), and the claims of every lane still walk them")
    func claimIndexesLeaveLeasedRowsOut() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            let definitions = try await store.rows(
                """
                SELECT indexname, indexdef FROM pg_indexes
                WHERE schemaname = current_schema() AND indexname IN ('hub_delivery_due', 'hub_delivery_lane')
                ORDER BY indexname
                """
            ).map { try $0.decode((String, String).self) }
            #expect(definitions.map(\.0) == ["hub_delivery_due", "hub_delivery_lane"])
            for (name, definition) in definitions {
                #expect(definition.contains("lease_owner IS NULL"), "\(name): \(definition)")
            }
            let plans = try await store.transaction { db in
                try await db.rows("SET LOCAL enable_seqscan = off")
                try await db.rows("SET LOCAL plan_cache_mode = force_generic_plan")
                var plans: [String] = []
                for (name, sql, lane) in [
                    ("claim_all", PostgresStore.ClaimAll.sql, ""),
                    ("claim_lane", PostgresStore.ClaimTransport.sql, ", 'apns'"),
                ] {
                    try await db.rows(PostgresQuery(unsafeSQL: "PREPARE \(name) AS " + sql))
                    plans.append(
                        try await db.rows(
                            PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE \(name)(now(), 10, 'owner', now()\(lane))")
                        ).map { try $0.decode(String.self) }.joined(separator: "\n"))
                    try await db.rows(PostgresQuery(unsafeSQL: "DEALLOCATE \(name)"))
                }
                return plans
            }
            #expect(plans[0].contains("hub_delivery_due"), "\(plans[0])")
            #expect(plans[1].contains("hub_delivery_lane"), "\(plans[1])")
        }
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
                let store = try PostgresTestDatabase.makeStore(
                    schema: PostgresTestDatabase.freshSchema(), configure: PostgresTestDatabase.secondPartitions)
                stores.withLock { $0.append(store) }
                continuation.yield(store)
                return store
            }
        }
        for store in stores.withLock({ $0 }) { try? await store.dropSchema() }
    }

    @Test("Migrations run once, also when two instances start at the same moment")
    func concurrentMigrations() async throws {
        let (first, second) = try PostgresTestDatabase.twoStores()
        try await PostgresTestDatabase.running([first, second]) {
            async let a: Void = first.migrate()
            async let b: Void = second.migrate()
            _ = try await (a, b)
            #expect(try await first.appliedMigrations() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
            try await first.migrate()
            #expect(try await second.appliedMigrations() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
        }
    }

    @Test("Migration 10 fills the badge counters from the notifications already stored")
    func badgeBackfill() async throws {
        let (first, second) = try PostgresTestDatabase.twoStores()
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        try await PostgresTestDatabase.running([first, second]) {
            try await first.migrate()
            _ = try await first.publish(request(key, "every"))
            var phones = request(key, "phones")
            phones.draft.targetPolicy = TargetPolicy(platformTypes: [.ios, .android])
            _ = try await first.publish(phones)
            _ = try await first.publish(request(key, "read"))
            _ = try await first.updateState(
                StateChange(
                    key: key, id: "read", readState: .read, userActionState: nil, exceptEndpoint: nil, now: Date()))
            // As a database written before version 10: no counters, version 10 not recorded.
            try await first.rows("DROP TABLE hub_badge_counter")
            try await first.rows("DELETE FROM hub_schema_migrations WHERE version = 10")
            try await second.migrate()
            #expect(try await second.appliedMigrations() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
            #expect(try await second.badgeCount(key, platform: .ios) == 2)
            #expect(try await second.badgeCount(key, platform: .web) == 1)
        }
    }

    @Test("Versions survive a new store on the same schema; the database URL never shows")
    func reopen() async throws {
        let (first, second) = try PostgresTestDatabase.twoStores()
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
        let (first, second) = try PostgresTestDatabase.twoStores()
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

    @Test("An instance restarted under its name takes back its leases at once; its taps merge into waiting ones")
    func releaseLeases() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
            let t0 = Date(timeIntervalSince1970: 1_750_000_000)
            for id in ["e1", "e2"] {
                _ = try await store.upsertEndpoint(
                    Endpoint(
                        id: id, appId: key.appId, userId: key.userId, platform: .ios,
                        platformAppId: "com.contoso.notes", transport: .apns, token: "token-\(id)",
                        attributes: ["environment": "production"], registeredAt: t0))
            }
            _ = try await store.publish(request(key, "r-1", at: t0, visible: true))
            _ = try await store.publish(request(key, "r-2", at: t0))
            let old = try await store.claimDeliveries(
                limit: 10, now: t0, owner: "hub-1", leaseUntil: t0.addingTimeInterval(300))
            #expect(old.map(\.delivery.kind.rawValue).sorted() == ["shoulderTap", "shoulderTap", "visible", "visible"])
            // A newer tap waits for each endpoint while the old ones are leased.
            let newer = try await store.publish(request(key, "r-3", at: t0.addingTimeInterval(1))).notification

            try await store.releaseLeases(owner: "other")
            let later = t0.addingTimeInterval(2)
            #expect(
                try await store.claimDeliveries(limit: 10, now: later, owner: "hub-2", leaseUntil: later).count == 2)
            try await store.releaseLeases(owner: "hub-2")
            try await store.releaseLeases(owner: "hub-1")
            let again = try await store.claimDeliveries(
                limit: 10, now: later, owner: "hub-1", leaseUntil: later.addingTimeInterval(300))
            #expect(again.count == 4, "the visible deliveries are back; the old taps merged into the waiting ones")
            #expect(again.filter { $0.delivery.kind == .visible }.count == 2)
            let taps = again.filter { $0.delivery.kind == .shoulderTap }
            #expect(taps.count == 2 && taps.allSatisfy { $0.delivery.changeVersion == newer.changeVersion })
            #expect(try await store.deliveryStatistics().finished["apns"] == ["superseded": 2])
            #expect(try await store.deliveryStatistics().pending == 4)
        }
    }

    @Test("releaseLeases finishes a superseded tap at the time of the store's clock (the hub's), not the system's")
    func releaseLeasesOnTheClock() async throws {
        let t0 = Date(timeIntervalSince1970: 1_750_000_000)
        let clock = ManualClock(date: t0.addingTimeInterval(90))
        try await PostgresTestDatabase.withStore(clock: clock) { store in
            try await store.migrate()
            let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
            _ = try await store.upsertEndpoint(
                Endpoint(
                    id: "e1", appId: key.appId, userId: key.userId, platform: .ios,
                    platformAppId: "com.contoso.notes", transport: .apns, token: "token-e1",
                    attributes: ["environment": "production"], registeredAt: t0))
            _ = try await store.publish(request(key, "r-1", at: t0))
            let leased = try await store.claimDeliveries(
                limit: 10, now: t0, owner: "hub-1", leaseUntil: t0.addingTimeInterval(300))
            #expect(leased.count == 1)
            // A newer tap waits for the endpoint: the leased one, put back, is superseded by it.
            _ = try await store.publish(request(key, "r-2", at: t0.addingTimeInterval(1)))
            clock.advance(by: .seconds(30))
            try await store.releaseLeases(owner: "hub-1")
            let finished = try await store.rows(
                "SELECT finished_at FROM hub_delivery WHERE state = 'finished' AND result = 'superseded'"
            ).map { try $0.decode(Date.self) }
            #expect(finished == [t0.addingTimeInterval(120)])
        }
    }

    @Test("A tap handed off at a time that reads back from the database a hair later is still handed off")
    func handOffAtAnUnevenTime() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
            // Stored in microseconds, this time reads back a little later than it is (binary
            // floating point): the tap is due at once all the same, leased, and must come back.
            let now = Date(timeIntervalSinceReferenceDate: 785_000_000.000_165_9)
            _ = try await store.upsertEndpoint(
                Endpoint(
                    id: "e1", appId: key.appId, userId: key.userId, platform: .ios, platformAppId: "com.contoso.notes",
                    transport: .apns, token: "token-e1", attributes: ["environment": "production"], registeredAt: now))
            var publish = request(key, "r-1", at: now)
            publish.handOff = HandOff(owner: "hub-1", leaseUntil: now.addingTimeInterval(10), transports: [.apns])
            let result = try await store.publish(publish)
            #expect(result.handedOff.map(\.endpoint.id) == ["e1"])
            #expect(result.leftForClaim == 0)
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

    @Test("A named statement whose preparation failed works once the cause is gone (its connection is replaced)")
    func failedPreparationIsNotRemembered() async throws {
        // One connection, so that the second read is on the connection of the first unless the
        // store closed it: postgres-nio remembers a failed preparation for a connection's life.
        let store = try PostgresTestDatabase.makeStore(schema: PostgresTestDatabase.freshSchema(), poolSize: 1)
        try await PostgresTestDatabase.running([store]) {
            try await store.migrate()
            let key = FeedKey(appId: "a", userId: "b")
            _ = try await Self.retryingUnavailable {
                try await store.rows("ALTER TABLE hub_notification RENAME TO away")
            }
            let error = await #expect(throws: PostgresStoreError.self) {
                try await store.feed(key, after: 0, limit: 1)
            }
            #expect(error?.sqlState == "42P01")
            _ = try await Self.retryingUnavailable {
                try await store.rows("ALTER TABLE away RENAME TO hub_notification")
            }
            let page = try await Self.retryingUnavailable { try await store.feed(key, after: 0, limit: 1) }
            #expect(page.changes.isEmpty)
        }
    }

    /// Runs `body`, again while it fails as unavailable, for at most 2 s: the pool may hand out a
    /// connection the store has just closed before it has seen the close.
    static func retryingUnavailable<T>(_ body: () async throws -> T) async throws -> T {
        let until = ContinuousClock.now + .seconds(2)
        while true {
            do {
                return try await body()
            } catch let error as HubError where error.code == .unavailable && ContinuousClock.now < until {
                try await Task.sleep(for: .milliseconds(50))  // a retry's pause, not a wait for a condition
            }
        }
    }

    func request(
        _ key: FeedKey, _ id: String, at now: Date = Date(timeIntervalSince1970: 1_750_000_000), visible: Bool = false
    ) -> PublishRequest {
        let payload = NotificationPayload(rawContent: id, visualContent: visible ? VisualContent(title: id) : nil)
        return PublishRequest(
            key: key, draft: NotificationDraft(appNotificationId: id, payload: payload),
            newId: UUID().uuidString.lowercased(), expirationDateTime: now.addingTimeInterval(3600),
            deliveryMode: visible ? .visible : .shoulderTap, now: now)
    }
}
