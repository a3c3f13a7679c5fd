import Foundation
import HubCore
import HubTesting
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HubPostgres

/// Issue 13, "a store fault never stops the pipeline": two instances on one database keep
/// delivering through a restart of the PostgreSQL server, and an instance that dies mid-send
/// loses nothing. The restart runs against the server `scripts/with-postgres` keeps for outage
/// tests (no other test uses it); every wait is bounded, so a stall fails the test instead of
/// hanging it.
@Suite(
    "Database outages", .enabled(if: RestartableServer.isEnabled, RestartableServer.skipReason), .serialized)
struct OutageTests {

    @Test("Two instances ride out a server restart under load: every acknowledged publish is delivered")
    func restartUnderLoad() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let log = SendLog()
        var dispatcher = DispatcherConfiguration()
        dispatcher.idleInterval = .milliseconds(200)
        dispatcher.maxStoreBackoff = .seconds(1)
        dispatcher.concurrency = 16
        // Sends take a while, so that some are in flight (leased, outcome not written) at the stop.
        let a = try HubInstance(
            "a", schema: schema, dispatcher: dispatcher, server: .restartable, apns: log.transport("a"))
        let b = try HubInstance(
            "b", schema: schema, dispatcher: dispatcher, server: .restartable, apns: log.transport("b"))
        try await a.store.migrate()
        // Stores first: a service group stops them last, after the hubs wrote their outcomes.
        let services = HubRunner([a.store, b.store, a.hub, b.hub])
        let outcome = await Result {
            try await restartUnderLoad(a, b, log)
        }
        // Graceful shutdown (SIGTERM) completes.
        let shutdownStart = ContinuousClock.now
        #expect(await services.stop(), "graceful shutdown did not finish within 30 s")
        print("restart under load: graceful shutdown took \(ContinuousClock.now - shutdownStart)")
        try? await a.store.dropSchema()
        try outcome.get()
    }

    func restartUnderLoad(_ a: HubInstance, _ b: HubInstance, _ log: SendLog) async throws {
        let users = (1...12).map { "user\($0)" }
        var endpoints: [String: [String]] = [:]
        for user in users {
            for (index, instance) in [a, b].enumerated() {
                try await instance.register("e\(index)", user: user)
                endpoints[user, default: []].append("e\(index)")
            }
        }

        // Four publishers, two per instance, publish until told to stop (at most 60 s).
        let load = PublishLoad()
        defer { load.stop() }
        let publishers = Task {
            await withTaskGroup(of: Void.self) { group in
                for publisher in 0..<4 {
                    group.addTask { await load.publish(through: publisher % 2 == 0 ? a : b, as: publisher, to: users) }
                }
            }
        }
        #expect(await eventually { log.count >= 20 }, "deliveries flow before the outage")

        let stoppedAt = ContinuousClock.now
        try await RestartableServer.stop()
        let sentBeforeRestart = log.count
        // While the server is down, readiness answers (503), quickly.
        let probe = ContinuousClock.now
        await #expect(throws: HubError.self) { try await a.hub.checkReadiness() }
        let readinessLatency = ContinuousClock.now - probe
        #expect(readinessLatency < .seconds(3), "readiness took \(readinessLatency) while the server was down")
        try await Task.sleep(until: stoppedAt + .seconds(2))  // a real server down for 2 s: the outage under test
        try await RestartableServer.start()
        let restartedAt = ContinuousClock.now
        try await Task.sleep(for: .seconds(4))  // load for 4 s of real time after the restart, then stop
        load.stop()
        _ = try await withDeadline(.seconds(30), "publishers") { await publishers.value }
        let acknowledged = load.acknowledged
        let endpointsByUser = endpoints
        #expect(acknowledged.count > 100, "publishes acknowledged: \(acknowledged.count)")
        let delivered = await eventually(timeout: .seconds(60)) {
            log.missing(acknowledged, endpoints: endpointsByUser).isEmpty
        }
        let missing = log.missing(acknowledged, endpoints: endpointsByUser)
        #expect(delivered, "\(missing.count) deliveries of acknowledged publishes never sent: \(missing.prefix(10))")
        for name in ["a", "b"] {
            #expect(log.sends(by: name, after: restartedAt) > 0, "dispatcher \(name) claims again after the restart")
        }
        #expect(load.slowest < .seconds(8), "a publish took \(load.slowest): requests must always be answered")
        for store in [a.store, b.store] {
            #expect(await eventually { (try? await store.wakeConnectionCount()) == 1 }, "wake-up relay reconnected")
        }
        #expect(await eventually(timeout: .seconds(30)) { (try? await a.store.deliveryStatistics().pending) == 0 })
        print(
            """
            restart under load: \(acknowledged.count) publishes acknowledged, \(load.failures.count) refused \
            (\(Set(load.failures).sorted().prefix(3))); \(log.count) sends (\(sentBeforeRestart) before the restart), \
            \(log.sends(by: "a", after: restartedAt)) by a and \(log.sends(by: "b", after: restartedAt)) by b after it; \
            slowest publish \(load.slowest); readiness while down \(readinessLatency); \
            everything delivered \(log.lastSend.map { $0 - restartedAt } ?? .zero) after the restart
            """)
    }

    @Test("Leases are renewed while sends are in flight; the deliveries of a killed instance go out within 15 s")
    func takeoverAfterKill() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let log = SendLog()
        var dispatcher = DispatcherConfiguration()  // lease 10 s, renewed every 10/3 s; idle check 1 s
        #expect(dispatcher.lease == .seconds(10))
        dispatcher.shutdownFlushTimeout = .seconds(1)
        // A's sends hang until the end of the test; B's succeed at once.
        let gate = Latch()
        let a = try HubInstance("a", schema: schema, dispatcher: dispatcher) { delivery in
            log.record("a", delivery)
            try? await gate.wait()
            return .accepted
        }
        let b = try HubInstance("b", schema: schema, dispatcher: dispatcher, apns: log.transport("b", delay: 0...0))
        try await a.store.migrate()
        let storeA = Task { await a.store.run() }
        let storeB = Task { await b.store.run() }
        defer {
            gate.open()
            storeA.cancel()
            storeB.cancel()
        }
        let endpoints = (1...10).map { "e\($0)" }
        for id in endpoints { try await b.register(id) }

        let hubA = HubRunner([a.hub])
        _ = try await a.publish("fan-out")
        #expect(await eventually { log.sends(by: "a") == endpoints.count }, "A claimed the fan-out")
        let claimedAt = Date()
        let hubB = HubRunner([b.hub])

        // A is alive past its first lease: it renews, and B takes nothing over. Real time: the
        // leases are the database's, and nothing would happen on a manual clock.
        try await Task.sleep(for: .seconds(12))
        #expect(log.sends(by: "b") == 0, "B sent A's leased deliveries while A was alive")
        let leases = try await b.store.rows("SELECT lease_until FROM hub_delivery WHERE state = 'pending'")
            .map { try $0.decode(Date.self) }
        #expect(leases.count == endpoints.count)
        #expect(leases.allSatisfy { $0 > claimedAt.addingTimeInterval(10) }, "leases renewed while in flight")

        // Kill A: its connections go, as when its process dies. Its sends stay in flight; it
        // renews no lease, releases nothing and writes no outcome.
        storeA.cancel()
        let killedAt = ContinuousClock.now
        let storeStopped = (try? await withDeadline(.seconds(20), "store A") { await storeA.value }) != nil
        #expect(storeStopped, "A's store did not stop")

        let takenOver = await eventually { log.sends(by: "b") >= endpoints.count }
        let takeover = (log.lastSend ?? killedAt) - killedAt
        #expect(takenOver && takeover <= .seconds(15), "B sent A's deliveries \(takeover) after the kill")
        #expect(Set(log.all.filter { $0.instance == "b" }.map(\.endpoint)) == Set(endpoints))
        #expect(await eventually { (try? await b.store.deliveryStatistics().pending) == 0 })
        #expect(try await b.store.deliveryStatistics().finished["apns"] == ["delivered": endpoints.count])
        print("takeover after kill: B sent all \(endpoints.count) deliveries \(takeover) after A died")
        #expect(await hubB.stop(), "B did not shut down")
        gate.open()
        #expect(await hubA.stop(), "A did not shut down")
        try? await b.store.dropSchema()
    }
}

