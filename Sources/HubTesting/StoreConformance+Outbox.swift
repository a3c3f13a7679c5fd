public import HubCore

// Checks of the delivery outbox.
extension StoreConformance {
    /// Taps to one endpoint coalesce into its pending, unleased tap (newest version, highest
    /// priority, earliest due time); a leased tap is not coalesced into.
    public static func coalescing(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let e1 = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e2", platform: .android, transport: .fcm))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e3", platform: .web, transport: .polling))
        try await Fixture.publish(store, Fixture.draft("c-1", priority: .low), at: Fixture.t0)
        try await Fixture.publish(store, Fixture.draft("c-2", priority: .high), at: Fixture.at(1))
        let (third, _) = try await Fixture.publish(store, Fixture.draft("c-3"), at: Fixture.at(2))

        let claimed = try await Fixture.claim(store, at: Fixture.at(10))
        try expect.equal(
            Fixture.summary(claimed), ["e1:shoulderTap:\(third.id)", "e2:shoulderTap:\(third.id)"], "coalesced taps")
        let tap = claimed[0]
        try expect.equal(
            tap.delivery.changeVersion, third.changeVersion, "a coalesced tap announces the newest version")
        try expect.equal(tap.delivery.priority, .high, "a coalesced tap keeps the highest priority")
        try expect.equal(tap.delivery.dueAt, Fixture.t0, "a coalesced tap keeps the earliest due time")
        try expect.equal(tap.delivery.createdAt, Fixture.t0, "createdAt")
        try expect.equal(tap.delivery.attempts, 1, "a claim counts an attempt")
        try expect.equal(tap.delivery.appId, Fixture.app, "appId")
        try expect.equal(tap.delivery.userId, "alice", "userId")
        try expect.equal(tap.endpoint, e1, "the claimed endpoint")
        try expect.equal(tap.notification, third, "the claimed notification")

        let (fourth, _) = try await Fixture.publish(store, Fixture.draft("c-4"), at: Fixture.at(11))
        let next = try await Fixture.claim(store, at: Fixture.at(12), owner: "worker-b")
        try expect.equal(
            Fixture.summary(next), ["e1:shoulderTap:\(fourth.id)", "e2:shoulderTap:\(fourth.id)"],
            "a change after the claim queues new taps")
        try expect.that(Set(next.map(\.delivery.id)).isDisjoint(with: claimed.map(\.delivery.id)), "new tap rows")
    }

    /// Only endpoints on the targeted platforms get deliveries; an empty policy targets all.
    /// Polling endpoints never get outbox rows (the hub wakes them after the commit).
    public static func targetPolicyFilters(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e-android", platform: .android, transport: .fcm))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e-ios"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e-web", platform: .web, transport: .polling))
        let (android, _) = try await Fixture.publish(store, Fixture.draft("t-1", platforms: [.android]))
        try expect.equal(
            Fixture.summary(try await Fixture.drain(store, at: Fixture.t0)), ["e-android:shoulderTap:\(android.id)"],
            "deliveries for an Android-only notification")
        let (all, _) = try await Fixture.publish(store, Fixture.draft("t-2"), at: Fixture.at(1))
        try expect.equal(
            Fixture.summary(try await Fixture.drain(store, at: Fixture.at(1))),
            ["e-android:shoulderTap:\(all.id)", "e-ios:shoulderTap:\(all.id)"],
            "deliveries for a notification to all platforms")
    }

    /// A lease hides a delivery from other owners until it ends; then another owner takes it
    /// over. A retry puts it back with a new due time.
    public static func claimLeaseAndTakeover(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try expect.that(try await store.nextDueDate() == nil, "nothing due in an empty outbox")
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        try await Fixture.publish(store, Fixture.draft("l-1"))
        try expect.equal(try await store.nextDueDate(), Fixture.t0, "due at publish")

        let first = try await Fixture.claim(store, at: Fixture.t0, owner: "worker-a", lease: 30)
        try expect.equal(first.count, 1, "claimed deliveries")
        let id = first[0].delivery.id
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(10), owner: "worker-b"), [], "leased elsewhere")
        try expect.equal(try await store.nextDueDate(), Fixture.at(30), "a leased delivery is due when its lease ends")

        let takeover = try await Fixture.claim(store, at: Fixture.at(31), owner: "worker-b")
        try expect.equal(takeover.map(\.delivery.id), [id], "an expired lease is taken over")
        try expect.equal(takeover[0].delivery.attempts, 2, "attempts after a takeover")

        try await store.retryDelivery(
            id: id, dueAt: Fixture.at(100), error: "503 Service Unavailable", at: Fixture.at(32))
        try expect.equal(try await store.nextDueDate(), Fixture.at(100), "due again at the retry time")
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(50)), [], "not due before the retry time")
        let retried = try await Fixture.claim(store, at: Fixture.at(100))
        try expect.equal(retried.map(\.delivery.id), [id], "claimed again at the retry time")
        try expect.equal(retried[0].delivery.attempts, 3, "attempts after a retry")
        try expect.equal(retried[0].delivery.lastError, "503 Service Unavailable", "lastError")
        try expect.equal(retried[0].delivery.dueAt, Fixture.at(100), "dueAt after a retry")

        try await store.finishDelivery(id: id, result: .delivered, detail: nil, goneSince: nil, at: Fixture.at(101))
        try expect.that(try await store.nextDueDate() == nil, "nothing due after finishing")
        try await store.finishDelivery(id: id, result: .rejected, detail: "late", goneSince: nil, at: Fixture.at(102))
        try expect.equal(
            try await store.deliveryStatistics().finished, ["apns": ["delivered": 1]], "finishing twice counts once")
        try expect.equal(
            try await Fixture.claim(store, at: Fixture.at(1000)), [], "a finished delivery is never claimed")
    }

    /// High-priority deliveries are claimed before others, then earlier due times first.
    public static func claimOrder(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        _ = try await store.upsertEndpoint(Fixture.endpoint("c1", of: FeedKey(appId: Fixture.app, userId: "carol")))
        try await Fixture.publish(store, Fixture.draft("o-1", priority: .low), for: Fixture.alice, at: Fixture.t0)
        try await Fixture.publish(
            store, Fixture.draft("o-2"), for: FeedKey(appId: Fixture.app, userId: "carol"), at: Fixture.at(1))
        try await Fixture.publish(store, Fixture.draft("o-3", priority: .high), for: Fixture.bob, at: Fixture.at(2))
        var order: [String] = []
        for _ in 0..<3 {
            let claimed = try await Fixture.claim(store, at: Fixture.at(10), limit: 1)
            try expect.equal(claimed.count, 1, "a claim with limit 1")
            order.append(claimed[0].delivery.endpointId)
        }
        try expect.equal(order, ["b1", "a1", "c1"], "claim order")
    }

    /// A delivery whose lease ended is claimed before every unleased one, however urgent or old:
    /// an instance busy with a backlog takes a dead instance's deliveries over first.
    public static func claimTakesOverFirst(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let carol = FeedKey(appId: Fixture.app, userId: "carol")
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        _ = try await store.upsertEndpoint(Fixture.endpoint("c1", of: carol))
        // A backlog: an older row and an urgent one, neither leased.
        try await Fixture.publish(store, Fixture.draft("t-1"), for: Fixture.alice, at: Fixture.t0)
        try await Fixture.publish(store, Fixture.draft("t-2", priority: .high), for: Fixture.bob, at: Fixture.at(1))
        // The newest, lowest row was handed off to an instance that died: its lease ends at 5.
        let dead = try await Fixture.publishHandingOff(
            store, Fixture.draft("t-3", priority: .low), for: carol, at: Fixture.at(2),
            handOff: HandOff(owner: "dead", leaseUntil: Fixture.at(5), transports: [.apns]))
        try expect.equal(dead.handedOff.map(\.delivery.endpointId), ["c1"], "handed off to the dead instance")
        let before = try await Fixture.claim(store, at: Fixture.at(4), owner: "survivor", limit: 1)
        try expect.equal(before.map(\.delivery.endpointId), ["b1"], "while the lease holds: the urgent row first")
        let after = try await store.claimDeliveries(
            limit: 2, now: Fixture.at(6), owner: "survivor", leaseUntil: Fixture.at(36))
        try expect.equal(
            after.map(\.delivery.endpointId), ["c1", "a1"], "once the lease ended: the taken-over row first")
        try expect.equal(after.first?.delivery.attempts, 2, "a take-over counts as an attempt")
    }

    /// A tap retried after a newer tap was queued for its endpoint does not produce a second
    /// pending tap: the endpoint is tapped once, with the newest version.
    public static func retryAfterNewerTap(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        try await Fixture.publish(store, Fixture.draft("r-1", priority: .high))
        let claimed = try await Fixture.claim(store, at: Fixture.t0)
        let (newer, _) = try await Fixture.publish(store, Fixture.draft("r-2"), at: Fixture.at(1))
        try await store.retryDelivery(
            id: claimed[0].delivery.id, dueAt: Fixture.at(5), error: "timeout", at: Fixture.at(2))
        let taps = try await Fixture.drain(store, at: Fixture.at(100))
        try expect.equal(Fixture.summary(taps), ["e1:shoulderTap:\(newer.id)"], "taps after the retry")
        try expect.equal(
            taps.first?.delivery.changeVersion, newer.changeVersion, "the tap announces the newest version")
        try expect.that(try await store.nextDueDate() == nil, "nothing left pending")
    }
}

