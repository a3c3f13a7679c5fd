public import HubCore

// Checks of delivery outcomes and of the delivery kinds.
extension StoreConformance {
    /// `.endpointGone` deactivates the endpoint and supersedes its pending deliveries, unless the
    /// endpoint registered again after the provider's timestamp.
    public static func endpointGoneDeactivatesUnlessReRegistered(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1", token: "tok-1"))
        try await Fixture.publish(store, Fixture.draft("g-1"))
        let stale = try await Fixture.claim(store, at: Fixture.t0)
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1", token: "tok-1", registeredAt: Fixture.at(50)))
        try await store.finishDelivery(
            id: stale[0].delivery.id, result: .endpointGone, detail: "Unregistered", goneSince: Fixture.at(40),
            at: Fixture.at(55))
        try expect.equal(
            try await store.endpoint(Fixture.alice, id: "e1")?.state, .active,
            "an endpoint registered after the provider's timestamp stays active")

        try await Fixture.publish(store, Fixture.draft("g-2"), at: Fixture.at(60))
        let current = try await Fixture.claim(store, at: Fixture.at(60))
        try await Fixture.publish(store, Fixture.draft("g-3"), at: Fixture.at(61))
        try await store.finishDelivery(
            id: current[0].delivery.id, result: .endpointGone, detail: "Unregistered", goneSince: Fixture.at(58),
            at: Fixture.at(62))
        let gone = try expect.unwrap(try await store.endpoint(Fixture.alice, id: "e1"), "the endpoint")
        try expect.equal(gone.state, .inactive, "state after endpointGone")
        try expect.equal(gone.inactiveReason, "Unregistered", "inactiveReason")
        try expect.equal(gone.inactiveSince, Fixture.at(58), "inactiveSince is the provider's timestamp")
        try expect.equal(try await store.endpoints(appId: Fixture.app, state: .inactive), [gone], "the feedback list")
        try expect.equal(try await store.endpoints(appId: Fixture.app, state: .active), [], "active endpoints")
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(100)), [], "pending deliveries are superseded")
        try expect.that(try await store.nextDueDate() == nil, "nothing pending")
        try expect.equal(
            try await store.deliveryStatistics().finished, ["apns": ["endpointGone": 2, "superseded": 1]], "statistics")

        _ = try await store.upsertEndpoint(Fixture.endpoint("e2", registeredAt: Fixture.at(100)))
        try await Fixture.publish(store, Fixture.draft("g-4"), at: Fixture.at(110))
        let claimed = try await Fixture.claim(store, at: Fixture.at(110))
        try await store.finishDelivery(
            id: claimed[0].delivery.id, result: .endpointGone, detail: "BadDeviceToken", goneSince: nil,
            at: Fixture.at(111))
        let undated = try expect.unwrap(try await store.endpoint(Fixture.alice, id: "e2"), "the second endpoint")
        try expect.equal(undated.state, .inactive, "state after an undated endpointGone")
        try expect.equal(undated.inactiveSince, Fixture.at(111), "inactiveSince without a provider timestamp")
    }

    /// Pending deliveries are counted, finished ones by transport and result.
    public static func statistics(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try expect.equal(try await store.deliveryStatistics(), DeliveryStatistics(pending: 0, finished: [:]), "empty")
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e2", platform: .android, transport: .fcm))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e3", platform: .windows, transport: .wns))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e4", platform: .web, transport: .polling))
        try await Fixture.publish(store, Fixture.draft("st-1"))
        try expect.equal(
            try await store.deliveryStatistics(), DeliveryStatistics(pending: 3, finished: [:]),
            "queued (none for the polling endpoint)")
        for item in try await Fixture.claim(store, at: Fixture.t0) {
            let rejected = item.delivery.endpointId == "e2"
            try await store.finishDelivery(
                id: item.delivery.id, result: rejected ? .rejected : .delivered,
                detail: rejected ? "InvalidRegistration" : nil, goneSince: nil, at: Fixture.at(1))
        }
        try expect.equal(
            try await store.deliveryStatistics(),
            DeliveryStatistics(
                pending: 0, finished: ["apns": ["delivered": 1], "fcm": ["rejected": 1], "wns": ["delivered": 1]]),
            "after finishing")
    }

    /// A high-priority notification with a fallback policy schedules a fallback delivery per
    /// tapped, non-polling endpoint, due after the timeout; other notifications do not.
    public static func fallbackScheduled(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e2", platform: .web, transport: .polling))
        let (urgent, _) = try await Fixture.publish(store, Fixture.draft("fb-1", priority: .high, fallback: 120))
        try expect.equal(
            Fixture.summary(try await Fixture.drain(store, at: Fixture.t0)), ["e1:shoulderTap:\(urgent.id)"],
            "taps first (the polling endpoint is woken by the hub, not tapped)")
        try expect.equal(try await store.nextDueDate(), Fixture.at(120), "the fallback is due after the timeout")
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(119)), [], "not before the timeout")
        let fallback = try await Fixture.drain(store, at: Fixture.at(120))
        try expect.equal(Fixture.summary(fallback), ["e1:fallback:\(urgent.id)"], "fallback deliveries")
        try expect.equal(fallback.first?.delivery.createdAt, Fixture.t0, "fallback createdAt")
        try expect.equal(fallback.first?.delivery.dueAt, Fixture.at(120), "fallback dueAt")
        try expect.equal(fallback.first?.delivery.priority, .high, "fallback priority")
        try expect.equal(fallback.first?.notification, urgent, "fallback notification")

        try await Fixture.publish(store, Fixture.draft("fb-2", priority: .low, fallback: 120), at: Fixture.at(200))
        try await Fixture.publish(store, Fixture.draft("fb-3", priority: .high), at: Fixture.at(201))
        try await Fixture.drain(store, at: Fixture.at(201))
        try expect.that(try await store.nextDueDate() == nil, "no fallback without high priority and a policy")
    }

    /// Visible deliveries go one per notification (never coalesced) to push endpoints; polling
    /// endpoints get no outbox rows; notifications without visual content get taps.
    public static func visibleNotCoalesced(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e2", platform: .web, transport: .polling))
        let (first, _) = try await Fixture.publish(store, Fixture.draft("v-1"), mode: .visible)
        let (second, _) = try await Fixture.publish(store, Fixture.draft("v-2"), at: Fixture.at(1), mode: .visible)
        let claimed = try await Fixture.drain(store, at: Fixture.at(2))
        try expect.equal(
            Fixture.summary(claimed),
            ["e1:visible:\(first.id)", "e1:visible:\(second.id)"], "visible deliveries")
        try expect.equal(claimed.first?.notification, first, "a visible delivery carries its notification")
        try expect.equal(claimed.first?.delivery.changeVersion, first.changeVersion, "visible delivery version")

        let (raw, _) = try await Fixture.publish(
            store, Fixture.draft("v-3", title: nil), at: Fixture.at(3), mode: .visible)
        try expect.equal(
            Fixture.summary(try await Fixture.drain(store, at: Fixture.at(3))),
            ["e1:shoulderTap:\(raw.id)"], "without visual content a visible publish taps")
    }
}

