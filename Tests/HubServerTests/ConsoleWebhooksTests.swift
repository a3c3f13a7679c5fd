import Foundation
import HTTPTypes
import HubCore
import HubTesting
import Hummingbird
import HummingbirdTesting
import Testing

@testable import HubServer

/// `/console/apps/{app}/webhooks`, signed in, through HTTP.
@Suite("Console: webhooks page")
struct ConsoleWebhooksTests {
    @Test("per webhook: delivered, failed, success rate, queued and the latest failures, escaped; never the secret")
    func webhooksPage() async throws {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        let webhook = Webhook(
            url: "https://hooks.example.com/hub", events: [.deliveryFailed, .notificationRead],
            secret: Secret(secret, source: "test"))
        var app = CrossDeviceApp(id: "hooks.example", name: "Hooks", platforms: [.android: ["com.example.hooks"]])
        app.webhooks = [webhook]
        let harness = try await Harness(extraApps: [app])
        let store = harness.hub.store
        let now = Date()
        let rows = (1...4).map { index in
            WebhookDelivery(
                event: WebhookEvent(
                    id: "evt_\(index)", type: .deliveryFailed, appId: app.id, userId: "user-\(index)", timestamp: now,
                    body: "{}"), webhook: webhook.id)
        }
        try await store.enqueueWebhookEvents(rows, at: now)
        let claimed = try await store.claimWebhookEvents(
            limit: 10, now: now, owner: "console-test", leaseUntil: now.addingTimeInterval(30)
        ).sorted { $0.delivery.id < $1.delivery.id }
        try #require(claimed.count == 4)
        try await store.recordOutcomes([
            OutboxOutcome(id: claimed[0].delivery.id, .finish(.delivered, detail: nil, goneSince: nil), at: now),
            OutboxOutcome(id: claimed[1].delivery.id, .finish(.delivered, detail: nil, goneSince: nil), at: now),
            OutboxOutcome(
                id: claimed[2].delivery.id, .finish(.rejected, detail: "<script>alert(1)</script>", goneSince: nil),
                at: now),
            OutboxOutcome(
                id: claimed[3].delivery.id,
                .retry(dueAt: now.addingTimeInterval(3600), error: "the receiver answered 503"),
                at: now),
        ])
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            let page = try await client.send(.get, "/console/apps/hooks.example/webhooks", headers: [.cookie: cookie])
            #expect(page.status == .ok)
            for expected in [
                webhook.id, "https://hooks.example.com/hub", "delivery.failed, notification.read",
                "<td>2</td><td>1</td>", "66.7 %", "the receiver answered 503", "&lt;script&gt;alert(1)&lt;/script&gt;",
            ] {
                #expect(page.text.contains(expected), "\(expected)\n\(page.text)")
            }
            #expect(!page.text.contains("<script>alert(1)"))
            #expect(!page.text.contains(secret))
            let none = try await client.send(
                .get, "/console/apps/\(Harness.notes)/webhooks", headers: [.cookie: cookie])
            #expect(none.text.contains("This app has no webhooks."))
            // Every page of an app links its webhooks page.
            let overview = try await client.send(.get, "/console/apps/hooks.example", headers: [.cookie: cookie])
            #expect(overview.text.contains("href=\"/console/apps/hooks.example/webhooks\""), "\(overview.text)")
        }
    }
}