extension StoreConformance {
    /// A publish with a ``HandOff`` leases its deliveries due at once, of the hand-off's
    /// transports, to the owner (as a claim at the publish time would) and returns them with their
    /// endpoints and notification; the rest (other transports, fallbacks due later) wait for
    /// claims. A tap merged into the endpoint's pending, unleased tap is handed off as that row.
    public static func handOff(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        var a1 = Fixture.endpoint("a1")
        a1.attributes["team"] = "blue"
        a1 = try await store.upsertEndpoint(a1)
        _ = try await store.upsertEndpoint(Fixture.endpoint("f1", platform: .android, transport: .fcm))
        _ = try await store.upsertEndpoint(Fixture.endpoint("p1", platform: .web, transport: .polling))
        let handOff = HandOff(owner: "worker-a", leaseUntil: Fixture.at(10), transports: [.apns])
        let first = try await Fixture.publishHandingOff(
            store, Fixture.draft("h-1", priority: .high, fallback: 120), handOff: handOff)
        try expect.equal(first.handedOff.map(\.delivery.endpointId), ["a1"], "handed off: the APNs tap only")
        let tap = try expect.unwrap(first.handedOff.first, "the handed-off tap")
        try expect.equal(tap.delivery.kind, .shoulderTap, "handed-off kind")
        try expect.equal(tap.delivery.attempts, 1, "a hand-off counts an attempt, as a claim does")
        try expect.equal(tap.delivery.notificationId, first.notification.id, "handed-off notification ID")
        try expect.equal(tap.notification, first.notification, "the hand-off carries the notification")
        try expect.equal(tap.endpoint, a1, "the hand-off carries the endpoint as stored, every field")
        try expect.equal(tap.endpoint.token, "token-alice-a1", "the endpoint's token")
        try expect.equal(first.leftForClaim, 1, "the FCM tap is left for a claim")

        let claimed = try await Fixture.claim(store, at: Fixture.at(1), owner: "worker-b")
        try expect.equal(
            Fixture.summary(claimed), ["f1:shoulderTap:\(first.notification.id)"],
            "another claimer takes the FCM tap, not the leased APNs tap")
        let takenOver = try await Fixture.claim(store, at: Fixture.at(11), owner: "worker-b", limit: 10)
        try expect.equal(takenOver.map(\.delivery.id), [tap.delivery.id], "a handed-off lease that ends is taken over")
        var stored = tap.delivery
        stored.attempts += 1
        try expect.equal(
            takenOver.first?.delivery, stored, "the handed-off delivery is the stored row (one more attempt now)")
        try await store.finishDelivery(
            id: tap.delivery.id, result: .delivered, detail: nil, goneSince: nil, at: Fixture.at(12))
        for item in claimed {
            try await store.finishDelivery(
                id: item.delivery.id, result: .delivered, detail: nil, goneSince: nil, at: Fixture.at(12))
        }
        try expect.equal(try await store.nextDueDate(), Fixture.at(120), "the fallbacks stay due later")

        // A tap waiting for a retry is merged into, and then handed off as that row.
        let second = try await Fixture.publishHandingOff(store, Fixture.draft("h-2"), at: Fixture.at(13))
        try expect.equal(second.handedOff, [], "no hand-off without one in the request")
        let waiting = try await Fixture.claim(store, at: Fixture.at(13), owner: "worker-b")
        for item in waiting {
            try await store.retryDelivery(id: item.delivery.id, dueAt: Fixture.at(60), error: "503", at: Fixture.at(14))
        }
        let third = try await Fixture.publishHandingOff(
            store, Fixture.draft("h-3"), at: Fixture.at(15),
            handOff: HandOff(owner: "worker-a", leaseUntil: Fixture.at(25), transports: [.apns, .fcm]))
        try expect.equal(
            Set(third.handedOff.map(\.delivery.id)), Set(waiting.map(\.delivery.id)),
            "the taps merged into the waiting rows are handed off as those rows")
        try expect.equal(
            Set(third.handedOff.map(\.delivery.changeVersion)), [third.notification.changeVersion],
            "they announce the newest version")
        try expect.equal(third.leftForClaim, 0, "nothing left for a claim")
        try expect.equal(
            try await Fixture.claim(store, at: Fixture.at(16), owner: "worker-b"), [], "nothing claimable while leased")
    }
}

