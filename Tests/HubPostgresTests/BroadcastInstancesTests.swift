import Foundation
import HubCore
import HubTesting
import Synchronization
import Testing

@testable import HubPostgres

/// A broadcast on two hub instances sharing one database: both lease its chunks.
@Suite(
    "Broadcasts on several instances",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct BroadcastInstancesTests {
    @Test("two instances share a broadcast's chunks; every user gets it once")
    func twoInstancesShareChunks() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        var dispatcher = HubInstance.dispatcher(idle: .milliseconds(100))
        // One send at a time, 20 ms each: an instance paces its chunks by its sends, so the other
        // one, looking every 50 ms, takes chunks meanwhile.
        dispatcher.laneConcurrency[.apns] = 1
        var broadcasts = BroadcastConfiguration()
        broadcasts.chunkSize = 4
        broadcasts.pollInterval = .milliseconds(50)
        let slow: @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in
            try? await Task.sleep(for: .milliseconds(20))  // a provider's round trip, not a wait
            return .accepted
        }
        let plugs = (a: StorePlug(), b: StorePlug())
        let a = try HubInstance(
            "a", schema: schema, dispatcher: dispatcher, apns: slow, broadcasts: broadcasts, plug: plugs.a)
        let b = try HubInstance(
            "b", schema: schema, dispatcher: dispatcher, apns: slow, broadcasts: broadcasts, plug: plugs.b)
        let users = (0..<80).map { "user-\(1000 + $0)" }
        try await MultiInstanceTests().withInstances(a, b) {
            for user in users { try await a.register("phone", user: user) }
            let created = try await a.hub.createBroadcast(
                app: HubInstance.app.id, audience: .users(count: users.count), users: users,
                draft: NotificationDraft(appNotificationId: "all-hands", payload: NotificationPayload(rawContent: "x")))
            #expect(
                await eventually(timeout: .seconds(60)) {
                    (try? await b.hub.broadcast(app: HubInstance.app.id, id: created.id))?.status == .done
                })
            let done = try await b.hub.broadcast(app: HubInstance.app.id, id: created.id)
            #expect(done.published == 80)
            #expect(done.audienceSize == 80)
            for user in users {
                let history = try await a.store.history(
                    FeedKey(appId: HubInstance.app.id, userId: user), filter: HistoryFilter())
                #expect(history.filter { $0.appNotificationId == "all-hands" }.count == 1, "\(user)")
            }
            let chunks = (a: plugs.a.calls("finishBroadcastChunk"), b: plugs.b.calls("finishBroadcastChunk"))
            #expect(chunks.a > 0 && chunks.b > 0, "both instances published chunks: \(chunks)")
            #expect(chunks.a + chunks.b == 20, "each chunk once: \(chunks)")
        }
    }

    @Test(
        "an instance dead after publishing a chunk: the other takes the chunk over; once in every feed, one chunk sent twice"
    )
    func deadInstanceChunkTakenOver() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let dispatcher = HubInstance.dispatcher(idle: .milliseconds(100))
        var broadcasts = BroadcastConfiguration()
        broadcasts.chunkSize = 4
        broadcasts.lease = .seconds(3)
        broadcasts.pollInterval = .milliseconds(50)
        let held = HeldChunkFinish()
        let a = try HubInstance("a", schema: schema, dispatcher: dispatcher, broadcasts: broadcasts, plug: held)
        let b = try HubInstance("b", schema: schema, dispatcher: dispatcher, broadcasts: broadcasts)
        let users = (0..<40).map { "user-\(1000 + $0)" }
        try await MultiInstanceTests().withInstances(a, b, runHubs: false) {
            for user in users { try await a.register("phone", user: user) }
            // A alone first: it leases the first chunk, publishes it and "dies" before recording it.
            let first = HubRunner([a.hub])
            let created = try await a.hub.createBroadcast(
                app: HubInstance.app.id, audience: .users(count: users.count), users: users,
                draft: NotificationDraft(appNotificationId: "all-hands", payload: NotificationPayload(rawContent: "x")))
            #expect(await eventually { held.isHolding }, "A published its first chunk")
            let second = HubRunner([b.hub])
            #expect(
                await eventually(timeout: .seconds(60)) {
                    (try? await b.hub.broadcast(app: HubInstance.app.id, id: created.id))?.status == .done
                }, "B finished the broadcast, A's chunk after its lease")
            var done = try await b.hub.broadcast(app: HubInstance.app.id, id: created.id)
            #expect(done.published == users.count, "every chunk counted once: \(done)")
            // A wakes up and records its chunk late: it counts nothing.
            held.release()
            #expect(await eventually { held.finishedLate })
            done = try await b.hub.broadcast(app: HubInstance.app.id, id: created.id)
            #expect(done.published == users.count, "a late finish counts nothing: \(done)")
            for user in users {
                let history = try await a.store.history(
                    FeedKey(appId: HubInstance.app.id, userId: user), filter: HistoryFilter())
                #expect(history.filter { $0.appNotificationId == "all-hands" }.count == 1, "\(user) has it once")
            }
            // Every user tapped; only the users of A's chunk twice (published again by B).
            #expect(
                await eventually {
                    Set((a.apns.deliveries + b.apns.deliveries).map(\.delivery.userId)) == Set(users)
                }, "every user got it")
            var sends: [String: Int] = [:]
            for delivery in a.apns.deliveries + b.apns.deliveries { sends[delivery.delivery.userId, default: 0] += 1 }
            let twice = sends.filter { $0.value > 1 }
            #expect(twice.count <= broadcasts.chunkSize, "at most one chunk sent twice: \(twice)")
            #expect(twice.values.allSatisfy { $0 == 2 }, "\(twice)")
            #expect(Set(twice.keys).isSubset(of: Set(a.apns.deliveries.map(\.delivery.userId))), "A's chunk")
            #expect(b.apns.deliveries.count >= users.count - broadcasts.chunkSize, "B published the rest")
            #expect(await first.stop(), "A shut down")
            #expect(await second.stop(), "B shut down")
        }
    }

    @Test("PostgreSQL publishes a broadcast chunk in one store call, not in parts of usersPerWrite")
    func chunkInOneCall() async throws {
        var broadcasts = BroadcastConfiguration()
        broadcasts.chunkSize = 250
        broadcasts.usersPerWrite = 100
        broadcasts.pollInterval = .milliseconds(50)
        let plug = StorePlug()
        let a = try HubInstance(
            "a", schema: PostgresTestDatabase.freshSchema(),
            dispatcher: HubInstance.dispatcher(idle: .milliseconds(100)),
            broadcasts: broadcasts, plug: plug)
        #expect(!a.hub.store.writesOneAtATime, "the deadline wrapper passes the store's answer on")
        let users = (0..<250).map { "user-\(1000 + $0)" }
        try await a.store.migrate()
        try await PostgresTestDatabase.running([a.store]) {
            let runner = HubRunner([a.hub])
            let outcome = await Result {
                for user in users { try await a.register("phone", user: user) }
                let created = try await a.hub.createBroadcast(
                    app: HubInstance.app.id, audience: .users(count: users.count), users: users,
                    draft: NotificationDraft(
                        appNotificationId: "all-hands", payload: NotificationPayload(rawContent: "x")))
                #expect(
                    await eventually(timeout: .seconds(60)) {
                        (try? await a.hub.broadcast(app: HubInstance.app.id, id: created.id))?.status == .done
                    })
                #expect(try await a.hub.broadcast(app: HubInstance.app.id, id: created.id).published == 250)
                #expect(plug.calls("finishBroadcastChunk") == 1)
                // SQLite would take 3 (parts of 100); PostgreSQL's batch locks only its users' feeds.
                #expect(plug.calls("publishBatch") == 1, "store calls for one chunk of 250")
                #expect(await eventually(timeout: .seconds(30)) { a.apns.deliveries.count == 250 })
            }
            #expect(await runner.stop(), "the hub did not shut down")
            try outcome.get()
        }
    }
}

