import Foundation
public import HubCore

// Checks of what delivery receipts read: each delivery's sends, answers and provider message IDs,
// the tap that announced a publish, who read or dismissed it, and how long all of it is kept.
extension StoreConformance {
    /// A notification's trace has its deliveries with the first send's time, the latest answer's
    /// provider message ID and each outcome; a retry is pending with its error; a state change
    /// names the endpoint that made it and keeps the published version; a tap that a later
    /// publish coalesced into still announces the earlier one.
    public static func receiptsTrace(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try expect.equal(try await store.deliveryTrace(Fixture.alice, id: "none"), nil, "an unknown notification")
        for id in ["ok", "flaky", "dead"] { _ = try await store.upsertEndpoint(Fixture.endpoint(id)) }
        let (published, _) = try await Fixture.publish(store, Fixture.draft("r-1"))
        let first = try await Fixture.claim(store, at: Fixture.at(1))
        try expect.equal(first.count, 3, "a tap to each endpoint")
        let byEndpoint = Dictionary(uniqueKeysWithValues: first.map { ($0.delivery.endpointId, $0.delivery.id) })
        try await store.recordOutcomes([
            OutboxOutcome(
                id: byEndpoint["ok"]!, .finish(.delivered, detail: nil, goneSince: nil), at: Fixture.at(2),
                providerMessageId: "msg-ok"),
            OutboxOutcome(
                id: byEndpoint["flaky"]!, .retry(dueAt: Fixture.at(30), error: "503 ServiceUnavailable"),
                at: Fixture.at(2), providerMessageId: "msg-flaky-1"),
            OutboxOutcome(
                id: byEndpoint["dead"]!, .finish(.endpointGone, detail: "Unregistered", goneSince: nil),
                at: Fixture.at(2), providerMessageId: "msg-dead"),
        ])
        var trace = try expect.unwrap(try await store.deliveryTrace(Fixture.alice, id: "r-1"), "the trace")
        try expect.equal(trace.notification.id, published.id, "found by appNotificationId")
        try expect.equal(trace.publishedVersion, published.changeVersion, "the published version")
        let rows = Dictionary(uniqueKeysWithValues: trace.deliveries.map { ($0.delivery.endpointId, $0) })
        let ok = try expect.unwrap(rows["ok"], "the delivered tap")
        try expect.equal(ok.result, .delivered, "delivered")
        try expect.equal(ok.providerMessageId, "msg-ok", "the provider's message ID")
        try expect.equal(ok.firstSentAt, Fixture.at(1), "the first send")
        try expect.equal(ok.finishedAt, Fixture.at(2), "accepted at")
        try expect.equal(ok.transport, .apns, "transport")
        let flaky = try expect.unwrap(rows["flaky"], "the retried tap")
        try expect.equal(flaky.result, nil, "still pending")
        try expect.equal(flaky.delivery.lastError, "503 ServiceUnavailable", "the retry's reason")
        try expect.equal(flaky.delivery.dueAt, Fixture.at(30), "the next attempt")
        try expect.equal(flaky.providerMessageId, "msg-flaky-1", "the message ID of a retried send")
        try expect.that(!flaky.inFlight, "not leased after the retry")
        try expect.equal(ReceiptState(flaky), .retrying, "retrying")
        let dead = try expect.unwrap(rows["dead"], "the gone tap")
        try expect.equal(dead.result, .endpointGone, "gone")
        try expect.equal(dead.detail, "Unregistered", "the provider's reason")

        // The retry goes out again and is taken: the first send's time stays, the ID is the new one.
        let again = try await Fixture.claim(store, at: Fixture.at(30))
        try expect.equal(again.map(\.delivery.endpointId), ["flaky"], "the retry is due")
        try await store.recordOutcomes([
            OutboxOutcome(
                id: again[0].delivery.id, .finish(.delivered, detail: nil, goneSince: nil), at: Fixture.at(31),
                providerMessageId: "msg-flaky-2")
        ])
        // A read from "ok": the notification gets a new version; the published version stays.
        let read = try await store.updateState(
            StateChange(
                key: Fixture.alice, id: "r-1", readState: .read, userActionState: nil, exceptEndpoint: "ok",
                now: Fixture.at(40)))
        try expect.that((read?.changeVersion ?? 0) > published.changeVersion, "the read moves the version")
        _ = try await store.updateState(
            StateChange(
                key: Fixture.alice, id: published.id, readState: nil, userActionState: .dismissed,
                exceptEndpoint: "flaky", now: Fixture.at(41)))
        trace = try expect.unwrap(try await store.deliveryTrace(Fixture.alice, id: published.id), "by hub ID")
        try expect.equal(trace.publishedVersion, published.changeVersion, "kept across state changes")
        try expect.equal(trace.readBy, "ok", "read by")
        try expect.equal(trace.readAt, Fixture.at(40), "read at")
        try expect.equal(trace.dismissedBy, "flaky", "dismissed by")
        try expect.equal(trace.dismissedAt, Fixture.at(41), "dismissed at")
        let retried = try expect.unwrap(
            trace.deliveries.first {
                $0.delivery.endpointId == "flaky" && $0.delivery.changeVersion == published.changeVersion
            },
            "the retried tap")
        try expect.equal(retried.result, .delivered, "delivered on the second attempt")
        try expect.equal(retried.delivery.attempts, 2, "two attempts")
        try expect.equal(retried.firstSentAt, Fixture.at(1), "the first send's time is kept")
        try expect.equal(retried.providerMessageId, "msg-flaky-2", "the latest message ID")

        // Two publishes before a claim: one tap carries both; each notification's trace has it.
        let (second, _) = try await Fixture.publish(store, Fixture.draft("r-2"), at: Fixture.at(50))
        let (third, _) = try await Fixture.publish(store, Fixture.draft("r-3"), at: Fixture.at(51))
        let merged = try await Fixture.claim(store, at: Fixture.at(52))
        try expect.equal(merged.map(\.delivery.endpointId), ["flaky", "ok"], "one tap per active endpoint")
        for notification in [second, third] {
            let covering = try expect.unwrap(
                try await store.deliveryTrace(Fixture.alice, id: notification.id), "trace of \(notification.id)")
            let receipts = DeliveryReceipt.receipts(
                covering, endpoints: try await store.endpoints(Fixture.alice), wakesInProcess: { _ in false })
            let okReceipt = try expect.unwrap(receipts.first { $0.endpointId == "ok" }, "ok's receipt")
            try expect.equal(
                okReceipt.latest?.deliveryId, merged.first { $0.delivery.endpointId == "ok" }?.delivery.id,
                "\(notification.appNotificationId) is announced by the merged tap")
            try expect.equal(okReceipt.state, .pending, "leased, not answered")
            let deadReceipt = try expect.unwrap(receipts.first { $0.endpointId == "dead" }, "dead's receipt")
            try expect.equal(deadReceipt.state, .none, "nothing to an inactive endpoint")
        }
    }

