import Foundation
import HubSQLite
import HubTesting
import ServiceLifecycle
import Synchronization
import Testing

@testable import HubCore

func temporaryStorePath() throws -> String { try TemporaryFolder.path("pipeline") }

/// Registers users `u0`, `u1`, … each with an APNs phone and an FCM Android device.
func registerPhoneAndAndroid(_ test: TestHub, users: Int) async throws {
    for user in 0..<users {
        try await test.register("phone", user: "u\(user)", platform: .ios, transport: .apns, token: "a\(user)")
        try await test.register("android", user: "u\(user)", platform: .android, transport: .fcm, token: "f\(user)")
    }
}

@Suite("delivery pipeline: lanes, leases, store faults")
struct PipelineTests {
    @Test("a stalled transport holds back only its own lane: the other transport delivers everything meanwhile")
    func lanes() async throws {
        let gate = Gate()
        let apns = RecordingTransport(id: .apns) { _ in
            await gate.pass()
            return .accepted
        }
        var dispatcher = TestHub.fastDispatcher
        dispatcher.concurrency = 8
        let test = try TestHub(apns: apns, dispatcher: dispatcher)
        try await test.running {
            try await registerPhoneAndAndroid(test, users: 100)
            for user in 0..<100 { try await test.publish("n", user: "u\(user)") }
            #expect(await eventually { test.fcm.deliveries.count == 100 }, "FCM delivered while APNs stalled")
            // The lane fills up to its concurrency (8); a busy lane claims only once a quarter of it
            // (2 slots) is free, so a stalled one may hold 7.
            let stalled = gate.waiting
            #expect((7...8).contains(stalled), "APNs holds at most its lane's concurrency: \(stalled)")
            #expect(apns.deliveries.count == stalled)
            gate.open()
            #expect(await eventually { apns.deliveries.count == 100 })
        }
    }

