public import HubCore

import struct Foundation.Date

// Checks of the outbox's webhook lane (``HubCore/WebhookStore``).
extension StoreConformance {
    /// The webhook checks, added to ``all``.
    static let webhookChecks: [Check] = [
        Check(name: "webhookEventsInOrderPerUser", run: webhookEventsInOrderPerUser),
        Check(name: "webhookEventsWithOutcomes", run: webhookEventsWithOutcomes),
    ]

    static func webhookEvent(
        _ type: WebhookEventType, user: String, _ label: String, at time: Date = Fixture.t0, webhook: String = "wh-1"
    ) -> WebhookDelivery {
        let event = WebhookEvent(
            id: "evt_\(label)", type: type, appId: Fixture.app, userId: user, timestamp: time,
            body: #"{"id":"evt_\#(label)","type":"\#(type)"}"#)
        return WebhookDelivery(event: event, webhook: webhook)
    }

    /// Claims the due webhook events as `owner`, in ID order.
    static func claimEvents(
        _ store: any Store, at now: Date, owner: String = "worker-a"
    ) async throws -> [ClaimedDelivery] {
        try await store.claimWebhookEvents(limit: 100, now: now, owner: owner, leaseUntil: now.addingTimeInterval(30))
            .sorted { $0.delivery.id < $1.delivery.id }
    }

    /// Only the oldest pending event of each user and webhook is claimable: one being sent or
    /// retried holds back the user's later ones, not other users' nor other webhooks'. A claimed
    /// event carries its ID, type and body, and the webhook's endpoint.
    public static func webhookEventsInOrderPerUser(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try await store.enqueueWebhookEvents(
            [
                webhookEvent(.notificationRead, user: "alice", "a1"),
                webhookEvent(.notificationRead, user: "bob", "b1"),
                webhookEvent(.notificationRead, user: "alice", "a2"),
                webhookEvent(.notificationDismissed, user: "alice", "a1-other", webhook: "wh-2"),
                webhookEvent(.notificationRead, user: "alice", "a3"),
            ], at: Fixture.t0)
        let first = try await claimEvents(store, at: Fixture.at(1))
        try expect.equal(first.compactMap(\.event?.id), ["evt_a1", "evt_b1", "evt_a1-other"], "the heads")
        let a1 = try expect.unwrap(first.first, "alice's first event")
        try expect.equal(a1.event?.body, #"{"id":"evt_a1","type":"notification.read"}"#, "the body")
        try expect.equal(a1.event?.type, .notificationRead, "the type")
        try expect.equal(a1.delivery.kind, .webhook, "the kind")
        try expect.equal(a1.delivery.attempts, 1, "a claim counts an attempt")
        try expect.equal(a1.endpoint.id, "webhook:wh-1", "the webhook's outbox endpoint")
        try expect.equal(a1.endpoint.transport, .webhooks, "the transport")
        try expect.equal(try await claimEvents(store, at: Fixture.at(2)).count, 0, "heads are leased: nothing else")

        // alice's head fails: it is retried; her later events still wait behind it.
        try await store.recordOutcomes([
            OutboxOutcome(
                id: a1.delivery.id, .retry(dueAt: Fixture.at(10), error: "the receiver answered 500"),
                at: Fixture.at(3))
        ])
        try expect.equal(try await claimEvents(store, at: Fixture.at(5)).count, 0, "a retried head holds back")
        let again = try await claimEvents(store, at: Fixture.at(10))
        try expect.equal(again.compactMap(\.event?.id), ["evt_a1"], "the head again, not the next")
        try expect.equal(again.first?.delivery.attempts, 2, "its second attempt")
        try await store.finishDelivery(
            id: a1.delivery.id, result: .delivered, detail: nil, goneSince: nil, at: Fixture.at(11))
        try expect.equal(
            try await claimEvents(store, at: Fixture.at(12)).compactMap(\.event?.id), ["evt_a2"], "then the next")
        let summary = try await store.webhookSummary(appId: Fixture.app, since: Fixture.t0, failures: 5)
        let one = try expect.unwrap(summary.first { $0.webhook == "wh-1" }, "wh-1's summary")
        try expect.equal(one.delivered, 1, "delivered")
        try expect.equal(one.pending, 3, "queued: b1, a2, a3")
    }

    /// An outcome and the events it makes are written together (``WebhookStore/recordOutcomes(_:enqueueing:at:)``).
    public static func webhookEventsWithOutcomes(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        try await Fixture.publish(store, Fixture.draft("w-1"))
        let tap = try expect.unwrap(try await Fixture.claim(store, at: Fixture.at(1)).first, "the tap")
        try await store.recordOutcomes(
            [OutboxOutcome(id: tap.delivery.id, .finish(.delivered, detail: nil, goneSince: nil), at: Fixture.at(2))],
            enqueueing: [webhookEvent(.deliveryDelivered, user: "alice", "d1", at: Fixture.at(2))], at: Fixture.at(2))
        let events = try await claimEvents(store, at: Fixture.at(3))
        try expect.equal(events.compactMap(\.event?.id), ["evt_d1"], "its event is queued")
        try expect.equal(events.first?.delivery.userId, "alice", "for its user")
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(3)).count, 0, "the tap is finished")
    }
}