    /// Finished deliveries outlive the retention while their notification lives, and are purged
    /// once it expired before the retention's start.
    public static func receiptsKeptForLifetime(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        try await Fixture.publish(store, Fixture.draft("long"), mode: .visible, expiresIn: 1_000)
        try await Fixture.drain(store, at: Fixture.at(1))
        // 200 s after the finish, with a 100 s retention: the notification still lives.
        _ = try await store.sweep(now: Fixture.at(201), purgeBefore: Fixture.at(101))
        try expect.equal(
            try await visibleDeliveries(store, of: "long"), 1, "kept while the notification lives")
        try expect.equal(
            try await store.deliveryStatistics().finished, ["apns": ["delivered": 1]], "still counted")
        // Expired at 1,000 s; the retention ends at 1,100 s.
        _ = try await store.sweep(now: Fixture.at(1_050), purgeBefore: Fixture.at(950))
        try expect.equal(
            try await visibleDeliveries(store, of: "long"), 1, "kept for the retention after the expiry")
        _ = try await store.sweep(now: Fixture.at(1_101), purgeBefore: Fixture.at(1_001))
        try expect.equal(try await visibleDeliveries(store, of: "long"), 0, "purged after the retention")
        try expect.equal(try await store.deliveryStatistics().finished, [:], "nothing finished is left")
    }

    private static func visibleDeliveries(_ store: any Store, of id: String) async throws -> Int? {
        try await store.deliveryTrace(Fixture.alice, id: id)?.deliveries.filter { $0.delivery.kind == .visible }.count
    }
}