    @Test("a publish hands its deliveries to its own lanes: sent without a claim, each once")
    func handOff() async throws {
        let plug = StorePlug()
        let test = try TestHub(plug: plug)
        try await test.running {
            try await registerPhoneAndAndroid(test, users: 50)
            for user in 0..<50 { try await test.publish("n", user: "u\(user)") }
            #expect(await eventually { test.apns.deliveries.count == 50 && test.fcm.deliveries.count == 50 })
            #expect(
                try await eventually { try await test.store.deliveryStatistics().pending == 0 }, "every outcome written"
            )
            #expect(plug.claimedDeliveries == 0, "claims took \(plug.claimedDeliveries) deliveries")
            let sent = (test.apns.deliveries + test.fcm.deliveries).map(\.delivery.id)
            #expect(Set(sent).count == 100, "each delivery sent once")
        }
    }

    @Test("a lane without room leaves the publish's deliveries to claims; nothing is lost")
    func handOffFull() async throws {
        let gate = Gate()
        let apns = RecordingTransport(id: .apns) { _ in
            await gate.pass()
            return .accepted
        }
        let plug = StorePlug()
        var dispatcher = TestHub.fastDispatcher
        dispatcher.concurrency = 4
        let test = try TestHub(apns: apns, dispatcher: dispatcher, plug: plug)
        try await test.running {
            for user in 0..<40 {
                try await test.register("phone", user: "u\(user)", platform: .ios, transport: .apns, token: "a\(user)")
            }
            for user in 0..<40 { try await test.publish("n", user: "u\(user)") }
            // 4 sending, at most 4 queued: the other publishes left theirs in the outbox.
            #expect(await eventually { gate.waiting == 4 })
            #expect(try await test.store.deliveryStatistics().pending == 40)
            gate.open()
            #expect(await eventually { apns.deliveries.count == 40 })
            #expect(plug.claimedDeliveries >= 32, "claimed: \(plug.claimedDeliveries)")
            #expect(Set(apns.deliveries.map(\.delivery.id)).count == 40, "each delivery sent once")
        }
    }

    @Test("leases are renewed while a send is in flight: a send slower than the lease is not taken over")
    func leaseRenewal() async throws {
        let path = try temporaryStorePath()
        let clock = ManualClock()
        var dispatcher = TestHub.fastDispatcher
        dispatcher.lease = .seconds(6)
        // Each instance's sends wait at its own gate: a send that outlasts five leases.
        let gates = (first: Gate(), second: Gate())
        func held(at gate: Gate) -> RecordingTransport {
            TestHub.apnsLike { _ in
                await gate.pass()
                return .accepted
            }
        }
        let plugs = (first: StorePlug(), second: StorePlug())
        let first = try TestHub(
            apns: held(at: gates.first), clock: clock, dispatcher: dispatcher, storePath: path, plug: plugs.first,
            instanceID: "first")
        let second = try TestHub(
            apns: held(at: gates.second), clock: clock, dispatcher: dispatcher, storePath: path,
            plug: plugs.second, instanceID: "second")
        try await first.running {
            try await second.running {
                for user in 0..<5 {
                    try await first.register(
                        "phone", user: "u\(user)", platform: .ios, transport: .apns, token: "a\(user)")
                    try await first.publish("n", user: "u\(user)")
                }
                @Sendable func idle() -> Bool { first.hub.dispatcher.isIdle && second.hub.dispatcher.isIdle }
                #expect(await eventually { gates.first.waiting + gates.second.waiting == 5 && idle() })
                // Five leases, a third of a lease at a time. At each step every instance with sends
                // in flight renews its leases; the other one's lanes wake, claim and find nothing.
                // The next step waits until every lane and lease keeper is asleep again, so each
                // step wakes each keeper.
                for _ in 0..<15 {
                    let renewals = (first: plugs.first.calls("renewLeases"), second: plugs.second.calls("renewLeases"))
                    clock.advance(by: dispatcher.lease / 3)
                    #expect(
                        await eventually {
                            (gates.first.waiting == 0 || plugs.first.calls("renewLeases") > renewals.first)
                                && (gates.second.waiting == 0 || plugs.second.calls("renewLeases") > renewals.second)
                                && idle()
                        }, "every holder renewed")
                }
                #expect(gates.first.waiting + gates.second.waiting == 5, "no send was taken over meanwhile")
                gates.first.open()
                gates.second.open()
                #expect(await first.hub.settled())
                let sends = (first.apns.deliveries + second.apns.deliveries).reduce(into: [Int64: Int]()) {
                    $0[$1.delivery.id, default: 0] += 1
                }
                #expect(sends.count == 5 && sends.values.allSatisfy { $0 == 1 }, "sent once each: \(sends)")
                #expect(try await first.store.deliveryStatistics().finished["apns"]?["delivered"] == 5)
            }
        }
    }

    @Test("the deliveries a crashed instance had leased are sent by another instance once the lease ends")
    func crashTakeover() async throws {
        let path = try temporaryStorePath()
        let clock = ManualClock()
        let plug = StorePlug()
        let survivor = try TestHub(
            clock: clock, dispatcher: DispatcherConfiguration(), storePath: path, plug: plug, instanceID: "survivor")
        try await survivor.hub.store.migrate()
        try await survivor.register("phone", platform: .ios, transport: .apns, token: "aa01")
        try await survivor.publish("n1")
        // What a `kill -9` leaves behind: a claim with the default lease, never finished or renewed.
        let crashed = try SQLiteStore(path: path)
        let lease = DispatcherConfiguration().lease
        let leased = try await crashed.claimDeliveries(
            limit: 10, now: clock.date, owner: "crashed", leaseUntil: clock.date.addingTimeInterval(lease.seconds))
        #expect(leased.count == 1)
        try await survivor.running {
            #expect(await eventually { survivor.hub.dispatcher.isIdle })
            // A second before the lease ends the lanes have claimed again (every idle interval),
            // and found nothing: the lease still holds.
            let claims = plug.calls("claimDeliveries")
            clock.advance(by: lease - .seconds(1))
            #expect(await eventually { plug.calls("claimDeliveries") > claims && survivor.hub.dispatcher.isIdle })
            #expect(survivor.apns.deliveries.isEmpty, "not before the lease ended")
            // Past its end the next claim (an idle interval later) takes it over.
            clock.advance(by: .seconds(2))
            #expect(await eventually { survivor.apns.deliveries.count == 1 }, "taken over when the lease ended")
        }
    }

    @Test("a survivor busy with its own hand-offs still takes over a crashed instance's leases when they end")
    func takeoverWhileBusy() async throws {
        let path = try temporaryStorePath()
        let clock = ManualClock()
        // Every send but the crashed instance's waits its turn: the lane stays full and its
        // hand-off queue never empties, as under a publish load that never lets up.
        let turnstile = Gate()
        let apns = TestHub.apnsLike { delivery in
            if delivery.delivery.userId != "victim" { await turnstile.pass() }
            return .accepted
        }
        var dispatcher = TestHub.fastDispatcher
        dispatcher.concurrency = 2
        dispatcher.lease = .seconds(10)
        dispatcher.idleInterval = .seconds(1)
        let survivor = try TestHub(
            apns: apns, clock: clock, dispatcher: dispatcher, storePath: path, instanceID: "survivor")
        try await survivor.hub.store.migrate()
        try await survivor.register("phone", user: "victim", platform: .ios, transport: .apns, token: "v0")
        for user in 0..<40 {
            try await survivor.register("phone", user: "u\(user)", platform: .ios, transport: .apns, token: "a\(user)")
        }
        try await survivor.publish("n", user: "victim")
        // What a `kill -9` leaves behind: a claim whose lease ends in a second, never renewed.
        let crashed = try SQLiteStore(path: path)
        let leased = try await crashed.claimDeliveries(
            limit: 10, now: clock.date, owner: "crashed", leaseUntil: clock.date.addingTimeInterval(1))
        #expect(leased.count == 1)
        try await survivor.running {
            // Two sending, two handed off and queued.
            for user in 0..<4 { try await survivor.publish("n", user: "u\(user)") }
            #expect(await eventually { turnstile.waiting == 2 })
            // The crashed lease ends; the survivor's own (10 s) still hold.
            clock.advance(by: .seconds(2))
            var next = 4
            for _ in 0..<12 where !survivor.apns.deliveries.contains(where: { $0.delivery.userId == "victim" }) {
                // One send returns; a new publish hands off its delivery to the queue again.
                let before = survivor.apns.deliveries.count
                turnstile.letOneThrough()
                try await survivor.publish("n", user: "u\(next)")
                next += 1
                #expect(await eventually { survivor.apns.deliveries.count > before && turnstile.waiting == 2 })
            }
            #expect(
                survivor.apns.deliveries.contains { $0.delivery.userId == "victim" },
                "the crashed instance's delivery waited behind the survivor's hand-offs")
            turnstile.open()
            #expect(await eventually { survivor.apns.deliveries.count == next + 1 })
            let sends = survivor.apns.deliveries.reduce(into: [Int64: Int]()) { $0[$1.delivery.id, default: 0] += 1 }
            #expect(sends.values.allSatisfy { $0 == 1 }, "each delivery sent once: \(sends)")
        }
    }

    @Test("a store that stops answering under load never stops the dispatcher; every acknowledged publish is delivered")
    func storeOutage() async throws {
        for fault in [StorePlug.Fault.hang, .fail] {
            let plug = StorePlug()
            let apns = RecordingTransport(id: .apns) { _ in
                try? await Task.sleep(for: .milliseconds(20))  // a provider's round trip, not a wait
                return .accepted
            }
            let test = try TestHub(apns: apns, plug: plug, storeTimeout: .seconds(1))
            try await test.running {
                for user in 0..<40 {
                    try await test.register(
                        "phone", user: "u\(user)", platform: .ios, transport: .apns, token: "a\(user)")
                }
                var acknowledged: Set<String> = []
                var refused = 0
                var claimsAtStart = 0
                var claimsAtRecovery = 0
                for user in 0..<40 {
                    if user == 20 {
                        plug.unplug(fault)
                        claimsAtStart = plug.calls("claimDeliveries")
                    }
                    if user == 26 {
                        // Until the dispatcher's claims have failed several times in a row (each
                        // hung one ends at the 1 s store deadline; failed ones come back at once).
                        let claimsAtOutage = claimsAtStart
                        #expect(
                            await eventually { plug.calls("claimDeliveries") >= claimsAtOutage + 3 },
                            "\(fault): claims during the outage")
                        claimsAtRecovery = plug.calls("claimDeliveries")
                        plug.plugIn()
                    }
                    let started = ContinuousClock.now
                    do {
                        try await test.publish("n", user: "u\(user)")
                        acknowledged.insert("u\(user)")
                    } catch let error as HubError {
                        #expect(error.code == .unavailable)
                        #expect(
                            ContinuousClock.now - started < .seconds(2), "a refused publish answers in bounded time")
                        refused += 1
                    }
                }
                #expect(refused == 6, "\(fault): the publishes during the outage were refused")
                let expected = acknowledged
                #expect(
                    await eventually {
                        Set(apns.deliveries.map(\.endpoint.userId)).isSuperset(of: expected)
                    }, "\(fault): every acknowledged publish was delivered after the outage")
                // Hand-offs need no claim; a dispatcher that stopped for good would never claim again.
                let recoveryClaims = claimsAtRecovery
                #expect(
                    await eventually { plug.calls("claimDeliveries") > recoveryClaims }, "the dispatcher claims again")
                #expect(acknowledged.count == 34)
            }
        }
    }

    @Test("graceful shutdown returns in bounded time while store calls hang")
    func shutdownWithHungStore() async throws {
        let plug = StorePlug()
        var dispatcher = TestHub.fastDispatcher
        dispatcher.shutdownFlushTimeout = .seconds(1)
        let test = try TestHub(dispatcher: dispatcher, plug: plug, storeTimeout: .seconds(1))
        try await test.hub.store.migrate()
        try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: test.hub)], logger: test.hub.logger))
        let running = Task { try await group.run() }
        #expect(await eventually { plug.calls("claimDeliveries") > 0 })
        plug.unplug(.hang)
        #expect(await eventually { plug.hanging > 0 }, "a store call hangs when the shutdown starts")
        let started = ContinuousClock.now
        await group.triggerGracefulShutdown()
        try await withDeadline(.seconds(10), "the hub's shutdown") { try await running.value }
        // Bounded by the store deadline (1 s) plus the flush timeout (1 s), with room for a busy machine.
        #expect(ContinuousClock.now - started < .seconds(5), "stopped after \(ContinuousClock.now - started)")
        plug.plugIn()
    }
}
