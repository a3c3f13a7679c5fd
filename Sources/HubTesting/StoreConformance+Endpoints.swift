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
