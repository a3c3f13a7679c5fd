import Foundation
public import HubCore

// Checks of batch publishes (`FeedStore.publish(batch:)`): what a batch stores is what the same
// publishes one by one would store.
extension StoreConformance {
    /// A batch of several users' publishes, one of them twice: every request gets its result in
    /// order, the repeated notification is created by the first and updated by the second (one
    /// notification, the later content, a newer version), a feed's versions grow in request order, and each
    /// endpoint gets one tap announcing its user's newest version.
    public static func batchMixedAndDuplicates(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let carol = FeedKey(appId: Fixture.app, userId: "carol")
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        _ = try await store.upsertEndpoint(Fixture.endpoint("c1", of: carol, platform: .android, transport: .fcm))
        let results = try await store.publish(
            batch: [
                Fixture.request(Fixture.draft("m-1", title: "First"), for: Fixture.alice, newId: "n-1"),
                Fixture.request(Fixture.draft("m-1"), for: Fixture.bob, newId: "n-2"),
                Fixture.request(Fixture.draft("m-2"), for: Fixture.alice, newId: "n-3"),
                Fixture.request(Fixture.draft("m-1", title: "Second"), for: Fixture.alice, newId: "n-4"),
                Fixture.request(Fixture.draft("m-1"), for: carol, newId: "n-5"),
            ])
        try expect.equal(results.count, 5, "one result per request")
        try expect.equal(results.map(\.created), [true, true, true, false, true], "created, in request order")
        try expect.equal(
            results.map(\.notification.id), ["n-1", "n-2", "n-3", "n-1", "n-5"],
            "IDs: the repeated notification keeps its first ID")
        try expect.equal(
            results.map(\.notification.userId), ["alice", "bob", "alice", "alice", "carol"], "each result's user")
        let versions = results.map(\.notification.changeVersion)
        let alices = [versions[0], versions[2], versions[3]]
        try expect.equal(alices, alices.sorted(), "a feed's versions grow in request order")
        try expect.equal(Set(versions).count, 5, "every request takes a version")
        try expect.equal(
            results[3].notification.payload.visualContent?.title, "Second", "the later request's content wins")
        try expect.equal(
            try await store.notification(Fixture.alice, id: "m-1"), results[3].notification,
            "the stored notification is the later request's")
        let feed = try await store.feed(Fixture.alice, after: 0, limit: 10)
        try expect.equal(feed.changes.map(\.appNotificationId), ["m-2", "m-1"], "alice's feed: each notification once")
        try expect.equal(feed.version, results[3].notification.changeVersion, "alice's feed ends with the update")

        let claimed = try await Fixture.claim(store, at: Fixture.t0)
        try expect.equal(
            Fixture.summary(claimed), ["a1:shoulderTap:n-1", "b1:shoulderTap:n-2", "c1:shoulderTap:n-5"],
            "one tap per endpoint")
        try expect.equal(
            claimed.first { $0.delivery.endpointId == "a1" }?.delivery.changeVersion,
            results[3].notification.changeVersion, "alice's tap announces her newest version")
    }

    /// A batch sent again (new IDs, as a retry makes): every item updates what the first stored —
    /// no notification twice, and no more taps than a single republish of each would make.
    public static func batchRetried(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        func batch(_ attempt: Int) -> [PublishRequest] {
            [
                Fixture.request(Fixture.draft("r-1"), for: Fixture.alice, newId: "a-\(attempt)"),
                Fixture.request(Fixture.draft("r-1"), for: Fixture.bob, newId: "b-\(attempt)"),
            ]
        }
        let first = try await store.publish(batch: batch(1))
        try expect.equal(first.map(\.created), [true, true], "the first batch creates")
        try await Fixture.drain(store, at: Fixture.t0)
        let again = try await store.publish(batch: batch(2))
        try expect.equal(again.map(\.created), [false, false], "the retried batch updates")
        try expect.equal(again.map(\.notification.id), ["a-1", "b-1"], "the retry keeps the first IDs")
        try expect.equal(
            try await store.history(Fixture.alice, filter: HistoryFilter(status: nil)).map(\.id), ["a-1"],
            "alice has the notification once")
        try expect.equal(
            try await store.history(Fixture.bob, filter: HistoryFilter(status: nil)).map(\.id), ["b-1"],
            "bob has the notification once")
        let claimed = try await Fixture.claim(store, at: Fixture.t0)
        try expect.equal(
            Fixture.summary(claimed), ["a1:shoulderTap:a-1", "b1:shoulderTap:b-1"],
            "one tap per endpoint, as a single republish makes")
    }