extension OutageTests {
    /// A server process that stops answering without closing the socket (a frozen host, a
    /// network that drops packets) must not hold a call: the statement deadline closes the
    /// connection, and the next call gets a new one.
    @Test("A statement on a connection whose server stopped answering fails at its deadline")
    func frozenBackend() async throws {
        var configuration = try PostgresStore.Configuration(
            url: Secret(try #require(TestServer.restartable.url)), poolSize: 1,
            schema: PostgresTestDatabase.freshSchema())
        configuration.statementTimeout = .seconds(1)
        let store = PostgresStore(configuration: configuration)
        try await PostgresTestDatabase.running([store]) {
            let pid = try #require(try await store.rows("SELECT pg_backend_pid()").first?.decode(Int32.self))
            // The server cancels a statement that outlives statement_timeout: unavailable, and
            // the connection stays usable.
            let slow = await #expect(throws: HubError.self) { try await store.rows("SELECT pg_sleep(5)") }
            #expect(slow?.code == .unavailable)
            #expect(try await store.rows("SELECT pg_backend_pid()").first?.decode(Int32.self) == pid)

            // Freeze the backend: it neither answers nor closes its socket.
            guard kill(pid_t(pid), SIGSTOP) == 0 else {
                Issue.record(
                    "cannot stop the server process \(pid) (errno \(errno)): run the tests as its owner or root")
                return
            }
            defer { kill(pid_t(pid), SIGCONT) }
            let start = ContinuousClock.now
            let frozen = await #expect(throws: HubError.self) { try await store.rows("SELECT 1") }
            let elapsed = ContinuousClock.now - start
            #expect(frozen?.code == .unavailable)
            // statement_timeout 1 s + the store's margin of 2 s.
            #expect(elapsed >= .seconds(2) && elapsed < .seconds(6), "the frozen statement took \(elapsed)")
            kill(pid_t(pid), SIGCONT)
            // The pool replaces the closed connection. Until it has seen the close, a call may still
            // be handed that connection and fail at once as unavailable (callers retry those): try
            // again for at most 2 s.
            var next: Int32?
            let retryUntil = ContinuousClock.now + .seconds(2)
            while next == nil {
                do {
                    next = try await store.rows("SELECT pg_backend_pid()").first?.decode(Int32.self)
                } catch let error as HubError where error.code == .unavailable && ContinuousClock.now < retryUntil {
                    try await Task.sleep(for: .milliseconds(50))  // a retry's pause, not a wait
                }
            }
            #expect(next != nil && next != pid)
            print("frozen backend: the statement failed after \(elapsed)")
        }
    }
}

/// Every send of the instances' transports: by whom, to which endpoint, what, and when.
final class SendLog: Sendable {
    struct Send: Sendable {
        let instance: String
        let user: String
        let endpoint: String
        let kind: DeliveryKind
        let notificationId: String?
        let changeVersion: Int64
        let at: ContinuousClock.Instant
    }