extension StoreConformance {
    /// A suspension parks a delivery: pending, counted per app and transport with the latest
    /// reason, never claimed (by any lane) nor due by time, until ``HubCore/OutboxStore/resumeSuspended(at:)``
    /// makes it claimable again. A new tap coalescing into a parked tap un-parks it; a suspended tap
    /// whose endpoint got a newer unleased tap meanwhile is superseded by it, as on a retry.
    public static func suspendParksUntilResumed(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("a2"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("f1", platform: .android, transport: .fcm))
        try await Fixture.publish(store, Fixture.draft("s-1"))
        let claimed = try await Fixture.claim(store, at: Fixture.t0)
        try expect.equal(claimed.map(\.delivery.endpointId), ["a1", "a2", "f1"], "claimed")
        try await store.recordOutcomes([
            OutboxOutcome(id: claimed[0].delivery.id, .suspend(reason: "403 InvalidProviderToken"), at: Fixture.at(1)),
            OutboxOutcome(id: claimed[1].delivery.id, .suspend(reason: "403 Forbidden"), at: Fixture.at(2)),
            OutboxOutcome(
                id: claimed[2].delivery.id, .finish(.delivered, detail: nil, goneSince: nil), at: Fixture.at(1)),
        ])
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(100)), [], "parked deliveries are not claimed")
        try expect.equal(
            try await store.claimDeliveries(
                .transport(.apns), limit: 10, now: Fixture.at(100), owner: "worker-b", leaseUntil: Fixture.at(130)),
            [], "nor by their transport's lane")
        try expect.that(try await store.nextDueDate() == nil, "parked deliveries never come due by time")
        try expect.equal(
            try await store.deliveryStatistics(),
            DeliveryStatistics(
                pending: 2, finished: ["fcm": ["delivered": 1]],
                suspended: [
                    SuspendedDeliveries(
                        appId: Fixture.app, transport: .apns, count: 2, lastReason: "403 Forbidden",
                        lastSuspendedAt: Fixture.at(2))
                ]), "statistics with parked deliveries")
        var depth = try await store.deliveryStatistics()
        depth.finished = [:]
        try expect.equal(try await store.outboxDepth(), depth, "the outbox depth is the statistics without history")

        try expect.equal(try await store.resumeSuspended(at: Fixture.at(20)), 2, "un-parked")
        try expect.equal(try await store.deliveryStatistics().suspended, [], "nothing parked after resuming")
        let resumed = try await store.claimDeliveries(
            .transport(.apns), limit: 10, now: Fixture.at(20), owner: "worker-a", leaseUntil: Fixture.at(50))
        try expect.equal(
            resumed.map(\.delivery.endpointId).sorted(), ["a1", "a2"], "resumed deliveries are claimed at once")
        try expect.equal(resumed.map(\.delivery.attempts), [2, 2], "each claim counts an attempt")
        try expect.equal(try await store.resumeSuspended(at: Fixture.at(21)), 0, "nothing left to un-park")

        // a1 is parked again; a2's tap is leased while a newer tap to a2 is published, then suspended.
        let a1 = try expect.unwrap(resumed.first { $0.delivery.endpointId == "a1" }, "a1's tap")
        let a2 = try expect.unwrap(resumed.first { $0.delivery.endpointId == "a2" }, "a2's tap")
        try await store.recordOutcomes([
            OutboxOutcome(id: a1.delivery.id, .suspend(reason: "again"), at: Fixture.at(22))
        ])
        let (newer, _) = try await Fixture.publish(store, Fixture.draft("s-2"), at: Fixture.at(30))
        try await store.recordOutcomes([
            OutboxOutcome(id: a2.delivery.id, .suspend(reason: "again"), at: Fixture.at(31))
        ])
        try expect.equal(
            try await store.deliveryStatistics().suspended, [], "new taps un-park; a stale tap is superseded")
        let taps = try await Fixture.claim(store, at: Fixture.at(40))
        try expect.equal(
            Fixture.summary(taps),
            ["a1:shoulderTap:\(newer.id)", "a2:shoulderTap:\(newer.id)", "f1:shoulderTap:\(newer.id)"],
            "one tap per endpoint, announcing the newest notification")
        try expect.equal(
            try await store.deliveryStatistics().finished["apns"], ["superseded": 1], "a2's suspended tap is superseded"
        )
    }
}
