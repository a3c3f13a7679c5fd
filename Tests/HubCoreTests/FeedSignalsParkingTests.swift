import HubCore
import HubPolling
import HubTesting
import Synchronization
import Testing

/// ``FeedSignals/park(_:endpoint:after:timeout:_:)``: waits without a task, by callback.
@Suite("feed wake-ups of parked requests")
struct FeedSignalsParkingTests {
    let key = FeedKey(appId: "a.contoso.com", userId: "alice")

    /// The outcomes a callback was called with, in order.
    final class Outcomes: Sendable {
        let values = Mutex<[Bool]>([])
        func record(_ woken: Bool) { values.withLock { $0.append(woken) } }
        var all: [Bool] { values.withLock { $0 } }
    }

    @Test("a wake-up calls the callback once with true; a later one does not call it again")
    func wake() {
        let signals = FeedSignals()
        let outcomes = Outcomes()
        _ = signals.park(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(30)) { outcomes.record($0) }
        #expect(signals.waiterCount == 1)
        #expect(outcomes.all.isEmpty)
        signals.wake(key)
        signals.wake(key)
        #expect(outcomes.all == [true])
        #expect(signals.waiterCount == 0)
    }

    @Test("a wake-up between ticket and park calls the callback before park returns")
    func wakeBeforePark() {
        let signals = FeedSignals()
        let outcomes = Outcomes()
        let ticket = signals.ticket()
        signals.wake(key)
        _ = signals.park(key, endpoint: nil, after: ticket, timeout: .seconds(30)) { outcomes.record($0) }
        #expect(outcomes.all == [true])
        #expect(signals.waiterCount == 0)
    }

    @Test("unpark releases the wait without calling the callback; the deadline calls it with false")
    func unparkAndTimeout() async {
        let signals = FeedSignals()
        let released = Outcomes()
        let parking = signals.park(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(30)) {
            released.record($0)
        }
        #expect(signals.unpark(parking))
        #expect(!signals.unpark(parking))
        signals.wake(key)
        #expect(released.all.isEmpty)
        #expect(signals.waiterCount == 0)

        let timedOut = Outcomes()
        _ = signals.park(key, endpoint: nil, after: signals.ticket(), timeout: .milliseconds(20)) {
            timedOut.record($0)
        }
        #expect(await eventually { timedOut.all == [false] })
        #expect(signals.waiterCount == 0)
    }

    @Test("shutDown calls every parked callback with false, and a later park's at once")
    func shutDown() {
        let signals = FeedSignals()
        let outcomes = Outcomes()
        _ = signals.park(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(30)) { outcomes.record($0) }
        _ = signals.park(key, endpoint: "phone", after: signals.ticket(), timeout: .seconds(30)) { outcomes.record($0) }
        signals.shutDown()
        #expect(outcomes.all == [false, false])
        _ = signals.park(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(30)) { outcomes.record($0) }
        #expect(outcomes.all == [false, false, false])
        #expect(signals.waiterCount == 0)
    }
}