    /// A batch with a hand-off leases each item's deliveries due at once to the hand-off's owner,
    /// as a single publish does, each with its own notification; the others are left for a claim.
    public static func batchHandOff(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let a1 = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("f1", platform: .android, transport: .fcm))
        let b1 = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        let handOff = HandOff(owner: "worker-a", leaseUntil: Fixture.at(10), transports: [.apns])
        let results = try await store.publish(
            batch: [
                Fixture.request(Fixture.draft("h-1"), for: Fixture.alice, newId: "h-a", handOff: handOff),
                Fixture.request(Fixture.draft("h-1"), for: Fixture.bob, newId: "h-b", handOff: handOff),
            ])
        try expect.equal(results[0].handedOff.map(\.endpoint), [a1], "alice's APNs tap is handed off")
        try expect.equal(results[1].handedOff.map(\.endpoint), [b1], "bob's APNs tap is handed off")
        for result in results {
            let tap = try expect.unwrap(result.handedOff.first, "a handed-off tap")
            try expect.equal(tap.notification, result.notification, "the hand-off carries its item's notification")
            try expect.equal(tap.delivery.attempts, 1, "a hand-off counts an attempt")
        }
        try expect.equal(results.map(\.leftForClaim), [1, 0], "alice's FCM tap is left for a claim")
        let claimed = try await Fixture.claim(store, at: Fixture.at(1), owner: "worker-b")
        try expect.equal(Fixture.summary(claimed), ["f1:shoulderTap:h-a"], "a claim takes only what was not handed off")
    }

    /// A batch with a hand-off for users in three states, as single publishes would leave them:
    /// alice has a tap waiting (merged into and leased: still one row for her endpoint), bob has
    /// the notification already (updated, keeping its ID; his earlier tap was sent, so a new one is
    /// leased), carol has nothing (created, tap leased). Nothing is left for a claim, and once the
    /// leases end a claim finds exactly one tap per endpoint.
    public static func batchHandOffMerges(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let carol = FeedKey(appId: Fixture.app, userId: "carol")
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        _ = try await store.upsertEndpoint(Fixture.endpoint("c1", of: carol))
        _ = try await store.publish(Fixture.request(Fixture.draft("m-1"), for: Fixture.bob, newId: "m-b"))
        try await Fixture.drain(store, at: Fixture.t0)
        _ = try await store.publish(Fixture.request(Fixture.draft("m-0"), for: Fixture.alice, newId: "m-a0"))
        let handOff = HandOff(owner: "worker-a", leaseUntil: Fixture.at(10), transports: [.apns])
        let results = try await store.publish(
            batch: [
                Fixture.request(Fixture.draft("m-1"), for: Fixture.alice, newId: "m-a", handOff: handOff),
                Fixture.request(Fixture.draft("m-1"), for: Fixture.bob, newId: "m-b2", handOff: handOff),
                Fixture.request(Fixture.draft("m-1"), for: carol, newId: "m-c", handOff: handOff),
            ])
        try expect.equal(results.map(\.created), [true, false, true], "bob's notification is updated")
        try expect.equal(results.map(\.notification.id), ["m-a", "m-b", "m-c"], "bob's keeps its first ID")
        try expect.equal(
            results.map { $0.handedOff.map(\.endpoint.id) }, [["a1"], ["b1"], ["c1"]], "each item's tap is handed off")
        for result in results {
            let tap = try expect.unwrap(result.handedOff.first, "a handed-off tap")
            try expect.equal(tap.notification, result.notification, "the hand-off carries its item's notification")
            try expect.equal(tap.delivery.notificationId, result.notification.id, "the tap announces its item")
            try expect.equal(
                tap.delivery.changeVersion, result.notification.changeVersion, "the tap announces the new version")
            try expect.equal(tap.delivery.attempts, 1, "a hand-off counts an attempt")
        }
        try expect.equal(results.map(\.leftForClaim), [0, 0, 0], "nothing is left for a claim")
        try expect.equal(
            Fixture.summary(try await Fixture.claim(store, at: Fixture.at(1), owner: "worker-b")), [],
            "every tap is leased")
        try expect.equal(
            Fixture.summary(try await Fixture.claim(store, at: Fixture.at(11), owner: "worker-b")),
            ["a1:shoulderTap:m-a", "b1:shoulderTap:m-b", "c1:shoulderTap:m-c"],
            "after the leases, one tap per endpoint: alice's waiting tap took the new one")
    }

    /// A batch that interleaves feeds (alice, alice, bob, carol, alice) is applied in request
    /// order, as publishing its items one by one would be: each item's change version is newer
    /// than every earlier item's, whatever its feed, and rows of equal priority and due time are
    /// claimed in request order (their numbers follow it). A store that writes several items in
    /// one statement may only group consecutive items of distinct feeds
    /// (``HubCore/OutboxMachine/batchSegments(_:)``); rounds of distinct feeds (each feed's first
    /// item, then each feed's second, …) would number bob's and carol's items before alice's second.
    public static func batchInterleavedFeeds(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let carol = FeedKey(appId: Fixture.app, userId: "carol")
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        _ = try await store.upsertEndpoint(Fixture.endpoint("c1", of: carol))
        let items = [
            (Fixture.alice, "i-1"), (Fixture.alice, "i-2"), (Fixture.bob, "i-1"), (carol, "i-1"),
            (Fixture.alice, "i-3"),
        ]
        let results = try await store.publish(
            batch: items.enumerated().map { index, item in
                var request = Fixture.request(Fixture.draft(item.1), for: item.0, newId: "i-\(index)")
                request.deliveryMode = .visible
                return request
            })
        try expect.equal(results.map(\.notification.id), ["i-0", "i-1", "i-2", "i-3", "i-4"], "one result per item")
        let versions = results.map(\.notification.changeVersion)
        try expect.equal(
            versions, versions.sorted(), "each item's version is newer than the earlier items', whatever their feed")
        try expect.equal(Set(versions).count, items.count, "every item takes a version of its own")
        let claimed = try await store.claimDeliveries(
            limit: 10, now: Fixture.t0, owner: "worker-a", leaseUntil: Fixture.at(30))
        try expect.equal(
            Fixture.summary(claimed),
            ["a1:visible:i-0", "a1:visible:i-1", "b1:visible:i-2", "c1:visible:i-3", "a1:visible:i-4"],
            "equal priority and due time: claimed in request order, as one-by-one publishes would be")
        try expect.equal(
            claimed.map(\.delivery.changeVersion), versions, "each delivery announces its item's version")
    }
}

extension Fixture {
    /// A publish request of `draft` for `key` at `now` with the hub ID `newId`, expiring a day later.
    static func request(
        _ draft: NotificationDraft, for key: FeedKey, newId: String, at now: Date = t0, handOff: HandOff? = nil
    ) -> PublishRequest {
        PublishRequest(
            key: key, draft: draft, newId: newId, expirationDateTime: now.addingTimeInterval(86_400),
            deliveryMode: .shoulderTap, now: now, handOff: handOff)
    }
}
