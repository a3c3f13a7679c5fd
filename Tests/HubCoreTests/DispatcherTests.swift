import Foundation
import HubPolling
import HubTesting
import Synchronization
import Testing

@testable import HubCore

@Suite("dispatcher: taps, retries, dead tokens, universal dismiss")
struct DispatcherTests {
    @Test("a publish taps every endpoint of the user exactly once, and wakes a polling endpoint's long-poll")
    func fanOut() async throws {
        let test = try TestHub()
        try await test.running {
            try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
            try await test.register("android", platform: .android, transport: .fcm, token: "fcm-token")
            try await test.register("web", platform: .windows, transport: .polling)
            try await test.register("other", user: "bob", platform: .ios, transport: .apns, token: "bb02")
            async let page = test.hub.longPoll(
                app: TestHub.app.id, user: "alice", after: 0, wait: .seconds(20), endpoint: "web")
            #expect(await eventually { test.hub.waitingRoom?.waiterCount == 1 }, "the long-poll waits")
            let published = try await test.publish("n1")
            let woken = try await page
            #expect(woken.changes.map(\.id) == [published.id])
            #expect(await eventually { test.apns.deliveries.count == 1 && test.fcm.deliveries.count == 1 })
            #expect(await test.hub.settled())
            #expect(test.apns.deliveries.map(\.endpoint.id) == ["phone"])
            #expect(test.fcm.deliveries.map(\.endpoint.id) == ["android"])
            #expect(test.apns.deliveries.first?.kind == .shoulderTap)
            #expect(test.apns.deliveries.first?.notification == nil, "a shoulder tap carries no content")
        }
    }

    @Test("taps to one endpoint coalesce: five publishes before dispatch give one tap with the newest version")
    func coalescing() async throws {
        let test = try TestHub()
        try await test.hub.store.migrate()
        try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
        var last: UserNotification?
        for index in 1...5 { last = try await test.publish("n\(index)") }
        try await test.running {
            #expect(await eventually { test.apns.deliveries.count == 1 })
            #expect(await test.hub.settled())
            #expect(test.apns.deliveries.count == 1)
            #expect(test.apns.deliveries.first?.delivery.changeVersion == last?.changeVersion)
        }
    }