extension StoreConformance {
    /// A plan's new rows are numbered in ``OutboxMachine/creationOrder(_:)`` whether a hand-off
    /// leases some of them or not, so that rows of equal priority and due time are claimed in plan
    /// order once a released lease puts them back among the others (the differential test found
    /// SQLite numbering leased rows first, PostgreSQL unleased taps first).
    public static func handOffKeepsCreationOrder(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("f1", platform: .android, transport: .fcm))
        let handOff = HandOff(owner: "worker-a", leaseUntil: Fixture.at(10), transports: [.fcm])
        let published = try await Fixture.publishHandingOff(store, Fixture.draft("order"), handOff: handOff)
        try expect.equal(published.handedOff.map(\.delivery.endpointId), ["f1"], "the FCM tap is handed off")
        try await store.releaseLeases(owner: "worker-a")
        let claimed = try await store.claimDeliveries(
            limit: 10, now: Fixture.at(1), owner: "worker-b", leaseUntil: Fixture.at(31))
        try expect.equal(
            claimed.map(\.delivery.endpointId), ["a1", "f1"],
            "equal priority and due time: claimed in plan order (endpoints by ID), the released one too")
    }

    /// A batch numbers its rows as publishing its items one by one would: the items in order,
    /// each item's rows in creation order, whether a hand-off leases them or not (a store that
    /// writes a batch's rows together must not number its leased rows apart from the others).
    public static func batchKeepsCreationOrder(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let carol = FeedKey(appId: Fixture.app, userId: "carol")
        for (prefix, key) in [("a", Fixture.alice), ("b", Fixture.bob), ("c", carol)] {
            _ = try await store.upsertEndpoint(Fixture.endpoint("\(prefix)1", of: key))
            _ = try await store.upsertEndpoint(
                Fixture.endpoint("\(prefix)2", of: key, platform: .android, transport: .fcm))
        }
        let handOff = HandOff(owner: "worker-a", leaseUntil: Fixture.at(10), transports: [.fcm])
        let results = try await store.publish(
            batch: [Fixture.alice, Fixture.bob, carol].enumerated().map { index, key in
                Fixture.request(Fixture.draft("order"), for: key, newId: "order-\(index)", handOff: handOff)
            })
        try expect.equal(
            results.map { $0.handedOff.map(\.delivery.endpointId) }, [["a2"], ["b2"], ["c2"]],
            "each item's FCM tap is handed off")
        try await store.releaseLeases(owner: "worker-a")
        let claimed = try await store.claimDeliveries(
            limit: 10, now: Fixture.at(1), owner: "worker-b", leaseUntil: Fixture.at(31))
        try expect.equal(
            claimed.map(\.delivery.endpointId), ["a1", "a2", "b1", "b2", "c1", "c2"],
            "equal priority and due time: claimed in item order, then plan order, the released ones too")
    }
}

