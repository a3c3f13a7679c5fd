import Foundation
import HubTesting
import Testing

@testable import HubCore

@Suite("scheduled send: held until its time, released by the hub running then")
struct ScheduleTests {
    static func draft(_ id: String, at date: Date) -> NotificationDraft {
        NotificationDraft(
            appNotificationId: id, payload: NotificationPayload(visualContent: VisualContent(title: id)),
            scheduledDateTime: date)
    }

    @Test("a scheduled notification survives a restart: the next hub on the store releases it at its time")
    func survivesRestart() async throws {
        let path = try TemporaryFolder.path("scheduled")
        let clock = ManualClock.fixed()
        let first = try TestHub(clock: clock, storePath: path)
        let release = clock.date.addingTimeInterval(120)
        try await first.running {
            try await first.register("phone", platform: .ios, transport: .apns, token: "aa01")
            let (published, created) = try await first.hub.publish(
                app: TestHub.app.id, user: "alice", Self.draft("later", at: release))
            #expect(created && published.status == .scheduled)
            #expect(
                published.expirationDateTime == release.addingTimeInterval(7 * 86_400),
                "its lifetime counts from its release")
            // The clock stands still: once the dispatcher is idle, nothing can come due.
            #expect(await eventually { first.hub.dispatcher.isIdle })
            #expect(first.apns.deliveries.isEmpty, "nothing before its time")
            let feed = try await first.hub.feed(app: TestHub.app.id, user: "alice", after: 0)
            #expect(feed.changes.isEmpty, "not in the feed before its time")
        }
        let second = try TestHub(clock: clock, storePath: path)
        try await second.running {
            #expect(await eventually { second.hub.dispatcher.isIdle })
            #expect(second.apns.deliveries.isEmpty)
            clock.advance(by: .seconds(120))
            #expect(await eventually { second.apns.deliveries.count == 1 }, "released and tapped at its time")
            let feed = try await second.hub.feed(app: TestHub.app.id, user: "alice", after: 0)
            #expect(feed.changes.map(\.appNotificationId) == ["later"])
            #expect(feed.changes.first?.status == .active)
        }
    }

    @Test("scheduledDateTime is checked: at most the maximum lifetime ahead, before the expiration")
    func validation() async throws {
        let clock = ManualClock.fixed()
        let hub = try TestHub(clock: clock)
        let now = clock.date
        var tooFar = Self.draft("far", at: now.addingTimeInterval(31 * 86_400))
        #expect(
            hub.hub.validate(tooFar, for: TestHub.app, userID: "alice", now: now).map(\.field) == ["scheduledDateTime"])
        tooFar.scheduledDateTime = now.addingTimeInterval(3600)
        tooFar.expirationDateTime = now.addingTimeInterval(1800)
        #expect(
            hub.hub.validate(tooFar, for: TestHub.app, userID: "alice", now: now).map(\.message)
                == ["must be before expirationDateTime"])
        // A time already passed sends at once.
        try await hub.hub.store.migrate()
        let (past, _) = try await hub.hub.publish(
            app: TestHub.app.id, user: "alice", Self.draft("past", at: now.addingTimeInterval(-5)))
        #expect(past.status == .active)
    }
}
