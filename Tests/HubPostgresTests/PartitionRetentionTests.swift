import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres

// Finished deliveries leave by dropping partitions of `hub_delivery_finished`
// (`PostgresStore+Partitions.swift`), and migration 12 converts a database of version 11.
@Suite(
    "PostgreSQL retention by partitions",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PartitionRetentionTests {
    static let day: TimeInterval = 86_400

    @Test("The sweep retires finished deliveries by dropping their partition, never by DELETE")
    func sweepDropsPartitions() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let clock = ManualClock()
        let a = try HubInstance(
            "a", schema: schema, dispatcher: HubInstance.dispatcher(idle: .seconds(1)), clock: clock)
        try await a.store.migrate()
        try await PostgresTestDatabase.running([a.store]) {
            try await a.register("phone")
            let runner = HubRunner([a.hub])
            let start = clock.date
            // Expires in the default lifetime (7 days); its delivery may leave 7 days after that.
            let first = try await a.publish("first", visible: true)
            #expect(try await eventually { try await Self.finishedVisible(of: first.id, a.store) == 1 })
            await a.hub.sweepOnce()
            // The sweep made partitions for the next days and moved the row out of the default one.
            let firstPartition = try #require(try await Self.partition(of: first.id, a.store))
            let span = try #require(PostgresStore.FinishedPartition(name: firstPartition))
            #expect(span.to - span.from == 86_400)
            let expiry = Int64(first.expirationDateTime.timeIntervalSince1970)
            #expect(span.from <= expiry && expiry < span.to, "partitioned by its notification's expiry")
            #expect(try await Self.count("SELECT count(*) FROM hub_delivery_finished_default", a.store) == 0)
            try await Self.logDeletes(a.store)

            clock.advance(by: .seconds(3 * 86_400))
            await a.hub.sweepOnce()
            let second = try await a.publish("second", visible: true)
            #expect(try await eventually { try await Self.finishedVisible(of: second.id, a.store) == 1 })
            // 15 days after the first publish, the retention (7 days) starts 8 days after it: past
            // the whole day holding the first notification's expiry, not the second's (10 days).
            clock.advance(by: .seconds(12 * 86_400))
            await a.hub.sweepOnce()
            #expect(clock.date.timeIntervalSince(start) == 15 * Self.day)
            #expect(try await Self.exists(firstPartition, a.store) == false, "the first partition was dropped")
            #expect(try await Self.finishedVisible(of: first.id, a.store) == 0)
            #expect(try await Self.finishedVisible(of: second.id, a.store) == 1, "the second stays for its receipt")
            let trace = try #require(
                try await a.store.deliveryTrace(FeedKey(appId: HubInstance.app.id, userId: "alice"), id: second.id))
            #expect(trace.deliveries.filter { $0.delivery.kind == .visible }.map(\.result) == [.delivered])
            #expect(try await Self.count("SELECT count(*) FROM hub_delivery_deleted", a.store) == 0, "no DELETE")
            #expect(try await Self.count("SELECT count(*) FROM hub_delivery_finished_default", a.store) == 0)
            #expect(await runner.stop(), "the hub did not shut down")
        }
    }

    @Test("Migration 12 converts a database written at version 11; the hub works on it")
    func migratesVersion11Data() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let clock = ManualClock()
        let a = try HubInstance(
            "a", schema: schema, dispatcher: HubInstance.dispatcher(idle: .seconds(1)), clock: clock)
        let key = FeedKey(appId: HubInstance.app.id, userId: "alice")
        try await a.store.migrate(through: 11)
        try await PostgresTestDatabase.running([a.store]) {
            let now = clock.date
            let store = a.store
            // Endpoints and notifications through the store (their statements are version 11's);
            // outbox rows as version 11 wrote them (this build writes the partitioned table).
            _ = try await store.upsertEndpoint(
                Endpoint(
                    id: "phone", appId: key.appId, userId: key.userId, platform: .ios,
                    platformAppId: "com.contoso.notes", transport: .apns, token: "token-alice-phone",
                    attributes: ["environment": "production"], registeredAt: now))
            let kept = try await Self.saveNotification(store, key, "kept", now: now, expiresIn: Self.day)
            let old = try await Self.saveNotification(
                store, key, "old", now: now.addingTimeInterval(-40 * Self.day), expiresIn: Self.day)
            try await store.rows(
                "UPDATE hub_notification SET read_by = 'phone', read_at = \(now) WHERE id = \(kept.id)")
            let ids = try await store.rows(
                """
                INSERT INTO hub_delivery (app_id, user_id, endpoint_id, transport, kind, notification_id, change_version,
                    priority, urgency, state, attempts, created_at, due_at, result, finished_at, first_sent_at,
                    provider_message_id)
                VALUES
                    (\(key.appId), 'alice', 'phone', 'apns', 'visible', \(kept.id), \(kept.changeVersion),
                        'none', 0, 'finished', 1, \(now), \(now), 'delivered', \(now), \(now), 'apns-kept'),
                    (\(key.appId), 'alice', 'phone', 'apns', 'visible', \(old.id), \(old.changeVersion),
                        'none', 0, 'finished', 1, \(now.addingTimeInterval(-40 * Self.day)),
                        \(now.addingTimeInterval(-40 * Self.day)), 'delivered', \(now.addingTimeInterval(-40 * Self.day)),
                        NULL, NULL),
                    (\(key.appId), 'alice', 'phone', 'apns', 'visible', \(kept.id), \(kept.changeVersion),
                        'none', 0, 'pending', 0, \(now), \(now), NULL, NULL, NULL, NULL),
                    (\(key.appId), 'alice', 'webhook:audit', 'webhooks', 'webhook', NULL, 0,
                        'none', 0, 'pending', 0, \(now), \(now), NULL, NULL, NULL, NULL)
                RETURNING id
                """
            ).map { try $0.decode(Int64.self) }
            #expect(ids.count == 4)
            try await store.rows(
                """
                INSERT INTO hub_webhook_event (delivery_id, event_id, type, body)
                VALUES (\(ids[3]), 'event-1', 'notification.read', '{"n":1}')
                """)

            try await store.migrate()
            #expect(try await store.appliedMigrations() == Array(1...14))
            #expect(
                try await Self.count(
                    "SELECT count(*) FROM pg_partitioned_table WHERE partrelid = 'hub_delivery'::regclass", store) == 1)
            #expect(try await Self.count("SELECT count(*) FROM hub_delivery", store) == 4, "every row moved")
            #expect(
                try await store.rows("SELECT to_regclass('hub_webhook_event')::text").first?.decode(String?.self) == nil
            )

            // The receipt reads the notification, who read it, and its delivery as before.
            let trace = try #require(try await store.deliveryTrace(key, id: "kept"))
            #expect(trace.readBy == "phone")
            let finished = trace.deliveries.filter { $0.result != nil }
            #expect(finished.map(\.delivery.id) == [ids[0]])
            #expect(finished.first?.providerMessageId == "apns-kept")
            #expect(try await store.notification(key, id: "old")?.status == .active)
            // The webhook event came along with its row.
            let events = try await store.claimWebhookEvents(
                limit: 10, now: now, owner: "a", leaseUntil: now.addingTimeInterval(60))
            #expect(events.map(\.delivery.id) == [ids[3]])
            #expect(events.first?.event?.id == "event-1")
            #expect(events.first?.event?.body == "{\"n\":1}")
            try await store.recordOutcomes([
                OutboxOutcome(id: ids[3], .finish(.delivered, detail: nil, goneSince: nil), at: now)
            ])

            // The hub sends the pending row, publishes with new IDs, and the sweep retires the old row.
            let runner = HubRunner([a.hub])
            #expect(await eventually { a.apns.deliveries.contains { $0.delivery.id == ids[2] } })
            let fresh = try await a.publish("fresh", visible: true)
            #expect(try await eventually { try await Self.finishedVisible(of: fresh.id, store) == 1 })
            let freshId = try await store.rows(
                "SELECT id FROM hub_delivery WHERE notification_id = \(fresh.id)"
            ).first?.decode(Int64.self)
            #expect((freshId ?? 0) > ids.max() ?? .max, "IDs continue after the old ones")
            #expect(
                try await eventually {
                    await a.hub.sweepOnce()
                    return try await Self.finishedVisible(of: old.id, store) == 0
                }, "past the retention: gone")
            #expect(
                try await eventually { try await Self.finishedVisible(of: kept.id, store) == 2 },
                "the old finished row and the sent one")
            #expect(try await Self.count("SELECT count(*) FROM hub_delivery_finished_default", store) == 0)
            #expect(await runner.stop(), "the hub did not shut down")
        }
    }

    /// Saves a new notification `appNotificationId` of `key` published at `now`, as a publish does.
    static func saveNotification(
        _ store: PostgresStore, _ key: FeedKey, _ appNotificationId: String, now: Date, expiresIn: TimeInterval
    ) async throws -> UserNotification {
        let request = PublishRequest(
            key: key,
            draft: NotificationDraft(
                appNotificationId: appNotificationId,
                payload: NotificationPayload(rawContent: "{}", visualContent: VisualContent(title: appNotificationId))),
            newId: "id-\(appNotificationId)", expirationDateTime: now.addingTimeInterval(expiresIn),
            deliveryMode: .visible, now: now)
        let notification = request.outcome(existing: nil).notification
        return try await store.transaction { db in
            try await PostgresStore.lockFeed(key, on: db)
            return try await PostgresStore.save(notification, db).0
        }
    }

    /// The finished visible deliveries of the notification `id`.
    static func finishedVisible(of id: String, _ store: PostgresStore) async throws -> Int {
        try await store.rows(
            "SELECT count(*) FROM hub_delivery WHERE state = 'finished' AND kind = 'visible' AND notification_id = \(id)"
        ).first?.decode(Int.self) ?? -1
    }

    /// The partition holding the finished visible delivery of the notification `id`.
    static func partition(of id: String, _ store: PostgresStore) async throws -> String? {
        try await store.rows(
            """
            SELECT tableoid::regclass::text FROM hub_delivery
            WHERE state = 'finished' AND kind = 'visible' AND notification_id = \(id)
            """
        ).first?.decode(String.self)
    }

    static func exists(_ table: String, _ store: PostgresStore) async throws -> Bool {
        try await store.rows("SELECT to_regclass(\(table))::text").first?.decode(String?.self) != nil
    }

    static func count(_ sql: String, _ store: PostgresStore) async throws -> Int {
        try await store.rows(PostgresQuery(unsafeSQL: sql)).first?.decode(Int.self) ?? -1
    }

    /// Records every row deleted from `hub_delivery_finished` (any partition, now or later) in
    /// `hub_delivery_deleted`. Dropping a partition deletes no row.
    static func logDeletes(_ store: PostgresStore) async throws {
        for statement in [
            "CREATE TABLE hub_delivery_deleted (id bigint NOT NULL)",
            """
            CREATE FUNCTION hub_delivery_log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO hub_delivery_deleted VALUES (OLD.id);
                RETURN OLD;
            END
            $$
            """,
            """
            CREATE TRIGGER hub_delivery_log_delete AFTER DELETE ON hub_delivery_finished
                FOR EACH ROW EXECUTE FUNCTION hub_delivery_log_delete()
            """,
        ] {
            try await store.rows(PostgresQuery(unsafeSQL: statement))
        }
    }
}
