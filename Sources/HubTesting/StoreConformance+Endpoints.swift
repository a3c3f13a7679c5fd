import Foundation
public import HubCore

// Checks of endpoint registration.
extension StoreConformance {
    /// Endpoints are stored per (app, user, id), listed, refreshed, touched and removed with their
    /// pending deliveries.
    public static func endpointLifecycle(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let e2 = try await store.upsertEndpoint(Fixture.endpoint("e2", platform: .android, transport: .fcm))
        let e1 = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        let b1 = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        try expect.equal(e1, Fixture.endpoint("e1"), "a new endpoint is stored as given")
        try expect.equal(try await store.endpoint(Fixture.alice, id: "e1"), e1, "read back")
        try expect.that(try await store.endpoint(Fixture.bob, id: "e1") == nil, "endpoints are per user")
        try expect.equal(try await store.endpoints(Fixture.alice), [e1, e2], "a user's endpoints, by ID")
        try expect.equal(
            Set(try await store.endpoints(appId: Fixture.app, state: nil)), [e1, e2, b1], "all endpoints of the app")
        try expect.equal(
            Set(try await store.endpoints(appId: Fixture.app, state: .active)), [e1, e2, b1], "active endpoints")
        try expect.equal(try await store.endpoints(appId: "other.example.com", state: nil), [], "another app's")

        try await store.touchEndpoint(Fixture.alice, id: "e1", syncedAt: Fixture.at(30))
        try expect.equal(
            try await store.endpoint(Fixture.alice, id: "e1")?.lastSyncAt, Fixture.at(30), "lastSyncAt after a sync")
        var refresh = Fixture.endpoint("e1", token: "tok-new", registeredAt: Fixture.at(40))
        refresh.appDisplayName = "Notes (beta)"
        // Several attributes (a transport's keys, say), not only the single `environment` of old.
        refresh.attributes = ["environment": "development", "auth": "c2VjcmV0", "p256dh": "BPk{\"json\"}"]
        let refreshed = try await store.upsertEndpoint(refresh)
        try expect.equal(refreshed.token, "tok-new", "token after a refresh")
        try expect.equal(refreshed.appDisplayName, "Notes (beta)", "appDisplayName after a refresh")
        try expect.equal(refreshed.attributes, refresh.attributes, "attributes after a refresh")
        try expect.equal(refreshed.registeredAt, Fixture.at(40), "registeredAt after a refresh")
        try expect.equal(refreshed.lastSyncAt, Fixture.at(30), "a refresh without lastSyncAt keeps it")
        try expect.equal(try await store.endpoint(Fixture.alice, id: "e1"), refreshed, "read back after a refresh")

        try await Fixture.publish(store, Fixture.draft("p-1"))
        try expect.that(try await store.deleteEndpoint(Fixture.alice, id: "e1"), "deleting an endpoint that exists")
        try expect.that(!(try await store.deleteEndpoint(Fixture.alice, id: "e1")), "deleting it again")
        try expect.equal(try await store.endpoints(Fixture.alice), [e2], "endpoints after a delete")
        try expect.equal(
            try await Fixture.claim(store, at: Fixture.t0).map(\.delivery.endpointId), ["e2"],
            "a deleted endpoint's pending deliveries are gone")
    }