/// Holds its instance's first ``Store/finishBroadcastChunk(_:published:failed:at:)`` until
/// released: the instance published a chunk and stopped before recording it, as a killed one does.
final class HeldChunkFinish: StoreInterceptor {
    private struct State {
        var holding: CheckedContinuation<Void, Never>?
        var held = false
        var released = false
        var finishedLate = false
    }

    private let state = Mutex(State())

    /// Whether the first finish is being held.
    var isHolding: Bool { state.withLock { $0.holding != nil } }
    /// Whether the held finish went through after ``release()``.
    var finishedLate: Bool { state.withLock { $0.finishedLate } }

    func release() {
        let holding = state.withLock { state in
            state.released = true
            defer { state.holding = nil }
            return state.holding
        }
        holding?.resume()
    }

    func intercept<T: Sendable>(_ name: String, _ call: @escaping @Sendable () async throws -> T) async throws -> T {
        let hold =
            name == "finishBroadcastChunk"
            && state.withLock { state in
                defer { state.held = true }
                return !state.held
            }
        guard hold else { return try await call() }
        await withCheckedContinuation { continuation in
            let go = state.withLock { state in
                if state.released { return true }
                state.holding = continuation
                return false
            }
            if go { continuation.resume() }
        }
        defer { state.withLock { $0.finishedLate = true } }
        return try await call()
    }
}
