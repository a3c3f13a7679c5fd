import Foundation
import HubPolling
import HubSQLite
import HubTesting
import Synchronization
import Testing

@testable import HubCore

/// Polling endpoints are woken by the hub right after a commit, with no outbox rows and no
/// dispatcher involved (the dispatcher is off in these tests).
@Suite("waking polling endpoints")
struct PollingWakeTests {
    static var noDispatcher: DispatcherConfiguration {
        var configuration = TestHub.fastDispatcher
        configuration.enabled = false
        return configuration
    }

    /// A long-poll of `endpoint` from `version`, waiting up to 30 s.
    static func longPoll(
        _ test: TestHub, _ endpoint: String, user: String = "alice", after version: Int64 = 0
    )
        -> Task<(page: FeedPage, waited: Duration), any Error>
    {
        Task {
            let start = ContinuousClock.now
            let page = try await test.hub.longPoll(
                app: TestHub.app.id, user: user, after: version, wait: .seconds(30), endpoint: endpoint)
            return (page, ContinuousClock.now - start)
        }
    }

    @Test("a publish wakes every polling endpoint of the user at once and queues nothing for them")
    func publishWakesPollingEndpoints() async throws {
        let test = try TestHub(dispatcher: Self.noDispatcher)
        try await test.register("p1", platform: .android, transport: .polling)
        try await test.register("p2", platform: .windows, transport: .polling)
        try await test.register("p3", user: "bob", platform: .android, transport: .polling)
        let first = Self.longPoll(test, "p1")
        let second = Self.longPoll(test, "p2")
        let bobs = Self.longPoll(test, "p3", user: "bob")
        #expect(await eventually { test.hub.waitingRoom?.waiterCount == 3 })

        let published = try await test.publish("n-1")
        for poll in [first, second] {
            let (page, waited) = try await poll.value
            #expect(page.changes.map(\.id) == [published.id])
            #expect(waited < .seconds(10), "woken by the publish, not by the 30 s timeout")
        }
        #expect(test.hub.waitingRoom?.waiterCount == 1, "bob's endpoint still waits")
        bobs.cancel()
        #expect(try await test.hub.deliveryStatistics() == DeliveryStatistics(pending: 0, finished: [:]))
    }

    @Test("a state change wakes the user's other polling endpoints, not the one that made it")
    func stateChangeSkipsItsEndpoint() async throws {
        let test = try TestHub(dispatcher: Self.noDispatcher)
        try await test.register("p1", platform: .android, transport: .polling)
        try await test.register("p2", platform: .windows, transport: .polling)
        let published = try await test.publish("n-1")
        let maker = Self.longPoll(test, "p1", after: published.changeVersion)
        let other = Self.longPoll(test, "p2", after: published.changeVersion)
        #expect(await eventually { test.hub.waitingRoom?.waiterCount == 2 })

        let dismissed = try await test.hub.updateState(
            app: TestHub.app.id, user: "alice", id: published.id, readState: nil, userActionState: .dismissed,
            fromEndpoint: "p1")
        let (page, waited) = try await other.value
        #expect(page.changes.map(\.userActionState) == [.dismissed])
        #expect(waited < .seconds(10))
        // The endpoint that dismissed is not woken by its own change: it still waits. (Wake-ups
        // remove their waiters before `updateState` returns, so no wait is needed to see it.)
        #expect(test.hub.waitingRoom?.waiterCount == 1)
        maker.cancel()
        #expect(dismissed.changeVersion > published.changeVersion)
    }

