import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Testing

@testable import HubPostgres

/// Issue 39's follow-up: under overload some publishes were answered 503 (the hub's store
/// deadline passed) although their transaction committed, so the client's retry tapped the
/// device again. A 503 now means "not stored" and a commit sent in time is answered as stored
/// (`PostgresStore.inTransaction`, `DeadlineHold`). The database is slowed by triggers that sleep
/// for one marked notification: at `COMMIT` (a deferred constraint trigger) or in the write.
@Suite(
    "Publishes and the hub's store deadline on PostgreSQL",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct CommitDeadlineTests {
    /// The hub's deadline for every store call in these tests (short, but long enough for a
    /// publish's first statements on a loaded machine).
    static let deadline = Duration.seconds(2)
    /// How long a slowed statement sleeps: well past the deadline.
    static let pause = Duration.seconds(4)

    @Test("A publish whose COMMIT outlasts the store deadline is answered as stored, and its device is tapped once")
    func slowCommitAnswersStored() async throws {
        try await Self.withInstance { a in
            try await Self.slow(a.store, "slow-commit", atCommit: true)
            let started = ContinuousClock.now
            let stored = try await a.publish("slow-commit")
            #expect(ContinuousClock.now - started >= Self.pause, "the commit was slowed")
            #expect(stored.appNotificationId == "slow-commit")
            #expect(await eventually { a.apns.deliveries.count == 1 }, "the hand-off is sent")
            let feed = try await a.store.feed(Self.key, after: 0, limit: 10)
            #expect(feed.changes.map(\.appNotificationId) == ["slow-commit"])
            // The client, answered 201, does not retry: no second tap.
            #expect(a.apns.deliveries.map(\.delivery.notificationId) == [stored.id])
        }
    }

    @Test("A publish whose deadline passes before COMMIT is answered 503 and nothing of it is stored or sent")
    func deadlineBeforeCommitStoresNothing() async throws {
        try await Self.withInstance { a in
            try await Self.slow(a.store, "slow-write", atCommit: false)
            let started = ContinuousClock.now
            let error = await #expect(throws: HubError.self) { try await a.publish("slow-write") }
            #expect(error?.code == .unavailable)
            #expect(ContinuousClock.now - started < Self.pause, "answered at the deadline")
            // Its batch ends after the slowed write: rolled back, not committed.
            #expect(await eventually(timeout: .seconds(10)) { a.store.publishes.running == 0 }, "the batch ended")
            let after = try await a.publish("after")
            let feed = try await a.store.feed(Self.key, after: 0, limit: 10)
            #expect(feed.changes.map(\.appNotificationId) == ["after"], "the 503 publish is not stored")
            #expect(await eventually { a.apns.deliveries.count == 1 })
            #expect(a.apns.deliveries.map(\.delivery.notificationId) == [after.id])
            let deliveries = try await a.store.rows("SELECT count(*) FROM hub_delivery").first?.decode(Int.self)
            #expect(deliveries == 1, "no delivery of the 503 publish waits for a claim")
        }
    }

    static let key = FeedKey(appId: HubInstance.app.id, userId: "alice")

    /// One running hub instance on a fresh schema, with the short store deadline and alice's
    /// APNs endpoint `phone`.
    static func withInstance(_ body: (HubInstance) async throws -> Void) async throws {
        let a = try HubInstance(
            "a", schema: PostgresTestDatabase.freshSchema(), dispatcher: HubInstance.dispatcher(),
            storeTimeout: deadline)
        try await a.store.migrate()
        try await PostgresTestDatabase.running([a.store]) {
            let runner = HubRunner([a.hub])
            // The first calls open and prepare connections: on a loaded machine they may miss the
            // short deadline (and are idempotent), so they are tried again.
            var ready = false
            for _ in 0..<5 where !ready {
                let registered = (try? await a.register("phone")) != nil
                let published = (try? await a.publish("warm-up", user: "bob")) != nil
                ready = registered && published
            }
            #expect(ready, "the hub answers within its deadline")
            let outcome = await Result { try await body(a) }
            #expect(await runner.stop(), "the hub did not shut down")
            try outcome.get()
        }
    }

    /// Makes storing the notification `id` sleep ``pause``: at `COMMIT` (a deferred constraint
    /// trigger), or in the write statement.
    static func slow(_ store: PostgresStore, _ id: String, atCommit: Bool) async throws {
        // Registered before the trigger exists: the endpoint's statements are not slowed.
        _ = try await store.rows(
            """
            CREATE FUNCTION slow_notification() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.app_notification_id = TG_ARGV[0] THEN PERFORM pg_sleep(TG_ARGV[1]::float8); END IF;
                RETURN NEW;
            END $$
            """)
        let seconds = String(Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18)
        let trigger =
            atCommit
            ? "CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON hub_notification DEFERRABLE INITIALLY DEFERRED"
            : "CREATE TRIGGER slow BEFORE INSERT ON hub_notification"
        _ = try await store.rows(
            PostgresQuery(
                unsafeSQL: "\(trigger) FOR EACH ROW EXECUTE FUNCTION slow_notification('\(id)', '\(seconds)')"))
    }
}
