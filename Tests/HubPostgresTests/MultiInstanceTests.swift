import Foundation
import HubCore
import HubTesting
import Synchronization
import Testing

@testable import HubPostgres

/// Two hub instances — each with its own `PostgresStore`, `FeedSignals` and `Hub`, both running —
/// on one database schema.
@Suite(
    "Several hub instances on one database",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct MultiInstanceTests {
    /// A wake-up from the other instance arrives well before this; a waiter that is not woken
    /// waits 30 s.
    static let wakeBound = Duration.seconds(5)

    /// Runs both instances' stores and hubs around `body`.
    func withInstances(
        _ a: HubInstance, _ b: HubInstance, runHubs: Bool = true, _ body: () async throws -> Void
    ) async throws {
        try await a.store.migrate()
        try await PostgresTestDatabase.running([a.store, b.store]) {
            // Wake-ups sent before the other instance LISTENs are lost: start once both do.
            for store in [a.store, b.store] {
                #expect(await eventually { (try? await store.wakeConnectionCount()) == 1 }, "relay connected")
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                if runHubs {
                    group.addTask { try await a.hub.run() }
                    group.addTask { try await b.hub.run() }
                }
                defer { group.cancelAll() }
                try await body()
            }
        }
    }

    @Test("A publish through A wakes a device long-polling on B, through the relay")
    func publishWakesOtherInstance() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        // Each dispatcher only works when poked by its own instance's changes, so A sends the
        // polling delivery and B's waiter can only be woken by A's NOTIFY.
        let a = try HubInstance("a", schema: schema, dispatcher: HubInstance.dispatcher())
        let b = try HubInstance("b", schema: schema, dispatcher: HubInstance.dispatcher())
        try await withInstances(a, b) {
            try await a.register("p1", polling: true)
            let before = try await b.hub.feed(app: HubInstance.app.id, user: "alice", after: 0).version
            async let page = b.hub.feed(
                app: HubInstance.app.id, user: "alice", after: before, wait: .seconds(30), endpoint: "p1")
            #expect(await eventually { b.signals.waiterCount == 1 })
            let start = ContinuousClock.now
            let published = try await a.publish("n-1")
            let woken = try await page
            let latency = ContinuousClock.now - start
            #expect(woken.changes.map(\.id) == [published.id])
            // Woken by the change, long before the 30 s timeout. Typically a few milliseconds (see
            // `hub bench publish --instances 2`); the bound leaves room for a loaded CI machine.
            #expect(latency < Self.wakeBound, "publish-to-wake across instances took \(latency)")
        }
    }

    @Test("A dismiss through B wakes a device long-polling on A")
    func dismissWakesOtherInstance() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let a = try HubInstance("a", schema: schema, dispatcher: HubInstance.dispatcher())
        let b = try HubInstance("b", schema: schema, dispatcher: HubInstance.dispatcher())
        try await withInstances(a, b) {
            try await a.register("p1", polling: true)
            try await a.register("p2", polling: true)
            let published = try await a.publish("n-1")
            // The publish's own polling deliveries must be sent before the long-poll starts.
            #expect(await eventually { (try? await a.store.deliveryStatistics().pending) == 0 })
            let cursor = try await a.hub.feed(app: HubInstance.app.id, user: "alice", after: 0).version
            async let page = a.hub.feed(
                app: HubInstance.app.id, user: "alice", after: cursor, wait: .seconds(30), endpoint: "p1")
            #expect(await eventually { a.signals.waiterCount == 1 })
            let start = ContinuousClock.now
            _ = try await b.hub.updateState(
                app: HubInstance.app.id, user: "alice", id: published.id, readState: .read,
                userActionState: .dismissed, fromEndpoint: "p2")
            let woken = try await page
            let latency = ContinuousClock.now - start
            #expect(woken.changes.map(\.userActionState) == [.dismissed])
            #expect(latency < Self.wakeBound, "dismiss-to-wake across instances took \(latency)")
        }
    }

    @Test("After A dies during a fan-out, B sends A's claimed deliveries once its leases expire")
    func takeoverAfterCrash() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let gate = Latch()  // never opened while A is "dead"; ignores cancellation
        let sentByA = Mutex<[Date]>([])
        let sentByB = Mutex<[Date]>([])
        let lease = Duration.seconds(1)
        // A's sends never finish: its claims can only end by expiring.
        let a = try HubInstance("a", schema: schema, dispatcher: HubInstance.dispatcher(lease: lease)) { _ in
            sentByA.withLock { $0.append(Date()) }
            await gate.wait()
            return .accepted
        }
        let b = try HubInstance(
            "b", schema: schema, dispatcher: HubInstance.dispatcher(lease: lease, idle: .milliseconds(50))
        ) { _ in
            sentByB.withLock { $0.append(Date()) }
            return .accepted
        }
        defer { gate.open() }
        let endpoints = (1...20).map { "e\($0)" }
        try await withInstances(a, b, runHubs: false) {
            for id in endpoints { try await a.register(id) }
            let hubA = Task { try await a.hub.run() }
            _ = try await a.publish("fan-out")
            #expect(await eventually { a.apns.deliveries.count == endpoints.count }, "A claimed the fan-out")
            let claimedBy = try #require(sentByA.withLock { $0.min() })
            hubA.cancel()  // A "crashes": it never records an outcome for its sends.

            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await b.hub.run() }
                defer { group.cancelAll() }
                #expect(await eventually(timeout: .seconds(15)) { b.apns.deliveries.count >= endpoints.count })
                #expect(await eventually { (try? await b.store.deliveryStatistics().pending) == 0 })
            }
            #expect(Set(b.apns.deliveries.map(\.endpoint.id)) == Set(endpoints))
            #expect(b.apns.deliveries.count == endpoints.count, "each delivery taken over once")
            let firstTakeover = try #require(sentByB.withLock { $0.min() })
            #expect(firstTakeover.timeIntervalSince(claimedBy) >= lease.seconds - 0.05, "not before the lease ended")
            #expect(try await b.store.deliveryStatistics().finished["apns"]?["delivered"] == endpoints.count)

            // A comes back to life and reports its stale sends: they are already finished.
            gate.open()
            _ = await hubA.result
            #expect(try await b.store.deliveryStatistics().finished["apns"] == ["delivered": endpoints.count])
        }
    }

    @Test("While both instances are healthy no delivery is sent twice")
    func noDoubleSends() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let jitter: @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in
            try? await Task.sleep(for: .microseconds(Int.random(in: 0...2000)))
            return .accepted
        }
        let dispatcher = HubInstance.dispatcher(idle: .milliseconds(10))
        let a = try HubInstance("a", schema: schema, dispatcher: dispatcher, apns: jitter)
        let b = try HubInstance("b", schema: schema, dispatcher: dispatcher, apns: jitter)
        let users = (1...30).map { "user\($0)" }
        try await withInstances(a, b) {
            for user in users {
                for endpoint in 1...4 { try await a.register("e\(endpoint)", user: user) }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, user) in users.enumerated() {
                    group.addTask {
                        for round in 0..<4 {
                            let instance = (index + round) % 2 == 0 ? a : b
                            _ = try await instance.publish("n-\(round)", user: user)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await eventually(timeout: .seconds(30)) { (try? await a.store.deliveryStatistics().pending) == 0 })
            let sent = a.apns.deliveries.map(\.delivery.id) + b.apns.deliveries.map(\.delivery.id)
            #expect(Set(sent).count == sent.count, "a delivery was sent by both instances")
            #expect(try await a.store.deliveryStatistics().finished["apns"] == ["delivered": sent.count])
            #expect(!a.apns.deliveries.isEmpty && !b.apns.deliveries.isEmpty, "both dispatchers took part")
            let tapped = Set((a.apns.deliveries + b.apns.deliveries).map { "\($0.endpoint.userId)/\($0.endpoint.id)" })
            #expect(tapped.count == users.count * 4, "every endpoint was tapped")
        }
    }
}