    @Test(
        "a long-poll already at the newest version reads at the end of its wait: a change another writer made shows then"
    )
    func longPollReadsAtItsEnd() async throws {
        let test = try TestHub(dispatcher: Self.noDispatcher)
        try await test.register("p1", platform: .android, transport: .polling)
        let published = try await test.publish("n-1")
        #expect(
            test.hub.waitingRoom!.isCurrent(
                FeedKey(appId: TestHub.app.id, userId: "alice"), version: published.changeVersion))
        let poll = Task {
            try await test.hub.longPoll(
                app: TestHub.app.id, user: "alice", after: published.changeVersion, wait: .milliseconds(500),
                endpoint: "p1")
        }
        #expect(await eventually { test.hub.waitingRoom?.waiterCount == 1 })
        // Another process on the same database: it commits, but cannot wake this one's waiters.
        let draft = NotificationDraft(
            appNotificationId: "n-2", payload: NotificationPayload(visualContent: VisualContent(title: "n-2")))
        let written = try await test.store.publish(
            PublishRequest(
                key: FeedKey(appId: TestHub.app.id, userId: "alice"), draft: draft, newId: "elsewhere",
                expirationDateTime: Date().addingTimeInterval(3600),
                deliveryMode: .shoulderTap, now: Date())
        ).notification
        let page = try await poll.value
        #expect(page.changes.map(\.id) == [written.id])
        #expect(page.version == written.changeVersion)
        // Its own publishes it knows: a long-poll from the newest version waits without a read.
        let newer = try await test.publish("n-3")
        #expect(
            test.hub.waitingRoom!.isCurrent(
                FeedKey(appId: TestHub.app.id, userId: "alice"), version: newer.changeVersion))
        #expect(
            !test.hub.waitingRoom!.isCurrent(
                FeedKey(appId: TestHub.app.id, userId: "alice"), version: written.changeVersion)
        )
    }

    /// Holds every `touchEndpoint` call until opened, and counts them.
    final class SyncTimeGate: StoreInterceptor {
        let calls = Atomic<Int>(0)
        let gate = Gate()

        func intercept<T: Sendable>(_ name: String, _ call: @escaping @Sendable () async throws -> T) async throws -> T
        {
            if name == "touchEndpoint" {
                calls.add(1, ordering: .relaxed)
                await gate.pass()
            }
            return try await call()
        }
    }

    /// What a long-poll answered, once it did.
    final class Answer: Sendable {
        let page = Mutex<FeedPage?>(nil)
    }

    @Test("a woken long-poll of a polling endpoint answers without waiting for its sync time to be written")
    func syncTimeDoesNotHoldTheAnswer() async throws {
        let gate = SyncTimeGate()
        let store = try SQLiteStore.inMemory()
        let signals = FeedSignals()
        var configuration = HubConfiguration(apps: [TestHub.app], instanceID: "sync-time", storeTimeout: .seconds(30))
        configuration.dispatcher = Self.noDispatcher
        let hub = try Hub(
            configuration: configuration, store: InterceptedStore(store, gate),
            transports: [PollingTransport(signals: signals)], signals: signals, logger: .init(label: "hub"))
        _ = try await hub.registerEndpoint(
            app: TestHub.app.id, user: "alice", id: "tablet",
            EndpointRegistration(platform: .android, appId: TestHub.app.platforms[.android]![0], transport: .polling))
        let answer = Answer()
        let poll = Task {
            let page = try await hub.longPoll(
                app: TestHub.app.id, user: "alice", after: 0, wait: .seconds(30), endpoint: "tablet")
            answer.page.withLock { $0 = page }
        }
        #expect(await eventually { hub.waitingRoom?.waiterCount == 1 })
        let (published, _) = try await hub.publish(
            app: TestHub.app.id, user: "alice",
            NotificationDraft(appNotificationId: "n-1", payload: NotificationPayload(rawContent: "{}")))
        // Answered while the write of the endpoint's sync time is held.
        #expect(await eventually { answer.page.withLock { $0 } != nil })
        #expect(answer.page.withLock { $0 }?.changes.map(\.id) == [published.id])
        #expect(await eventually { gate.calls.load(ordering: .relaxed) == 1 }, "the sync time is written")
        gate.gate.open()
        #expect(
            await eventually {
                (try? await hub.endpoint(app: TestHub.app.id, user: "alice", id: "tablet"))?.lastSyncAt != nil
            })
        poll.cancel()
    }
}