    private let sends = Mutex<[Send]>([])

    func record(_ instance: String, _ delivery: OutboundDelivery) {
        let send = Send(
            instance: instance, user: delivery.endpoint.userId, endpoint: delivery.endpoint.id,
            kind: delivery.delivery.kind, notificationId: delivery.delivery.notificationId,
            changeVersion: delivery.delivery.changeVersion, at: .now)
        sends.withLock { $0.append(send) }
    }

    /// A transport script that takes `delay` milliseconds per send, then records it as accepted.
    func transport(
        _ instance: String, delay: ClosedRange<Int> = 5...40
    ) -> @Sendable (OutboundDelivery) async -> DeliveryOutcome {
        { delivery in
            let milliseconds = Int.random(in: delay)
            // A provider's round trip, not a wait.
            if milliseconds > 0 { try? await Task.sleep(for: .milliseconds(milliseconds)) }
            self.record(instance, delivery)
            return .accepted
        }
    }

    var all: [Send] { sends.withLock { $0 } }
    var count: Int { sends.withLock { $0.count } }
    var lastSend: ContinuousClock.Instant? { sends.withLock { $0.last?.at } }

    func sends(by instance: String, after instant: ContinuousClock.Instant? = nil) -> Int {
        sends.withLock { sends in
            sends.count { send in send.instance == instance && (instant.map { send.at > $0 } ?? true) }
        }
    }