extension StoreConformance {
    /// A user with more endpoints than one statement of a store's upsert writes (SQLite writes
    /// 128 rows a statement): the hand-off leases exactly the rows of its transports, the rest
    /// wait, a republish merges into every waiting tap, and a claim takes them in plan order.
    public static func manyEndpointsInOnePlan(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let ids = (0..<131).map { "e" + String(repeating: "0", count: 3 - String($0).count) + String($0) }
        for (index, id) in ids.enumerated() {
            _ = try await store.upsertEndpoint(
                index % 3 == 0
                    ? Fixture.endpoint(id, platform: .android, transport: .fcm) : Fixture.endpoint(id))
        }
        let fcm = ids.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        let handOff = HandOff(owner: "worker-a", leaseUntil: Fixture.at(10), transports: [.fcm])
        let first = try await Fixture.publishHandingOff(store, Fixture.draft("many"), handOff: handOff)
        try expect.equal(first.handedOff.map(\.delivery.endpointId).sorted(), fcm, "every FCM tap is handed off")
        try expect.equal(first.leftForClaim, ids.count - fcm.count, "every APNs tap waits for a claim")
        try await store.releaseLeases(owner: "worker-a")
        let second = try await Fixture.publishHandingOff(store, Fixture.draft("many-2"), at: Fixture.at(2))
        try expect.equal(second.leftForClaim, ids.count, "one due tap per endpoint")
        let claimed = try await store.claimDeliveries(
            limit: 500, now: Fixture.at(3), owner: "worker-b", leaseUntil: Fixture.at(33))
        try expect.equal(
            claimed.map(\.delivery.endpointId), ids,
            "one tap per endpoint (the republish merged into each), claimed in plan order")
        try expect.equal(
            Set(claimed.map(\.delivery.notificationId)), [second.notification.id], "each announces the newest")
    }
}
