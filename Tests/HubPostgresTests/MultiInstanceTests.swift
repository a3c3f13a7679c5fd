import Foundation
import HubCore
import HubPolling
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
                // Wake-ups are sent only to instances heard on the channel: each has heard the other.
                #expect(await eventually { store.relayPeerCount == 1 }, "relay knows the other instance")
            }
            let hubs = runHubs ? HubRunner([a.hub, b.hub]) : nil
            let result = await Result { try await body() }
            if let hubs { #expect(await hubs.stop(), "the hubs did not shut down") }
            try result.get()
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
            async let page = b.hub.longPoll(
                app: HubInstance.app.id, user: "alice", after: before, wait: .seconds(30), endpoint: "p1")
            #expect(await eventually { b.signals.waiterCount == 1 })
            let start = ContinuousClock.now
            let published = try await a.publish("n-1")
            let woken = try await page
            let latency = ContinuousClock.now - start
            #expect(woken.changes.map(\.id) == [published.id])
            // Woken by the change, long before the 30 s timeout. Typically a few milliseconds (see
            // `hub-bench publish --instances 2`); the bound leaves room for a loaded CI machine.
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
            async let page = a.hub.longPoll(
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
        let gate = Latch()  // opened only at the end: A's sends hang while A is "dead"
        let sentByA = Mutex<[Date]>([])
        let sentByB = Mutex<[Date]>([])
        let lease = Duration.seconds(1)
        var dispatcherA = HubInstance.dispatcher(lease: lease)
        dispatcherA.shutdownFlushTimeout = .seconds(1)
        // A's sends never finish while it is dead: its claims can only end by expiring.
        let a = try HubInstance("a", schema: schema, dispatcher: dispatcherA) { _ in
            sentByA.withLock { $0.append(Date()) }
            try? await gate.wait()
            return .accepted
        }
        let b = try HubInstance(
            "b", schema: schema, dispatcher: HubInstance.dispatcher(lease: lease, idle: .milliseconds(50))
        ) { _ in
            sentByB.withLock { $0.append(Date()) }
            return .accepted
        }
        let endpoints = (1...20).map { "e\($0)" }
        try await a.store.migrate()
        // A's store runs on its own, so that A can die: its connections go as when its process dies.
        let storeA = Task { await a.store.run() }
        defer {
            gate.open()
            storeA.cancel()
        }
        try await PostgresTestDatabase.running([b.store]) {
            for id in endpoints { try await b.register(id) }
            let hubA = HubRunner([a.hub])
            _ = try await a.publish("fan-out")
            #expect(await eventually { a.apns.deliveries.count == endpoints.count }, "A claimed the fan-out")
            // A "crashes": its connections close, it never renews a lease nor records an outcome.
            storeA.cancel()
            #expect((try? await withDeadline(.seconds(20), "store A") { await storeA.value }) != nil)
            let leasedUntil = try #require(
                try await b.store.rows("SELECT min(lease_until) FROM hub_delivery WHERE state = 'pending'").first?
                    .decode(Date?.self))

            let hubB = HubRunner([b.hub])
            #expect(await eventually { b.apns.deliveries.count >= endpoints.count })
            #expect(await eventually { (try? await b.store.deliveryStatistics().pending) == 0 })
            #expect(await hubB.stop(), "B did not shut down")
            #expect(Set(b.apns.deliveries.map(\.endpoint.id)) == Set(endpoints))
            #expect(b.apns.deliveries.count == endpoints.count, "each delivery taken over once")
            let firstTakeover = try #require(sentByB.withLock { $0.min() })
            #expect(firstTakeover.timeIntervalSince(leasedUntil) >= -0.05, "not before the lease ended")
            #expect(try await b.store.deliveryStatistics().finished["apns"]?["delivered"] == endpoints.count)

            // A's sends return at last; it cannot record them (its store is gone) and stops.
            gate.open()
            #expect(await hubA.stop(), "A did not shut down")
            #expect(try await b.store.deliveryStatistics().finished["apns"] == ["delivered": endpoints.count])
        }
    }

    @Test("After A dies, B takes A's deliveries over within lease + 5 s while a backlog of its own keeps it busy")
    func takeoverWhileBusy() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let sentAt = Mutex<[Int64: Date]>([:])
        // B: two slots, the production idle interval, and a provider that takes 100 ms a send: its
        // own publishes outrun it, so its hand-off queue stays full and a backlog grows.
        var dispatcherB = HubInstance.dispatcher(lease: .seconds(10), idle: .seconds(1))
        dispatcherB.concurrency = 2
        // Every send goes to one host and many to one user: with the default shares the lane would
        // defer and release rows all the time, and a released take-over waits as a fresh row. The
        // test is about the claim order alone.
        dispatcherB.maxUserShare = 1
        dispatcherB.maxHostShare = 1
        let b = try HubInstance("b", schema: schema, dispatcher: dispatcherB) { delivery in
            sentAt.withLock { $0[delivery.delivery.id] = $0[delivery.delivery.id] ?? Date() }
            try? await Task.sleep(for: .milliseconds(100))  // a provider's round trip, not a wait for a condition
            return .accepted
        }
        try await b.store.migrate()
        try await PostgresTestDatabase.running([b.store]) {
            for user in 0..<50 { try await b.register("phone", user: "b\(user)") }
            let hubB = HubRunner([b.hub])
            let load = Task {
                await withTaskGroup(of: Void.self) { group in
                    for publisher in 0..<8 {
                        group.addTask {
                            var sent = 0
                            while !Task.isCancelled {
                                _ = try? await b.publish(
                                    "load-\(publisher)-\(sent)", user: "b\((publisher + sent * 8) % 50)",
                                    visible: true)
                                sent += 1
                            }
                        }
                    }
                }
            }
            defer { load.cancel() }
            #expect(
                await eventually {
                    ((try? await b.store.rows(
                        "SELECT count(*) FROM hub_delivery WHERE state = 'pending' AND lease_owner IS NULL"
                    ).first?.decode(Int.self)) ?? 0) >= 300
                },
                "B has a backlog of its own")
            // What A leaves when it is killed: the newest rows, handed off to it, under a lease that
            // ends in a second and is never renewed.
            let taken = try await b.store.rows(
                """
                UPDATE hub_delivery SET lease_owner = 'a', lease_until = now() + interval '1 second',
                    claimed_at = now(), attempts = attempts + 1
                WHERE id IN (SELECT id FROM hub_delivery WHERE state = 'pending' AND lease_owner IS NULL
                    ORDER BY id DESC LIMIT 20)
                RETURNING id, lease_until
                """
            ).map { try $0.decode((Int64, Date).self) }
            #expect(taken.count == 20)
            let leasedUntil = try #require(taken.map(\.1).max())
            let ids = Set(taken.map(\.0))
            let allTaken = await eventually(timeout: .seconds(30)) {
                sentAt.withLock { sent in ids.allSatisfy { sent[$0] != nil } }
            }
            load.cancel()
            let times = sentAt.withLock { sent in ids.compactMap { sent[$0] } }
            if !allTaken {
                let missing = ids.filter { id in sentAt.withLock { $0[id] == nil } }
                let rows = try await b.store.rows(
                    "SELECT id, state, coalesce(lease_owner, '-'), coalesce(result, '-'), coalesce(detail, '-'), attempts FROM hub_delivery WHERE id = ANY(\(Array(missing)))"
                ).map { try $0.decode((Int64, String, String, String, String, Int).self) }
                print("not taken over:", rows)
            }
            #expect(allTaken, "B took over \(times.count) of \(ids.count)")
            let last = try #require(times.max())
            #expect(
                last.timeIntervalSince(leasedUntil) <= 5,
                "the last of A's deliveries was taken \(last.timeIntervalSince(leasedUntil)) s after its lease ended")
            #expect(await hubB.stop(), "B did not shut down")
        }
    }

    @Test("While both instances are healthy no delivery is sent twice")
    func noDoubleSends() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let jitter: @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in
            try? await Task.sleep(for: .microseconds(Int.random(in: 0...2000)))  // a provider's round trip, not a wait
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