    /// The deliveries `acknowledged` publishes need that were not sent: a visible notification
    /// to each endpoint of its user; for a tap, a tap to each endpoint announcing its version or
    /// a newer one (taps coalesce).
    func missing(_ acknowledged: [PublishLoad.Ack], endpoints: [String: [String]]) -> [String] {
        var visible = Set<String>()
        var newestTap: [String: Int64] = [:]
        for send in all {
            let endpoint = "\(send.user)/\(send.endpoint)"
            if send.kind == .visible {
                visible.insert("\(endpoint)/\(send.notificationId ?? "")")
            } else if send.kind == .shoulderTap {
                newestTap[endpoint] = max(newestTap[endpoint] ?? 0, send.changeVersion)
            }
        }
        var missing: [String] = []
        for ack in acknowledged {
            for id in endpoints[ack.user] ?? [] {
                let endpoint = "\(ack.user)/\(id)"
                if ack.visible {
                    if !visible.contains("\(endpoint)/\(ack.notificationId)") {
                        missing.append("visible \(ack.notificationId) to \(endpoint)")
                    }
                } else if (newestTap[endpoint] ?? 0) < ack.changeVersion {
                    missing.append("tap for version \(ack.changeVersion) to \(endpoint)")
                }
            }
        }
        return missing
    }
}

/// Publishers that publish continuously and keep what was acknowledged (the publish returned:
/// a 2xx) and what was refused.
final class PublishLoad: Sendable {
    struct Ack: Sendable {
        let user: String
        let notificationId: String
        let changeVersion: Int64
        let visible: Bool
    }

    private struct State {
        var stopped = false
        var acknowledged: [Ack] = []
        var failures: [String] = []
        var slowest: Duration = .zero
    }

    private let state = Mutex(State())

    func stop() { state.withLock { $0.stopped = true } }
    var acknowledged: [Ack] { state.withLock { $0.acknowledged } }
    var failures: [String] { state.withLock { $0.failures } }
    var slowest: Duration { state.withLock { $0.slowest } }

    /// Publishes through `instance` until stopped (at most 60 s); every third one is visible.
    func publish(through instance: HubInstance, as publisher: Int, to users: [String]) async {
        let end = ContinuousClock.now + .seconds(60)
        var count = 0
        while !state.withLock({ $0.stopped }) && ContinuousClock.now < end {
            count += 1
            let user = users[(publisher * 5 + count) % users.count]
            let visible = count % 3 == 0
            let start = ContinuousClock.now
            do {
                let notification = try await instance.publish("p\(publisher)-\(count)", user: user, visible: visible)
                let ack = Ack(
                    user: user, notificationId: notification.id, changeVersion: notification.changeVersion,
                    visible: visible)
                state.withLock { $0.acknowledged.append(ack) }
            } catch let error as HubError {
                state.withLock { $0.failures.append("\(error.code)") }
            } catch {
                state.withLock { $0.failures.append("\(type(of: error))") }
            }
            let elapsed = ContinuousClock.now - start
            state.withLock { $0.slowest = max($0.slowest, elapsed) }
            try? await Task.sleep(for: .milliseconds(10))  // a publisher's pace, not a wait
        }
    }
}