    /// An inactive endpoint comes back when it registers after going inactive, or with a new
    /// token; a registration older than its inactivity leaves it inactive.
    public static func endpointReactivation(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()

        /// Makes e1 inactive: publish, claim, and report the token gone at `since`.
        func deactivate(at now: Date, since: Date) async throws {
            try await Fixture.publish(store, Fixture.draft("n-\(Int(now.timeIntervalSince(Fixture.t0)))"), at: now)
            let claimed = try await Fixture.claim(store, at: now)
            try expect.equal(claimed.map(\.delivery.endpointId), ["e1"], "a tap to deactivate with")
            try await store.finishDelivery(
                id: claimed[0].delivery.id, result: .endpointGone, detail: "BadDeviceToken", goneSince: since, at: now)
        }

        _ = try await store.upsertEndpoint(Fixture.endpoint("e1", token: "tok-1"))
        try await deactivate(at: Fixture.at(20), since: Fixture.at(10))
        try await Fixture.publish(store, Fixture.draft("ignored"), at: Fixture.at(21))
        try expect.equal(
            try await Fixture.claim(store, at: Fixture.at(21)), [], "no deliveries to an inactive endpoint")

        let stale = try await store.upsertEndpoint(Fixture.endpoint("e1", token: "tok-1", registeredAt: Fixture.at(5)))
        try expect.equal(stale.state, .inactive, "a registration older than the inactivity leaves it inactive")
        try expect.equal(stale.inactiveReason, "BadDeviceToken", "inactiveReason kept")
        try expect.equal(stale.inactiveSince, Fixture.at(10), "inactiveSince kept")
        try expect.equal(try await store.endpoint(Fixture.alice, id: "e1"), stale, "read back while inactive")

        let fresh = try await store.upsertEndpoint(Fixture.endpoint("e1", token: "tok-1", registeredAt: Fixture.at(30)))
        try expect.equal(fresh.state, .active, "a registration after the inactivity revives it")
        try expect.equal(fresh.inactiveReason, nil, "inactiveReason cleared")
        try expect.equal(fresh.inactiveSince, nil, "inactiveSince cleared")

        try await deactivate(at: Fixture.at(41), since: Fixture.at(40))
        let newToken = try await store.upsertEndpoint(
            Fixture.endpoint("e1", token: "tok-2", registeredAt: Fixture.at(35)))
        try expect.equal(newToken.state, .active, "a new token revives it")
        try expect.equal(try await store.endpoint(Fixture.alice, id: "e1"), newToken, "read back after revival")
    }

    /// A push token registered by another endpoint of the same app and transport moves there:
    /// the old endpoint and its pending deliveries go away.
    public static func tokenMovesBetweenUsers(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("a1", token: "shared"))
        try await Fixture.publish(store, Fixture.draft("m-1"))
        let b1 = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob, token: "shared"))
        try expect.equal(try await store.endpoints(Fixture.alice), [], "the previous holder is removed")
        try expect.equal(try await store.endpoints(Fixture.bob), [b1], "the new holder")
        try expect.equal(
            try await Fixture.claim(store, at: Fixture.t0), [], "the previous holder's deliveries are gone")

        let b2 = try await store.upsertEndpoint(Fixture.endpoint("b2", of: Fixture.bob, token: "shared"))
        try expect.equal(try await store.endpoints(Fixture.bob), [b2], "a new ID of the same user takes the token")

        let otherTransport = try await store.upsertEndpoint(
            Fixture.endpoint("a2", platform: .android, transport: .fcm, token: "shared"))
        let otherAppKey = FeedKey(appId: "other.example.com", userId: "alice")
        let otherApp = try await store.upsertEndpoint(Fixture.endpoint("a3", of: otherAppKey, token: "shared"))
        try expect.equal(try await store.endpoints(Fixture.bob), [b2], "other transports and apps do not conflict")
        try expect.equal(try await store.endpoints(Fixture.alice), [otherTransport], "the other transport's endpoint")
        try expect.equal(try await store.endpoints(otherAppKey), [otherApp], "the other app's endpoint")

        let p1 = try await store.upsertEndpoint(Fixture.endpoint("p1", platform: .web, transport: .polling))
        let p2 = try await store.upsertEndpoint(
            Fixture.endpoint("p2", of: Fixture.bob, platform: .web, transport: .polling))
        try expect.equal(
            try await store.endpoints(Fixture.alice), [otherTransport, p1], "endpoints without tokens coexist")
        try expect.equal(try await store.endpoints(Fixture.bob), [b2, p2], "endpoints without tokens coexist")
    }
}

