import Foundation
import HubCore
import HubTesting
import Testing

@testable import HubPostgres

/// A scheduled notification lives in the shared store: any instance releases it at its time.
@Suite(
    "Scheduled release across instances",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct ScheduledReleaseTests {
    @Test("a notification scheduled through A is released and sent by B, with A not running")
    func releasedByAnotherInstance() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        var dispatcher = HubInstance.dispatcher(idle: .milliseconds(100))
        dispatcher.sweepInterval = .seconds(1)
        // Both instances and their stores on one manual clock: the release comes when the test says.
        let clock = ManualClock()
        let a = try HubInstance("a", schema: schema, dispatcher: dispatcher, clock: clock)
        let b = try HubInstance("b", schema: schema, dispatcher: dispatcher, clock: clock)
        try await a.store.migrate()
        try await PostgresTestDatabase.running([a.store, b.store]) {
            try await a.register("phone")
            let release = clock.date.addingTimeInterval(3)
            let (scheduled, _) = try await a.hub.publish(
                app: HubInstance.app.id, user: "alice",
                NotificationDraft(
                    appNotificationId: "later", payload: NotificationPayload(rawContent: "{}"),
                    scheduledDateTime: release))
            #expect(scheduled.status == .scheduled)
            let runner = HubRunner([b.hub])
            clock.advance(by: .seconds(2))
            #expect(await b.hub.sweepOnce().isEmpty, "held until its time")
            #expect(b.apns.deliveries.isEmpty)
            clock.advance(by: .seconds(1))
            #expect(await eventually { b.apns.deliveries.count == 1 }, "released by B at its time")
            #expect(b.apns.deliveries.first?.delivery.notificationId == scheduled.id)
            #expect(a.apns.deliveries.isEmpty)
            let feed = try await b.hub.feed(app: HubInstance.app.id, user: "alice", after: 0)
            #expect(feed.changes.map(\.status) == [.active])
            #expect(await runner.stop(), "the hub did not shut down")
        }
    }
}
