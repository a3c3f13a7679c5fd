import HubCore
import HubPolling
import HubSQLite
import HubTesting
import Synchronization
import Testing

/// ``FeedSignals`` remembers the feeds with a waiter and, bounded, the recently changed ones
/// (two generations of `idleFeeds`): a broadcast to a million users who do not long-poll leaves
/// no entry per user behind, and what it forgets never costs a wake-up.
@Suite("feed wake-ups: bounded memory")
struct FeedSignalsMemoryTests {
    let key = FeedKey(appId: "a.contoso.com", userId: "alice")

    /// The outcomes a parked wait's callback was called with, in order.
    final class Outcomes: Sendable {
        let values = Mutex<[Bool]>([])
        func record(_ woken: Bool) { values.withLock { $0.append(woken) } }
        var all: [Bool] { values.withLock { $0 } }
    }

    /// Commits and announces a change of `count` other feeds, as a broadcast's publishes do.
    func changeOtherFeeds(_ signals: FeedSignals, count: Int, version: Int64 = 1) {
        for index in 0..<count {
            let other = FeedKey(appId: "a.contoso.com", userId: "user-\(index)")
            signals.committed(other, version: version)
            signals.announce(other, .everyone(except: nil))
        }
    }

    @Test("changes of feeds nobody waits on leave at most two generations behind; a waiting feed is kept")
    func bounded() {
        let signals = FeedSignals(clock: SystemClock(), idleFeeds: 100)
        let outcomes = Outcomes()
        _ = signals.park(key, endpoint: "phone", after: signals.ticket(), timeout: .seconds(300)) {
            outcomes.record($0)
        }
        changeOtherFeeds(signals, count: 20_000)
        #expect(signals.feedCount <= 2 * (100 + 2), "remembers \(signals.feedCount) feeds")
        #expect(outcomes.all.isEmpty, "the waiting feed was not woken by the others")
        signals.wake(key, .everyone(except: nil))
        #expect(outcomes.all == [true])
    }

    @Test("a wake-up of a feed forgotten between ticket and wait still counts, for every waiter")
    func forgottenWakeUp() {
        let signals = FeedSignals(clock: SystemClock(), idleFeeds: 10)
        let ticket = signals.ticket()
        signals.wake(key, .endpoint("phone"))
        changeOtherFeeds(signals, count: 100)
        let outcomes = Outcomes()
        _ = signals.park(key, endpoint: "phone", after: ticket, timeout: .seconds(300)) { outcomes.record($0) }
        _ = signals.park(key, endpoint: nil, after: ticket, timeout: .seconds(300)) { outcomes.record($0) }
        #expect(outcomes.all == [true, true], "woken before park returned")
        // A ticket taken after the feed was forgotten waits: what was forgotten is older.
        let later = signals.park(key, endpoint: "phone", after: signals.ticket(), timeout: .seconds(300)) {
            outcomes.record($0)
        }
        #expect(outcomes.all.count == 2 && signals.waiterCount == 1)
        #expect(signals.unpark(later))
    }

    @Test("a feed changed again after it was forgotten still counts its forgotten wake-ups")
    func recreatedFeed() {
        let signals = FeedSignals(clock: SystemClock(), idleFeeds: 10)
        let ticket = signals.ticket()
        signals.wake(key, .endpoint("phone"))
        changeOtherFeeds(signals, count: 100)
        signals.committed(key, version: 3)
        signals.announce(key, .everyone(except: "phone"))
        let outcomes = Outcomes()
        _ = signals.park(key, endpoint: "phone", after: ticket, timeout: .seconds(300)) { outcomes.record($0) }
        #expect(outcomes.all == [true], "the phone's own wake-up was forgotten, not lost")
    }

    @Test("a forgotten feed's newest version is unknown: the next long-poll reads first")
    func forgottenVersion() {
        let signals = FeedSignals(clock: SystemClock(), idleFeeds: 10)
        signals.committed(key, version: 7)
        #expect(signals.isCurrent(key, version: 7))
        changeOtherFeeds(signals, count: 100, version: 8)
        #expect(!signals.isCurrent(key, version: 7))
    }

    @Test("batch publishes to users nobody long-polls leave the waiting room bounded")
    func batchPublish() async throws {
        let store = try SQLiteStore.inMemory()
        let signals = FeedSignals(clock: SystemClock(), idleFeeds: 50)
        var configuration = HubConfiguration(apps: [TestHub.app], instanceID: "memory", storeTimeout: .seconds(30))
        configuration.dispatcher = PollingWakeTests.noDispatcher
        let hub = try Hub(
            configuration: configuration, store: store, transports: [PollingTransport(signals: signals)],
            signals: signals, logger: .init(label: "hub"))
        for batch in 0..<8 {
            let items = (0..<100).map { index in
                Hub.BatchItem(
                    userId: "user-\(batch)-\(index)",
                    draft: NotificationDraft(appNotificationId: "n-1", payload: NotificationPayload(rawContent: "{}")))
            }
            let outcomes = try await hub.publish(app: TestHub.app.id, batch: items)
            #expect(outcomes.allSatisfy { if case .success = $0 { true } else { false } })
        }
        #expect(signals.feedCount <= 2 * 50 + 100, "remembers \(signals.feedCount) feeds after 800 users")
    }
}
