import Foundation
import HubSQLite
import HubTesting
import Synchronization
import Testing

@testable import HubCore

/// Runs an action once, right after a claim that came back empty returned from the store and
/// before the lane sees that result: the window in which a publish may commit and poke.
final class AfterEmptyClaim: StoreInterceptor {
    private let action = Mutex<(@Sendable () async -> Void)?>(nil)
    let claims = Atomic<Int>(0)

    func arm(_ action: @escaping @Sendable () async -> Void) { self.action.withLock { $0 = action } }

    func intercept<T: Sendable>(_ name: String, _ call: @escaping @Sendable () async throws -> T) async throws -> T {
        let result = try await call()
        if name == "claimDeliveries" { claims.add(1, ordering: .relaxed) }
        if name == "claimDeliveries", (result as? [ClaimedDelivery])?.isEmpty == true,
            let action = action.withLock({ action in
                defer { action = nil }
                return action
            })
        {
            await action()
        }
        return result
    }
}

/// Registers the APNs endpoint `phone` of `user` in `TestHub.app`.
func registerPhone(_ hub: Hub, user: String, token: String) async throws {
    _ = try await hub.registerEndpoint(
        app: TestHub.app.id, user: user, id: "phone",
        EndpointRegistration(
            platform: .ios, appId: TestHub.app.platforms[.ios]![0], transport: .apns, token: token,
            attributes: ["environment": "production"]))
}

@Suite("delivery pipeline: no lost wake-up")
struct LaneWakeTests {
    @Test("a delivery committed and poked while the lane's claim ran is sent at once, not after the idle pause")
    func pokeDuringClaim() async throws {
        let store = try SQLiteStore.inMemory()
        let interceptor = AfterEmptyClaim()
        let apns = TestHub.apnsLike()
        var configuration = HubConfiguration(apps: [TestHub.app], instanceID: "lane-wake", storeTimeout: .seconds(30))
        configuration.dispatcher = TestHub.fastDispatcher
        // The clock never moves: only a poke can wake an idle lane.
        let hub = try Hub(
            configuration: configuration, store: InterceptedStore(store, interceptor),
            transports: [apns], logger: .init(label: "hub"), clock: ManualClock())
        let key = FeedKey(appId: TestHub.app.id, userId: "alice")
        try await registerPhone(hub, user: key.userId, token: "a1")
        let running = Task { try await hub.run() }
        defer { running.cancel() }
        // Both lanes (APNs and the one for transports this hub does not run) claim once at start,
        // find nothing and go idle; only a poke wakes the APNs lane now, the other one not at all.
        #expect(await eventually { interceptor.claims.load(ordering: .relaxed) >= 2 && hub.dispatcher.isIdle })
        // The APNs lane's next claim comes back empty; right then another instance's publish (no
        // hand-off to this one) commits and its wake-up reaches this dispatcher, before the lane
        // has seen its claim's result.
        let published = Mutex(false)
        interceptor.arm {
            let now = hub.now()
            _ = try? await store.publish(
                PublishRequest(
                    key: key, draft: NotificationDraft(appNotificationId: "n-1", payload: .init(rawContent: "{}")),
                    newId: UUID().uuidString, expirationDateTime: now.addingTimeInterval(3600),
                    deliveryMode: .shoulderTap, now: now))
            published.withLock { $0 = true }
            hub.dispatcher.poke()
        }
        hub.dispatcher.poke()
        #expect(await eventually { published.withLock { $0 } }, "the claim ran")
        #expect(await eventually { apns.deliveries.count == 1 }, "sent, though the idle pause never ends")
    }
}

@Suite("delivery pipeline: hand-offs and claims")
struct HandOffClaimTests {
    @Test("hand-offs wake a drained lane without a claim; a poke still claims at once")
    func handOffsDoNotClaim() async throws {
        let plug = StorePlug()
        // The clock never moves: only a poke should make an idle lane claim.
        let test = try TestHub(clock: ManualClock(), plug: plug)
        try await test.running {
            for user in 0..<20 {
                try await test.register("phone", user: "u\(user)", platform: .ios, transport: .apns, token: "t\(user)")
            }
            // Both lanes claim once at start, find nothing and go idle.
            #expect(await eventually { plug.calls("claimDeliveries") >= 2 && test.hub.dispatcher.isIdle })
            let before = plug.calls("claimDeliveries")
            for user in 0..<20 {
                try await test.publish("n", user: "u\(user)")
                #expect(await eventually { test.apns.deliveries.count == user + 1 }, "handed off and sent")
            }
            #expect(plug.calls("claimDeliveries") == before, "no claim for hand-offs")
            test.hub.dispatcher.poke()
            #expect(await eventually { plug.calls("claimDeliveries") > before }, "a poke claims")
        }
    }

    @Test(
        "a lane that keeps taking hand-offs still claims once per idle interval (retries, fallbacks come due by time)")
    func handOffsDoNotPostponeClaims() async throws {
        let interceptor = AfterEmptyClaim()
        let apns = TestHub.apnsLike()
        var configuration = HubConfiguration(apps: [TestHub.app], instanceID: "hand-offs", storeTimeout: .seconds(30))
        configuration.dispatcher = TestHub.fastDispatcher
        configuration.dispatcher.idleInterval = .milliseconds(300)
        // APNs only: its lane and the stray lane (which looks every 3 s) are the only claimers.
        let clock = ManualClock()
        let hub = try Hub(
            configuration: configuration, store: InterceptedStore(try SQLiteStore.inMemory(), interceptor),
            transports: [apns], logger: .init(label: "hub"), clock: clock)
        for user in 0..<30 { try await registerPhone(hub, user: "u\(user)", token: "t\(user)") }
        let running = Task { try await hub.run() }
        defer { running.cancel() }
        #expect(await eventually { interceptor.claims.load(ordering: .relaxed) >= 2 && hub.dispatcher.isIdle })
        let before = interceptor.claims.load(ordering: .relaxed)
        for user in 0..<30 {
            _ = try await hub.publish(
                app: TestHub.app.id, user: "u\(user)",
                NotificationDraft(appNotificationId: "n", payload: .init(rawContent: "{}")))
            #expect(
                await eventually { apns.deliveries.count == user + 1 && hub.dispatcher.isIdle }, "handed off and sent")
            clock.advance(by: .milliseconds(50))
            // The idle interval ends every sixth step: the lane claims then, hand-offs or not.
            let due = (user + 1) / 6
            #expect(
                await eventually {
                    interceptor.claims.load(ordering: .relaxed) - before >= due && hub.dispatcher.isIdle
                },
                "a claim every 300 ms")
        }
        // A hand-off every 50 ms for 1.5 s; the APNs lane still claimed every 300 ms.
        let claims = interceptor.claims.load(ordering: .relaxed) - before
        #expect(claims >= 5, "\(claims) claims in 1.5 s")
    }
}