// Checks of the endpoint limit, listing pages and released deliveries.
extension StoreConformance {
    /// A new endpoint past the user's limit is refused (409) and nothing is stored; a refresh of an
    /// existing endpoint, another user's endpoint, and a new endpoint that takes over the token of
    /// one of the user's own always pass; deleting an endpoint makes room. Concurrent registrations
    /// cannot pass the limit together.
    public static func endpointLimit(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let limit = EndpointLimit(maxPerUser: 3)
        for id in ["e1", "e2", "e3"] { _ = try await store.upsertEndpoint(Fixture.endpoint(id), limit: limit) }
        do {
            _ = try await store.upsertEndpoint(Fixture.endpoint("e4"), limit: limit)
            throw expect.fail("a fourth endpoint past a limit of 3 was stored")
        } catch let error as HubError {
            try expect.equal(error.code, .conflict, "past the limit: a conflict")
            try expect.that(error.message.contains("maxEndpointsPerUser = 3"), "the message names the limit")
            try expect.that(error.message.contains("Delete"), "the message says how to make room")
        }
        try expect.equal(
            try await store.endpoints(Fixture.alice).map(\.id), ["e1", "e2", "e3"], "nothing stored past the limit")
        let refreshed = try await store.upsertEndpoint(
            Fixture.endpoint("e2", token: "tok-new", registeredAt: Fixture.at(5)), limit: limit)
        try expect.equal(refreshed.token, "tok-new", "a refresh at the limit passes")
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob), limit: limit)
        // A new ID with e1's token: e1 goes, so the user stays at 3.
        _ = try await store.upsertEndpoint(Fixture.endpoint("e9", token: "token-alice-e1"), limit: limit)
        try expect.equal(
            try await store.endpoints(Fixture.alice).map(\.id), ["e2", "e3", "e9"],
            "a new endpoint that takes over one of the user's tokens replaces it")
        try expect.that(try await store.deleteEndpoint(Fixture.alice, id: "e3"), "delete to make room")
        _ = try await store.upsertEndpoint(Fixture.endpoint("e4"), limit: limit)
        try expect.equal(
            try await store.endpoints(Fixture.alice).map(\.id), ["e2", "e4", "e9"], "room made by a delete is used")

        // Ten new endpoints at once for a user with room for one.
        _ = try await store.deleteEndpoint(Fixture.alice, id: "e4")
        let stored = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<10 {
                group.addTask {
                    (try? await store.upsertEndpoint(Fixture.endpoint("c\(index)"), limit: limit)) != nil
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try expect.equal(stored, 1, "concurrent registrations: only one fits")
        try expect.equal(try await store.endpoints(Fixture.alice).count, 3, "the limit holds under concurrency")
    }

    /// An app's endpoints are read in pages ordered by user, then ID, each after the last of the
    /// previous page, optionally only those in a state.
    public static func endpointPages(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let carol = FeedKey(appId: Fixture.app, userId: "carol")
        var all: [Endpoint] = []
        for (key, ids) in [(Fixture.bob, ["b2", "b1"]), (Fixture.alice, ["e3", "e1", "e2"]), (carol, ["c1"])] {
            for id in ids { all.append(try await store.upsertEndpoint(Fixture.endpoint(id, of: key))) }
        }
        let ordered = all.sorted { ($0.userId, $0.id) < ($1.userId, $1.id) }.map(\.id)
        var read: [String] = []
        var after: EndpointPosition?
        for _ in 0..<10 {
            let page = try await store.endpoints(appId: Fixture.app, state: nil, after: after, limit: 2)
            read += page.map(\.id)
            guard page.count == 2, let last = page.last else { break }
            after = EndpointPosition(userId: last.userId, endpointId: last.id)
        }
        try expect.equal(read, ordered, "pages of 2 cover the app's endpoints once, by user then ID")
        try expect.equal(
            try await store.endpoints(
                appId: Fixture.app, state: nil, after: EndpointPosition(userId: "alice", endpointId: "e2"), limit: 10
            ).map(\.id), ["e3", "b1", "b2", "c1"], "a page after a position")
        try expect.equal(
            try await store.endpoints(appId: Fixture.app, state: .inactive, after: nil, limit: 10), [],
            "only endpoints in the state")
    }

    /// A released delivery goes back unleased, due when told, without the claim's attempt.
    public static func releaseUncounted(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        try await Fixture.publish(store, Fixture.draft("r-1"))
        let claimed = try await Fixture.claim(store, at: Fixture.t0)
        try expect.equal(claimed.map(\.delivery.attempts), [1], "the claim counts an attempt")
        try await store.recordOutcomes([
            OutboxOutcome(id: claimed[0].delivery.id, .release(dueAt: Fixture.at(10)), at: Fixture.t0)
        ])
        try expect.that(try await Fixture.claim(store, at: Fixture.at(5)).isEmpty, "not due before the release time")
        let again = try await Fixture.claim(store, at: Fixture.at(10))
        try expect.equal(again.map(\.delivery.id), [claimed[0].delivery.id], "claimed again when due")
        try expect.equal(again.map(\.delivery.attempts), [1], "the released claim's attempt was not counted")
    }
}