    @Test("a transient failure is retried with back-off, and given up after the attempt limit with the reason")
    func retries() async throws {
        let failures = Failures(count: 1)
        let apns = RecordingTransport(id: .apns) { _ in
            failures.take() ? .retry(after: nil, reason: "503 ServiceUnavailable") : .accepted
        }
        let alwaysFailing = RecordingTransport(id: .fcm) { _ in .retry(after: nil, reason: "500 InternalServerError") }
        let test = try TestHub(apns: apns, fcm: alwaysFailing)
        try await test.running {
            try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
            try await test.register("android", platform: .android, transport: .fcm, token: "t")
            try await test.publish("n1")
            #expect(await eventually { apns.deliveries.count == 2 })
            #expect(await eventually { alwaysFailing.deliveries.count == 3 })
            #expect(
                try await eventually {
                    let stats = try await test.hub.deliveryStatistics()
                    return stats.finished["apns"]?["delivered"] == 1 && stats.finished["fcm"]?["gaveUp"] == 1
                })
            #expect(await test.hub.settled())
            #expect(alwaysFailing.deliveries.count == 3, "no attempt after the limit")
        }
    }

    @Test("a dead token deactivates its endpoint, which then gets nothing until it re-registers")
    func deadToken() async throws {
        let apns = RecordingTransport(id: .apns) { delivery in
            delivery.endpoint.token == "dead" ? .endpointGone(since: nil, reason: "410 Unregistered") : .accepted
        }
        let test = try TestHub(apns: apns)
        try await test.running {
            try await test.register("old-phone", platform: .ios, transport: .apns, token: "dead")
            try await test.register("phone", platform: .ios, transport: .apns, token: "alive")
            try await test.publish("n1")
            #expect(
                try await eventually {
                    try await test.hub.appEndpoints(app: TestHub.app.id, state: .inactive).map(\.id) == ["old-phone"]
                })
            let inactive = try await test.hub.endpoint(app: TestHub.app.id, user: "alice", id: "old-phone")
            #expect(inactive.inactiveReason == "410 Unregistered")
            #expect(inactive.inactiveSince != nil)
            try await test.publish("n2")
            #expect(await eventually { apns.deliveries(to: "phone").count == 2 })
            #expect(await test.hub.settled())
            #expect(apns.deliveries(to: "old-phone").count == 1, "never retried to a dead token")
            let revived = try await test.register("old-phone", platform: .ios, transport: .apns, token: "new-token")
            #expect(revived.state == .active)
        }
    }

    @Test("a rejected delivery is not retried")
    func rejected() async throws {
        let apns = RecordingTransport(id: .apns) { _ in .rejected(reason: "400 BadTopic") }
        let test = try TestHub(apns: apns)
        try await test.running {
            try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
            try await test.publish("n1")
            #expect(
                try await eventually { try await test.hub.deliveryStatistics().finished["apns"]?["rejected"] == 1 })
            #expect(await test.hub.settled())
            #expect(apns.deliveries.count == 1)
        }
    }

    @Test("universal dismiss taps the user's other endpoints but not the one that dismissed")
    func universalDismiss() async throws {
        let test = try TestHub()
        try await test.running {
            try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
            try await test.register("android", platform: .android, transport: .fcm, token: "t")
            let notification = try await test.publish("n1")
            #expect(await eventually { test.apns.deliveries.count == 1 && test.fcm.deliveries.count == 1 })
            let dismissed = try await test.hub.updateState(
                app: TestHub.app.id, user: "alice", id: notification.id, readState: .read,
                userActionState: .dismissed, fromEndpoint: "android")
            #expect(dismissed.userActionState == .dismissed)
            #expect(dismissed.changeVersion > notification.changeVersion)
            #expect(await eventually { test.apns.deliveries.count == 2 })
            #expect(await test.hub.settled())
            #expect(test.fcm.deliveries.count == 1, "the dismissing endpoint is not tapped back")
            let page = try await test.hub.feed(app: TestHub.app.id, user: "alice", after: notification.changeVersion)
            #expect(page.changes.map(\.userActionState) == [.dismissed])
        }
    }

    @Test("back-off doubles with jitter, is capped, and honours Retry-After as a floor")
    func backoff() {
        var configuration = DispatcherConfiguration()
        configuration.initialBackoff = .seconds(1)
        configuration.maxBackoff = .seconds(60)
        for attempt in 1...10 {
            let delay = Dispatcher.backoff(attempt: attempt, retryAfter: nil, configuration: configuration).seconds
            let base = min(pow(2, Double(attempt - 1)), 60)
            #expect(delay >= base * 0.8 - 0.001 && delay <= base * 1.2 + 0.001)
        }
        let floored = Dispatcher.backoff(attempt: 1, retryAfter: .seconds(120), configuration: configuration)
        #expect(floored.seconds >= 120)
    }

    @Test("a fallback is skipped when the endpoint synced after the tap, or the notification was handled")
    func fallbackSkip() {
        let created = Date(timeIntervalSince1970: 1000)
        let delivery = Delivery(
            id: 1, appId: "a", userId: "u", endpointId: "e", kind: .fallback, notificationId: "n", changeVersion: 1,
            priority: .high, createdAt: created, dueAt: created.addingTimeInterval(60))
        var endpoint = Endpoint(
            id: "e", appId: "a", userId: "u", platform: .ios, platformAppId: "com.a.b", transport: .apns,
            registeredAt: created)
        var notification = UserNotification(
            id: "n", appId: "a", userId: "u", appNotificationId: "n", payload: NotificationPayload(rawContent: "x"),
            expirationDateTime: created.addingTimeInterval(3600), createdDateTime: created,
            lastModifiedDateTime: created)
        #expect(
            Dispatcher.skipReason(
                ClaimedDelivery(delivery: delivery, endpoint: endpoint, notification: notification), now: created)
                == nil)
        endpoint.lastSyncAt = created.addingTimeInterval(5)
        #expect(
            Dispatcher.skipReason(
                ClaimedDelivery(delivery: delivery, endpoint: endpoint, notification: notification), now: created)
                != nil)
        #expect(
            Dispatcher.skipReason(
                ClaimedDelivery(delivery: delivery, endpoint: endpoint, notification: notification),
                now: created.addingTimeInterval(3600)) == "the notification expired",
            "no content is sent past the expiration, even before the sweep")
        endpoint.lastSyncAt = nil
        notification.userActionState = .dismissed
        #expect(
            Dispatcher.skipReason(
                ClaimedDelivery(delivery: delivery, endpoint: endpoint, notification: notification), now: created)
                != nil)
    }

    @Test("expired notifications become tombstones in the feed and tap the user's endpoints")
    func expiry() async throws {
        let clock = ManualClock.fixed()
        let test = try TestHub(clock: clock)
        try await test.hub.store.migrate()
        try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
        let notification = try await test.hub.publish(
            app: TestHub.app.id, user: "alice",
            NotificationDraft(
                appNotificationId: "short", payload: NotificationPayload(rawContent: "x"),
                expirationDateTime: clock.date.addingTimeInterval(60))
        ).notification
        #expect(await test.hub.sweepOnce().isEmpty)
        clock.advance(by: .seconds(61))
        #expect(await test.hub.sweepOnce() == [FeedKey(appId: TestHub.app.id, userId: "alice")])
        let page = try await test.hub.feed(app: TestHub.app.id, user: "alice", after: notification.changeVersion)
        #expect(page.changes.map(\.status) == [.expired])
    }
}

/// Fails the first `count` calls.
final class Failures: Sendable {
    private let remaining: Mutex<Int>
    init(count: Int) { remaining = Mutex(count) }
    func take() -> Bool {
        remaining.withLock { value in
            guard value > 0 else { return false }
            value -= 1
            return true
        }
    }
}
