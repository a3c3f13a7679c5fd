import Foundation
import HubSQLite
import HubTesting
import Synchronization
import Testing

@testable import HubCore

/// Holds every `recordOutcomes` call until opened, and counts them.
final class OutcomeGate: StoreInterceptor {
    let calls = Atomic<Int>(0)
    let gate = Gate()

    func intercept<T: Sendable>(_ name: String, _ call: @escaping @Sendable () async throws -> T) async throws -> T {
        if name == "recordOutcomes" {
            calls.add(1, ordering: .relaxed)
            await gate.pass()
        }
        return try await call()
    }
}

@Suite("delivery pipeline: outcome recorder")
struct OutcomeRecorderTests {
    @Test("outcomes that queued while a write was slow go out in one write, not in batches of a claim's size")
    func backlogInOneWrite() async throws {
        let store = try SQLiteStore.inMemory()
        let gate = OutcomeGate()
        let apns = TestHub.apnsLike()
        var configuration = HubConfiguration(apps: [TestHub.app], instanceID: "recorder", storeTimeout: .seconds(30))
        configuration.dispatcher = TestHub.fastDispatcher
        configuration.dispatcher.batchSize = 64  // a claim's size: 4 × 64 was the old cap of a write
        let hub = try Hub(
            configuration: configuration, store: InterceptedStore(store, gate), transports: [apns],
            logger: .init(label: "hub"))
        let users = 40
        let phones = 25
        for user in 0..<users {
            for phone in 0..<phones {
                _ = try await hub.registerEndpoint(
                    app: TestHub.app.id, user: "user-\(user)", id: "phone-\(phone)",
                    EndpointRegistration(
                        platform: .ios, appId: TestHub.app.platforms[.ios]![0], transport: .apns,
                        token: "token-\(user)-\(phone)", attributes: ["environment": "production"]))
            }
        }
        let running = Task { try await hub.run() }
        defer { running.cancel() }
        for user in 0..<users {
            _ = try await hub.publish(
                app: TestHub.app.id, user: "user-\(user)",
                NotificationDraft(appNotificationId: "n", payload: NotificationPayload(rawContent: "{}")))
        }
        // Every send returned while the first write of outcomes is held: 1,000 outcomes wait.
        #expect(await eventually { apns.deliveries.count == users * phones })
        #expect(await eventually { gate.calls.load(ordering: .relaxed) == 1 })
        gate.gate.open()
        #expect(await eventually { (try? await store.deliveryStatistics().pending) == 0 })
        // The held write, then one for everything that queued behind it (the old cap of 4 × 64
        // per write needed at least four more).
        #expect(gate.calls.load(ordering: .relaxed) <= 2)
    }

    @Test("an outcome that finds the recorder idle is written at once: no batch waits on the clock for company")
    func idleRecorderWritesAtOnce() async throws {
        let store = try SQLiteStore.inMemory()
        let gate = OutcomeGate()
        gate.gate.open()
        let apns = TestHub.apnsLike()
        // The dispatcher's defaults, on a clock that moves only when told: a batch that waited for
        // company on it would wait for good.
        let configuration = HubConfiguration(
            apps: [TestHub.app], instanceID: "recorder-idle", storeTimeout: .seconds(30))
        let hub = try Hub(
            configuration: configuration, store: InterceptedStore(store, gate), transports: [apns],
            logger: .init(label: "hub"), clock: ManualClock())
        _ = try await hub.registerEndpoint(
            app: TestHub.app.id, user: "alice", id: "phone",
            EndpointRegistration(
                platform: .ios, appId: TestHub.app.platforms[.ios]![0], transport: .apns, token: "token",
                attributes: ["environment": "production"]))
        let running = Task { try await hub.run() }
        defer { running.cancel() }
        for round in 0..<3 {
            _ = try await hub.publish(
                app: TestHub.app.id, user: "alice",
                NotificationDraft(appNotificationId: "n\(round)", payload: NotificationPayload(rawContent: "{}")))
            #expect(await eventually { apns.deliveries.count == round + 1 })
            // Written without the clock moving, one write per outcome (nothing else was queued).
            #expect(await eventually { gate.calls.load(ordering: .relaxed) >= round + 1 }, "round \(round)")
        }
        #expect(await eventually { (try? await store.deliveryStatistics().pending) == 0 })
    }
}
